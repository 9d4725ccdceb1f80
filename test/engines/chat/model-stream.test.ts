// streamChatCompletion against the real fake model server on loopback: each behaviour, quirk and
// fault of issue 16 has its fixture.
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../fixtures/model-server/server.mjs';
import { ModelCancelledError, streamChatCompletion, type ModelRequest, type ModelStreamPart } from '../../../engines/chat/index.js';
import { collect, fault } from './stream-helpers.js';

const servers: ModelServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function server(script: string[]): Promise<ModelServer> {
  const s = await startModelServer({ script });
  servers.push(s);
  return s;
}

function request(baseUrl: string, over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    baseUrl,
    model: 'llama3.1',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ],
    signal: new AbortController().signal,
    stallMs: 5_000,
    maxRetryAfterMs: 5_000,
    maxAttempts: 3,
    ...over,
  };
}

const texts = (parts: ModelStreamPart[]) => parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
const finish = (parts: ModelStreamPart[]) => parts.find((p): p is Extract<ModelStreamPart, { type: 'finish' }> => p.type === 'finish')!;

describe('one streaming Chat Completions request', () => {
  it('posts the model, the messages, the shell tool, stream and include_usage, with the key only in the Authorization header', async () => {
    const s = await server(['plain-answer']);
    await collect(request(s.baseUrl, { apiKey: 'sk-test-not-a-real-key' }));
    const r = s.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/v1/chat/completions');
    expect(r.headers.authorization).toBe('Bearer sk-test-not-a-real-key');
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body).toMatchObject({ model: 'llama3.1', stream: true, stream_options: { include_usage: true } });
    expect(r.body.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]);
    expect(r.body.tools).toHaveLength(1);
    expect(r.body.tools[0].function).toMatchObject({ name: 'shell', parameters: { type: 'object', required: ['command'] } });
    expect(Object.keys(r.body.tools[0].function.parameters.properties)).toEqual(['command', 'cwd']);
    expect(JSON.stringify(r.body)).not.toContain('sk-test');
  });

  it('sends no Authorization header when there is no key', async () => {
    const s = await server(['plain-answer']);
    await collect(request(s.baseUrl));
    expect(s.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('yields the text deltas in order, then the usage from the chunk with empty choices, then finish_reason stop', async () => {
    const s = await server(['plain-answer']);
    const parts = await collect(request(s.baseUrl));
    // Three chunks 15 ms apart: one part per read, so how many parts depends on how the reads fell.
    expect(texts(parts).join('')).toBe('Hello from the model.');
    expect(texts(parts).every((t) => t !== '')).toBe(true);
    expect(parts.at(-2)).toEqual({ type: 'usage', promptTokens: 21, completionTokens: 4 });
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', toolCalls: [] });
  });

  it('ignores SSE comments and keep-alives and accepts an explicit `event: message`', async () => {
    const s = await server(['keep-alives']);
    const parts = await collect(request(s.baseUrl));
    expect(texts(parts).join('')).toBe('Still here.');
    expect(finish(parts).finishReason).toBe('stop');
  });

  it('takes a stream that ends after its finish_reason without [DONE] as a finished answer', async () => {
    const s = await server(['no-done']);
    const parts = await collect(request(s.baseUrl));
    expect(texts(parts).join('')).toBe('No DONE line.');
    expect(finish(parts).finishReason).toBe('stop');
  });

  it('accumulates a tool call whose argument fragments after the first carry no id', async () => {
    const s = await server(['tool-call']);
    const parts = await collect(request(s.baseUrl));
    expect(finish(parts)).toEqual({
      type: 'finish',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_abc123', type: 'function', function: { name: 'shell', arguments: '{"command": "ls -1", "cwd": "."}' } }],
    });
    expect(parts.find((p) => p.type === 'usage')).toEqual({ type: 'usage', promptTokens: 120, completionTokens: 18 });
  });

  it('keeps several tool calls in one answer apart by index, with the text before them', async () => {
    const s = await server(['several-tool-calls']);
    const parts = await collect(request(s.baseUrl));
    expect(texts(parts).join('')).toBe('Running two commands.');
    expect(finish(parts).toolCalls.map((c) => [c.id, JSON.parse(c.function.arguments).command])).toEqual([
      ['call_one', 'echo one'],
      ['call_two', 'echo two >&2; exit 3'],
    ]);
  });

  it('takes a whole tool call in one chunk (Ollama) even when finish_reason says stop', async () => {
    const s = await server(['ollama-tool-call']);
    const parts = await collect(request(s.baseUrl));
    const f = finish(parts);
    expect(f.toolCalls).toEqual([{ id: 'call_x7k2', type: 'function', function: { name: 'shell', arguments: '{"command": "pwd"}' } }]);
    expect(f.finishReason).toBe('stop');
  });

  it('says where nothing listens and how to start one when the connection is refused', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const e = await fault(request(`http://127.0.0.1:${port}/v1`));
    expect(e.code).toBe('model_unreachable');
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(`is a model server listening at http://127.0.0.1:${port}/v1? start \`ollama serve\`, or point the daemon at your server: \`ASTRA_CHAT_BASE_URL=<url> astra daemon restart\` (connection refused)`);
  });

  it('names the host that does not resolve', async () => {
    const e = await fault(request('http://no-such-model-host.invalid/v1'));
    expect(e.code).toBe('model_dns');
    expect(e.message).toContain('no-such-model-host.invalid does not resolve');
    expect(e.message).toContain('ASTRA_CHAT_BASE_URL');
  });

  it('fails a 401 as model_auth saying which variable to set, with the key the server echoed redacted', async () => {
    const s = await server(['unauthorized']);
    const e = await fault(request(s.baseUrl, { apiKey: 'sk-test-SECRET-0123456789' }));
    expect(e.code).toBe('model_auth');
    expect(e.retryable).toBe(false);
    expect(e.message).toContain('HTTP 401');
    expect(e.message).toContain('Incorrect API key provided: [redacted]');
    expect(e.message).toContain('ASTRA_CHAT_API_KEY');
    expect(e.message).not.toContain('SECRET');
  });

  it('fails a 403 as model_auth too, and says a key is wanted when none was sent', async () => {
    const s = await server(['forbidden']);
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_auth');
    expect(e.message).toContain('wants an API key (HTTP 403');
  });

  it('fails a 404 as model_not_found naming the model and how to get it', async () => {
    const s = await server(['model-not-found']);
    const e = await fault(request(s.baseUrl, { model: 'qwen9:404b' }));
    expect(e.code).toBe('model_not_found');
    expect(e.message).toContain('has no model "qwen9:404b" (HTTP 404: model "qwen9:404b" not found, try pulling it first)');
    expect(e.message).toContain('ollama pull qwen9:404b');
  });

  it('waits out a 429 whose Retry-After fits the bound, then streams the answer', async () => {
    const s = await server(['rate-limited', 'plain-answer']);
    const t0 = Date.now();
    const parts = await collect(request(s.baseUrl));
    expect(texts(parts).join('')).toBe('Hello from the model.');
    expect(s.requests).toHaveLength(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
  });

  it('fails a 429 at once when its Retry-After is beyond the bound, retryable, saying how long', async () => {
    const s = await server(['rate-limited-long', 'plain-answer']);
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_rate_limited');
    expect(e.retryable).toBe(true);
    expect(e.message).toContain('wait 3600 s');
    expect(s.requests).toHaveLength(1);
  });

  it('gives up on 429s after maxAttempts requests', async () => {
    const s = await server(['rate-limited', 'rate-limited', 'plain-answer']);
    const e = await fault(request(s.baseUrl, { maxAttempts: 2 }));
    expect(e.code).toBe('model_rate_limited');
    expect(e.message).toContain('after 2 attempts');
    expect(s.requests).toHaveLength(2);
  });

  it('fails a 5xx as a retryable model_server_error quoting the server', async () => {
    const s = await server(['server-error']);
    const e = await fault(request(s.baseUrl));
    expect(e).toMatchObject({ code: 'model_server_error', retryable: true });
    expect(e.message).toContain('HTTP 500: llama runner process has terminated: signal: killed');
    const s2 = await server(['bad-gateway']);
    expect((await fault(request(s2.baseUrl))).message).toContain('HTTP 502: upstream connect error');
  });

  it('fails an error object mid-stream as model_stream_error with the server\'s words', async () => {
    const s = await server(['error-mid-stream']);
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_stream_error');
    expect(e.message).toContain('model runner has unexpectedly stopped');
  });

  it('yields the text of one read as one part, and text read in the same read as a fault still comes first', async () => {
    const s = await server(['one-chunk-answer', 'error-same-read']);
    const parts = await collect(request(s.baseUrl));
    // Several content chunks in one write: one text part, not one per chunk.
    expect(texts(parts)).toEqual(['All in one chunk.']);
    const seen: string[] = [];
    const run = (async () => {
      for await (const p of streamChatCompletion(request(s.baseUrl))) if (p.type === 'text') seen.push(p.text);
    })();
    await expect(run).rejects.toMatchObject({ code: 'model_stream_error' });
    expect(seen).toEqual(['Let me check']);
  });

  it('reads chunks of one shape without a parse and every other chunk with one: the text is exactly what JSON.parse says', async () => {
    const s = await server(['same-shape', 'error-event-same-shape', 'bom-start']);
    const parts = await collect(request(s.baseUrl));
    // The escaped one, the duplicate key (the last wins) and the finish in the shape's text all parsed.
    expect(texts(parts).join('')).toBe('One two three "quoted"\n four six été ✓ seven eight');
    expect(finish(parts).finishReason).toBe('stop');
    // An `event: error` is an error whatever its data looks like.
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_stream_error');
    // A byte order mark before the first field is dropped (as TextDecoder and the SSE standard do).
    expect(texts(await collect(request(s.baseUrl))).join('')).toBe('Hi');
  });

  it('fails a data line that is not JSON as model_bad_response', async () => {
    const s = await server(['malformed-json']);
    const e = await fault(request(s.baseUrl));
    expect(e).toMatchObject({ code: 'model_bad_response', retryable: false });
    expect(e.message).toContain('not JSON');
  });

  it('fails a chunk that is JSON but not an object as model_bad_response', async () => {
    const s = await server(['json-null']);
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_bad_response');
    expect(e.message).toContain('not a JSON object ("null")');
  });

  it('fails an event that never ends once it passes the bound, instead of buffering it', async () => {
    const s = await server(['endless-line']);
    const e = await fault(request(s.baseUrl, { maxAnswerChars: 10 }));
    expect(e.code).toBe('model_bad_response');
    expect(e.message).toContain('an event of more than 4116 characters');
  });

  it('fails a JSON answer that does not stream as model_bad_response', async () => {
    const s = await server(['not-sse']);
    const e = await fault(request(s.baseUrl));
    expect(e.code).toBe('model_bad_response');
    expect(e.message).toContain('application/json, not an event stream');
  });

  it('fails a stream that ends without a finish_reason as model_incomplete, [DONE] or not', async () => {
    const s = await server(['no-finish-reason', 'connection-cut']);
    const e1 = await fault(request(s.baseUrl));
    expect(e1).toMatchObject({ code: 'model_incomplete', retryable: true });
    expect(e1.message).toContain('without a finish_reason');
    const e2 = await fault(request(s.baseUrl));
    expect(e2.code).toBe('model_incomplete');
  });

  it('fails a stream that stalls longer than the bound, and closes the connection', async () => {
    const s = await server(['stall', 'stall-silent']);
    // It ends (the test's own timeout is the bound on how long): typed, naming the bound.
    const e = await fault(request(s.baseUrl, { stallMs: 300 }));
    expect(e).toMatchObject({ code: 'model_stalled', retryable: true });
    expect(e.message).toContain('sent nothing for 300 ms');
    await s.waitFor((r) => r[0]!.closedByClient, 'the server to see the stalled stream closed');
    expect((await fault(request(s.baseUrl, { stallMs: 300 }))).code).toBe('model_stalled');
  });

  it('fails an answer longer than the bound as model_answer_too_large, text and tool-call arguments alike', async () => {
    const s = await server(['plain-answer', 'tool-call']);
    const e = await fault(request(s.baseUrl, { maxAnswerChars: 10 }));
    expect(e).toMatchObject({ code: 'model_answer_too_large', retryable: false });
    expect(e.message).toContain('passed 10 characters');
    expect((await fault(request(s.baseUrl, { maxAnswerChars: 20 }))).code).toBe('model_answer_too_large');
    await s.waitFor((r) => r.length === 2 && r.every((q) => q.closedByClient || q.finished), 'both streams to end');
  });

  it('stops at once on abort, throws ModelCancelledError (never a finished answer), and the server sees the close', async () => {
    const s = await server(['held-answer']);
    const abort = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const p of streamChatCompletion(request(s.baseUrl, { signal: abort.signal }))) {
        if (p.type === 'text') seen.push(p.text);
        if (seen.join('') === 'Partial answer') abort.abort();
      }
    })();
    await expect(run).rejects.toBeInstanceOf(ModelCancelledError);
    expect(seen.join('')).toBe('Partial answer');
    await s.waitFor((r) => r[0]!.closedByClient, 'the server to see the connection close');
  });

  it('cancels a wait for Retry-After at once', async () => {
    const s = await server(['rate-limited', 'plain-answer']);
    const abort = new AbortController();
    const run = collect(request(s.baseUrl, { signal: abort.signal }));
    await s.waitFor((r) => r.length === 1, 'the first request');
    abort.abort();
    await expect(run).rejects.toBeInstanceOf(ModelCancelledError);
    expect(s.requests).toHaveLength(1);
  });
});
