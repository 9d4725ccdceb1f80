// One process of the chat rows (bench/chat/chat-bench.ts), chosen by argv; one JSON object per stdout line.
//   direct-first <baseUrl> <n> <warmup>       n short answers read straight from the server: ms after its first byte
//   astra-first <home> <n> <warmup>           the same through a chat session: ms to the first message.delta
//   direct-tool <baseUrl> <n>                 n tool round trips without Astra: the call read, `sh -c true` run, the next request sent
//   astra-tool <home> <n>                     n chat turns whose model calls shell `true` (auto-approved), then answers
//   direct-stream <baseUrl> <tokens> <n>      n long answers read straight from the server, one per stdin line `go K`
//                                             (K: the long answers before it in the observers' session, so the
//                                             request is the one the daemon sends): each one's end, tokens seen
//   engine-stream <baseUrl> <tokens> <n>      the same as direct-stream, read with the chat engine's own reader
//                                             (streamChatCompletion: Astra's HTTP client and SSE scan, no daemon)
//   astra-observe <home> <sessionId> <seq> <n>  an observer of a chat session: per answer (n of them), its end and tokens seen
// Both kinds of reader parse the SSE stream (the direct one as the engine must), so the difference is Astra.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { AstraClient } from '../../client/index.js';
import type { ChatMessage } from '../../engines/chat/messages.js';
import { chatRequestBody, streamChatCompletion } from '../../engines/chat/model-stream.js';
import type { SessionEvent } from '../../protocol/index.js';
import { tell, wallMs } from '../lib.js';
import { AnswerReport, longAnswerRequest } from './conversation.js';
import { TOKEN } from './model-gen.js';

/** A short question as a bare request; a conversation as the chat engine sends it (its system prompt, tools, options). */
const request = (baseUrl: string, ask: string | ChatMessage[]) =>
  fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(typeof ask === 'string' ? { model: 'bench', stream: true, messages: [{ role: 'user', content: ask }] } : chatRequestBody('bench', ask)),
  });


/** Reads one streamed answer; `onContent(chars)` once per chunk read that carried content. */
async function readSse(baseUrl: string, ask: string | ChatMessage[], onContent: (chars: number) => void): Promise<void> {
  const res = await request(baseUrl, ask);
  if (!res.ok || !res.body) throw new Error(`the bench model server answered ${res.status}`);
  const decoder = new TextDecoder();
  let buf = '';
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let chars = 0;
    for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const content = (JSON.parse(ev.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
      if (content) chars += content.length;
    }
    if (chars) onContent(chars);
  }
}

async function firstBytes(baseUrl: string): Promise<number[]> {
  return (await (await fetch(baseUrl.replace(/\/v1$/, '/__firstbytes'))).json()) as number[];
}

