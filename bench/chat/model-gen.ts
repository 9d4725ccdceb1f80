// A fake OpenAI-compatible model server for the chat rows of the benchmark, run as its own process:
// it generates its answers instead of replaying fixtures (test/fixtures/model-server cannot express a
// 50,000-token stream). The last user message says what to answer: `tokens=N` streams N tokens, one
// per SSE chunk (one write each, awaiting drain), then finish_reason stop, usage and [DONE]. It records
// the wall time of each answer's first body byte (the first token's write), so a reader in another
// process can measure from it: GET /__firstbytes returns them in request order and clears them;
// GET /__lastbytes does the same for the times each answer's last byte was handed to the socket,
// GET /__requests for the times each request's body had arrived, GET /__bodies for the byte length
// of each model request's body (so a bench can check its readers sent the same request). A last user
// message with the word
// `tool` (and no tool result after it) is answered with a call of the shell tool running `true`.
//   node dist/bench/chat/model-gen.js   → prints {"port","baseUrl","pid"} as one line
import * as http from 'node:http';
import { wallMs } from '../lib.js';

export const TOKEN = 'tok '; // 4 characters per token: a reader counts tokens by length
const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1767225600, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

function tokensAsked(body: unknown): number {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const m = /tokens=(\d+)/.exec(String(last?.content ?? ''));
  return m ? Number(m[1]) : 3;
}

/** `tool` in the last user message, and no tool result after it yet: answer with a shell call of `true`. */
function wantsTool(body: unknown): boolean {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = messages[messages.length - 1];
  return last?.role === 'user' && /\btool\b/.test(String(last.content ?? ''));
}

/** A tool call in one chunk (as Ollama sends one), then finish_reason tool_calls and [DONE]. */
function toolCall(res: http.ServerResponse, n: number, lastBytes: number[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const call = { index: 0, id: `call_bench_${n}`, type: 'function', function: { name: 'shell', arguments: '{"command":"true"}' } };
  res.write(chunk({ role: 'assistant', content: null, tool_calls: [call] }));
  res.write(chunk({}, 'tool_calls'));
  res.end('data: [DONE]\n\n');
  lastBytes.push(wallMs());
}

async function answer(res: http.ServerResponse, tokens: number, firstBytes: number[], lastBytes: number[]): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  for (let i = 0; i < tokens; i++) {
    if (res.destroyed) return;
    const text = chunk(i === 0 ? { role: 'assistant', content: TOKEN } : { content: TOKEN });
    if (i === 0) firstBytes.push(wallMs());
    if (!res.write(text)) await new Promise((r) => res.once('drain', r));
  }
  res.write(chunk({}, 'stop'));
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1767225600, model: 'bench', choices: [], usage: { prompt_tokens: 10, completion_tokens: tokens, total_tokens: tokens + 10 } })}\n\n`);
  res.end('data: [DONE]\n\n');
  lastBytes.push(wallMs());
}

export function serve(): Promise<http.Server> {
  // What a bench reads back (GET /__<name>: the list, emptied): each answer's first and last body
  // byte, when each model request's body had arrived (for the tool round trip: the request after a
  // tool call), and each model request's body length.
  const records = { firstbytes: [] as number[], lastbytes: [] as number[], requests: [] as number[], bodies: [] as number[] };
  const { firstbytes: firstBytes, lastbytes: lastBytes, requests: requestTimes, bodies: bodyBytes } = records;
  let toolCalls = 0;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const name = /^\/__(\w+)$/.exec(req.url ?? '')?.[1];
      if (name !== undefined && Object.hasOwn(records, name)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(records[name as keyof typeof records].splice(0)));
        return;
      }
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      let body: unknown;
      const bytes = Buffer.concat(parts);
      bodyBytes.push(bytes.length);
      try {
        body = JSON.parse(bytes.toString('utf8'));
      } catch {
        body = undefined;
      }
      requestTimes.push(wallMs());
      if (wantsTool(body)) toolCall(res, ++toolCalls, lastBytes);
      else void answer(res, tokensAsked(body), firstBytes, lastBytes);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

if (process.argv[1]?.endsWith('model-gen.js')) {
  const server = await serve();
  const port = (server.address() as import('node:net').AddressInfo).port;
  process.stdout.write(JSON.stringify({ port, baseUrl: `http://127.0.0.1:${port}/v1`, pid: process.pid }) + '\n');
  process.on('SIGTERM', () => process.exit(0));
}