/** This process's CPU time so far (user + system), ms. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const connect = (home: string, name: string) => AstraClient.connect({ clientName: name, home, autoStart: false, reconnect: false });

async function main([role, ...args]: string[]): Promise<void> {
  switch (role) {
    case 'direct-first': {
      const [baseUrl, n, warmup] = [args[0]!, Number(args[1]), Number(args[2])];
      const seen: number[] = [];
      for (let i = 0; i < warmup + n; i++) {
        let first = 0;
        await readSse(baseUrl, 'tokens=3', () => (first ||= wallMs()));
        seen.push(first);
      }
      const fb = await firstBytes(baseUrl);
      tell({ ms: seen.slice(warmup).map((t, i) => t - fb[warmup + i]!) });
      return;
    }
    case 'astra-first': {
      const [home, n, warmup] = [args[0]!, Number(args[1]), Number(args[2])];
      const client = await connect(home, 'bench-chat-first');
      const { session } = await client.session.create({ title: 'bench chat first token', engine: 'chat', approvalPolicy: 'auto' });
      await client.acquireController(session.id);
      const baseUrl = String(process.env.ASTRA_CHAT_BASE_URL);
      await firstBytes(baseUrl);
      let onEvent: (ev: SessionEvent) => void = () => {};
      const sub = await client.subscribe(session.id, { sinceSeq: session.headSeq, onEvent: (ev) => onEvent(ev) });
      const seen: number[] = [];
      for (let i = 0; i < warmup + n; i++) {
        let first = 0;
        const done = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`a chat turn did not complete within 30 s; see the daemon's log under ${home}/logs`)), 30_000);
          onEvent = (ev) => {
            if (ev.type === 'message.delta') first ||= wallMs();
            else if (ev.type === 'turn.completed') {
              clearTimeout(timer);
              const status = (ev.data as { status?: string }).status;
              if (status !== 'completed') reject(new Error(`a chat turn ended ${status}: ${JSON.stringify(ev.data)}`));
              else resolve();
            }
          };
        });
        await client.turn.start({ sessionId: session.id, input: { text: 'tokens=3' } });
        await done;
        seen.push(first);
      }
      const fb = await firstBytes(baseUrl);
      tell({ ms: seen.slice(warmup).map((t, i) => t - fb[warmup + i]!) });
      await sub.close();
      await client.close();
      return;
    }
    case 'direct-tool': {
      // The tool round trip without Astra: read the answer with its tool call, run the command as the
      // engine would (/bin/sh -c, its output read), send the next request; n times.
      const [baseUrl, n] = [args[0]!, Number(args[1])];
      for (let i = 0; i < n; i++) {
        await readSse(baseUrl, 'tool', () => {});
        await new Promise<void>((resolve, reject) => {
          const child = spawn('/bin/sh', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
          child.stdout.resume();
          child.stderr.resume();
          child.once('error', reject);
          child.once('close', () => resolve());
        });
        await readSse(baseUrl, 'tokens=3', () => {});
      }
      tell({ done: true });
      return;
    }
    case 'astra-tool': {
      const [home, n] = [args[0]!, Number(args[1])];
      const client = await connect(home, 'bench-chat-tool');
      const { session } = await client.session.create({ title: 'bench chat tool round trip', engine: 'chat', approvalPolicy: 'auto' });
      await client.acquireController(session.id);
      let onEvent: (ev: SessionEvent) => void = () => {};
      const sub = await client.subscribe(session.id, { sinceSeq: session.headSeq, onEvent: (ev) => onEvent(ev) });
      for (let i = 0; i < n; i++) {
        const done = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`a chat turn did not complete within 30 s; see the daemon's log under ${home}/logs`)), 30_000);
          onEvent = (ev) => {
            if (ev.type !== 'turn.completed') return;
            clearTimeout(timer);
            const status = (ev.data as { status?: string }).status;
            if (status !== 'completed') reject(new Error(`a chat turn ended ${status}: ${JSON.stringify(ev.data)}`));
            else resolve();
          };
        });
        await client.turn.start({ sessionId: session.id, input: { text: 'tool' } });
        await done;
      }
      tell({ done: true });
      await sub.close();
      await client.close();
      return;
    }
    case 'direct-stream':
    case 'engine-stream': {
      // One long answer per line on stdin (the bench sends one per round), in one process, so the
      // reader is as warm after the first round as the daemon's observers are. engine-stream reads
      // with the engine's own reader (its HTTP client and SSE scan): the reference without the
      // daemon's fan-out.
      const [baseUrl, tokens, rounds] = [args[0]!, Number(args[1]), Number(args[2] ?? 1)];
      const read =
        role === 'direct-stream'
          ? (messages: ChatMessage[], onContent: (chars: number) => void) => readSse(baseUrl, messages, onContent)
          : async (messages: ChatMessage[], onContent: (chars: number) => void) => {
              const signal = new AbortController().signal;
              const stream = streamChatCompletion({ baseUrl, model: 'bench', messages, signal, stallMs: 30_000, maxRetryAfterMs: 0, maxAttempts: 1 });
              for await (const part of stream) if (part.type === 'text') onContent(part.text.length);
            };
      const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
      tell({ ready: true });
      for (let r = 0; r < rounds; r++) {
        const line = await lines.next();
        if (line.done) return;
        const messages = longAnswerRequest(Number(/^go (\d+)$/.exec(line.value)?.[1] ?? 0), tokens);
        let chars = 0;
        const cpu0 = cpuMs();
        await read(messages, (c) => (chars += c));
        tell({ endMs: wallMs(), tokens: chars / TOKEN.length, cpuMs: cpuMs() - cpu0 });
      }
      return;
    }
    case 'astra-observe': {
      const [home, sessionId, seq, rounds] = [args[0]!, args[1]!, Number(args[2]), Number(args[3] ?? 1)];
      const client = await connect(home, 'bench-chat-observer');
      let chars = 0;
      let deltas = 0;
      let answers = 0;
      let resolveDone!: () => void;
      const done = new Promise<void>((r) => (resolveDone = r));
      // The CPU is read when the report goes: per answer, the bench takes differences.
      const report = new AnswerReport<{ endMs: number; tokens: number; deltas: number }>((end) => {
        tell({ ...end, cpuMs: cpuMs() });
        if (++answers === rounds) resolveDone();
      });
      const sub = await client.subscribe(sessionId, {
        sinceSeq: seq,
        onEvent: (ev) => {
          if (ev.type === 'message.delta') {
            chars += (ev.data as { text: string }).text.length;
            deltas++;
          } else if (ev.type === 'turn.started') report.start();
          else if (ev.type === 'message.completed') {
            report.end({ endMs: wallMs(), tokens: chars / TOKEN.length, deltas });
            chars = 0;
            deltas = 0;
          }
        },
      });
      tell({ ready: true });
      await done;
      await sub.close();
      await client.close();
      return;
    }
    default:
      throw new Error(`unknown chat bench role "${role}"`);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e: unknown) => {
    tell({ error: e instanceof Error ? e.message : String(e) });
    process.exit(1);
  },
);
