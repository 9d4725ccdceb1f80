// The chat engine's turn loop against the real fake model server on loopback, with an in-memory
// context that records events, answers approvals and runs tool commands for real.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../fixtures/model-server/server.mjs';
import { INTERRUPTED_RESULT_OUTPUT, createChatEngine, type ChatSessionOptions } from '../../../engines/chat/index.js';
import { isAlive } from '../../runtime/helpers.js';
import { chatSession, until, type SessionOptions } from './context.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(script: string[], over: Partial<SessionOptions> & { maxSteps?: number } = {}) {
  const s: ModelServer = await startModelServer({ script });
  cleanups.push(() => s.close());
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'astra-chat-'));
  cleanups.push(() => fs.rmSync(cwd, { recursive: true, force: true }));
  fs.writeFileSync(path.join(cwd, 'a.txt'), 'a');
  fs.writeFileSync(path.join(cwd, 'b.txt'), 'b');
  const options: ChatSessionOptions = { model: 'llama3.1', baseUrl: s.baseUrl, maxSteps: over.maxSteps ?? 25, systemPrompt: 'You are a test.' };
  const session = chatSession({ options, cwd, ...over });
  cleanups.push(() => session.cleanup());
  return { server: s, session, cwd };
}

const types = (events: { type: string }[]) => events.filter((e) => !e.type.startsWith('command.output')).map((e) => e.type);

describe('the chat engine', () => {
  it('streams a plain answer as message.delta events, ends it with message.completed and reports usage', async () => {
    const { session } = await setup(['plain-answer']);
    expect(await session.turn('hi')).toEqual({ status: 'completed' });
    // Three chunks 15 ms apart: how many deltas they make depends on how the reads fell on this
    // machine (delta-pacer.test.ts checks the pacing on a fake clock); the text is whole, in order.
    expect(session.of('message.delta').map((e) => e.data.text).join('')).toBe('Hello from the model.');
    expect(session.of('message.delta').every((e) => e.data.text !== '')).toBe(true);
    expect(session.of('message.completed').map((e) => e.data)).toEqual([{ turnId: 'turn-1', text: 'Hello from the model.', finishReason: 'stop' }]);
    expect(session.of('usage').map((e) => e.data)).toEqual([{ turnId: 'turn-1', promptTokens: 21, completionTokens: 4 }]);
  });

  it('coalesces what arrives in one tick into one message.delta', async () => {
    const { session } = await setup(['one-chunk-answer']);
    await session.turn('hi');
    expect(session.of('message.delta').map((e) => e.data.text)).toEqual(['All in one chunk.']);
  });

  it('streams a fast answer through the delta interval whole: in order, nothing empty, nothing after message.completed', async () => {
    // How the 40 chunks 2 ms apart fall into deltas depends on this machine's reads and timers:
    // delta-pacer.test.ts checks the interval itself on a fake clock.
    const { session } = await setup(['fast-stream'], { config: { deltaIntervalMs: 25 } });
    await session.turn('hi');
    const deltas = session.of('message.delta');
    const want = 'first' + Array.from({ length: 40 }, (_, i) => ` t${i}`).join('') + ' last';
    expect(deltas.map((e) => e.data.text).join('')).toBe(want);
    expect(deltas.every((e) => e.data.text !== '')).toBe(true);
    expect(String(deltas[0]!.data.text).startsWith('first')).toBe(true);
    const types = session.events.map((e) => e.type);
    expect(types.lastIndexOf('message.delta')).toBeLessThan(types.indexOf('message.completed'));
  });

  it('sends what waits for the interval when the answer ends, and leaves the event loop\'s immediates working', async () => {
    const { session } = await setup(['plain-answer'], { config: { deltaIntervalMs: 200 } });
    await session.turn('hi');
    // 'Hello' at once; ' from' and ' the model.' wait for the interval, and the end of the answer
    // (well before 200 ms) sends them, before message.completed: the text is whole when it completes.
    const deltas = session.of('message.delta');
    expect(deltas.map((e) => e.data.text).join('')).toBe('Hello from the model.');
    expect(String(deltas[0]!.data.text).startsWith('Hello')).toBe(true);
    // Cancelling the waiting timer must not touch the immediate queue (clearImmediate on a Timeout
    // did: an immediate then waited for the next timer).
    const first = await Promise.race([new Promise((r) => setImmediate(() => r('immediate'))), new Promise((r) => setTimeout(() => r('timer'), 50))]);
    expect(first).toBe('immediate');
  });

  it('stops reading the stream while emit() says the journal is behind, and reads on once drained() resolves', async () => {
    let release!: () => void;
    const drained = new Promise<void>((r) => (release = r));
    let drainedAsked = false;
    const { session, server } = await setup(['plain-answer'], {
      backpressure: { emitReturns: (n) => n !== 1, drained: () => ((drainedAsked = true), drained) },
    });
    const turn = session.turn('hi');
    await until(() => drainedAsked, 'the engine to wait for drained()');
    await server.waitFor((r) => r[0]!.finished, 'the server to have sent the whole answer');
    // The delta that said "behind" goes out after the next read began, so one more may follow it; not all.
    expect(session.of('message.delta').length).toBeLessThanOrEqual(2);
    release();
    expect(await turn).toEqual({ status: 'completed' });
    expect(session.of('message.delta').map((e) => e.data.text).join('')).toBe('Hello from the model.');
  });

  it('runs a two-step conversation: tool.call, approval, the command with its events, tool.result, then the final answer', async () => {
    const { session, server, cwd } = await setup(['tool-call', 'final-answer'], { approvalPolicy: 'ask' });
    expect(await session.turn('what is here?')).toEqual({ status: 'completed' });
    expect(types(session.events)).toEqual([
      'turn.started',
      'message.user',
      'message.completed',
      'usage',
      'tool.call',
      'approval.requested',
      'approval.resolved',
      'command.started',
      'command.completed',
      'tool.result',
      'message.delta',
      'message.delta',
      'message.completed',
      'usage',
      'turn.completed',
    ]);
    expect(session.approvals).toEqual([{ command: 'ls -1', cwd }]);
    expect(session.of('tool.call')[0]!.data).toEqual({ turnId: 'turn-1', callId: 'call_abc123', name: 'shell', arguments: '{"command": "ls -1", "cwd": "."}' });
    expect(session.of('tool.result')[0]!.data).toEqual({ turnId: 'turn-1', callId: 'call_abc123', status: 'succeeded', exitCode: 0, output: 'a.txt\nb.txt\n\n[exit code 0]' });
    expect(session.of('message.completed').map((e) => e.data.finishReason)).toEqual(['tool_calls', 'stop']);

    // What the second request carried: the first answer's tool call and its result, and the tool schema.
    const second = server.requests[1]!.body;
    expect(second.messages).toEqual([
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: 'what is here?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'shell', arguments: '{"command": "ls -1", "cwd": "."}' } }] },
      { role: 'tool', tool_call_id: 'call_abc123', content: 'a.txt\nb.txt\n\n[exit code 0]' },
    ]);
    expect(second.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['shell']);
  });

  it('sends the first turn, rebuilt from its events, with the second turn\'s request', async () => {
    const { session, server } = await setup(['tool-call', 'final-answer', 'plain-answer']);
    await session.turn('what is here?');
    await session.turn('thanks');
    const third = server.requests[2]!.body.messages;
    expect(third.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(third[4]).toEqual({ role: 'assistant', content: 'The directory has two files.' });
    expect(third[5]).toEqual({ role: 'user', content: 'thanks' });
  });

  it('tells the model a denied command did not run, and goes on to its answer', async () => {
    const { session, server } = await setup(['tool-call', 'final-answer'], { approvalPolicy: 'ask', decide: () => 'deny' });
    expect(await session.turn('what is here?')).toEqual({ status: 'completed' });
    expect(session.of('command.started')).toEqual([]);
    expect(session.of('tool.result')[0]!.data).toEqual({ turnId: 'turn-1', callId: 'call_abc123', status: 'denied', output: '[not run: the user denied this command]' });
    expect(server.requests[1]!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_abc123', content: '[not run: the user denied this command]' });
  });

  it('asks for no approval under approvalPolicy auto', async () => {
    const { session } = await setup(['tool-call', 'final-answer'], { approvalPolicy: 'auto' });
    await session.turn('what is here?');
    expect(session.approvals).toEqual([]);
    expect(session.of('tool.result')[0]!.data.status).toBe('succeeded');
  });

  it('runs several tool calls of one answer in order, a failing one reported failed with its exit code and stderr', async () => {
    const { session, server } = await setup(['several-tool-calls', 'final-answer'], { approvalPolicy: 'ask' });
    await session.turn('two things');
    expect(session.approvals.map((a) => a.command)).toEqual(['echo one', 'echo two >&2; exit 3']);
    expect(session.of('tool.result').map((e) => [e.data.callId, e.data.status, e.data.exitCode, e.data.output])).toEqual([
      ['call_one', 'succeeded', 0, 'one\n\n[exit code 0]'],
      ['call_two', 'failed', 3, 'two\n\n[exit code 3]'],
    ]);
    const sent = server.requests[1]!.body.messages;
    expect(sent.at(-3)).toMatchObject({ role: 'assistant', content: 'Running two commands.' });
    expect(sent.slice(-2).map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual(['call_one', 'call_two']);
  });

  it('runs a whole tool call sent in one chunk (Ollama) although its finish_reason says stop', async () => {
    const { session, cwd } = await setup(['ollama-tool-call', 'final-answer']);
    expect(await session.turn('where am I?')).toEqual({ status: 'completed' });
    expect(session.of('tool.result')[0]!.data.output).toBe(`${fs.realpathSync(cwd)}\n\n[exit code 0]`);
    expect(session.of('message.completed')[0]!.data.finishReason).toBe('tool_calls');
  });

  it('answers bad arguments and an unknown tool with a failed result, running nothing, so the model can correct itself', async () => {
    const { session, server } = await setup(['tool-call-bad-arguments', 'tool-call-unknown-tool', 'final-answer']);
    expect(await session.turn('go')).toEqual({ status: 'completed' });
    expect(session.of('command.started')).toEqual([]);
    const results = session.of('tool.result').map((e) => [e.data.status, e.data.output]);
    expect(results[0]![0]).toBe('failed');
    expect(results[0]![1]).toContain('not valid JSON');
    expect(results[1]).toEqual(['failed', '[not run: there is no tool "python"; the only tool is shell {command, cwd?}]']);
    expect(server.requests).toHaveLength(3);
  });

  it('records a call without arguments as {} and sends it back so, answered with what shell needs', async () => {
    const { session, server } = await setup(['tool-call-no-arguments', 'final-answer']);
    await session.turn('go');
    expect(session.of('tool.call')[0]!.data.arguments).toBe('{}');
    expect(session.of('tool.result')[0]!.data).toMatchObject({ status: 'failed', output: '[not run: shell needs a non-empty "command" string]' });
    expect(server.requests[1]!.body.messages[2].tool_calls[0].function.arguments).toBe('{}');
  });

  it('sends the model the head and tail of a loud command\'s output, cut under the cap and marked', async () => {
    const { session } = await setup(['tool-call-loud-command', 'final-answer'], { config: { toolOutputCapBytes: 2000 } });
    await session.turn('count');
    const out = session.of('tool.result')[0]!.data.output as string;
    expect(out.startsWith('1\n2\n3\n')).toBe(true);
    expect(out).toMatch(/\n\[… \d+ bytes of output cut; 1288895 bytes in all …\]\n/);
    expect(out.endsWith('199999\n200000\n\n[exit code 0]')).toBe(true);
    expect(Buffer.byteLength(out)).toBeLessThan(2200);
  });

  it('ends the turn failed after maxSteps model requests, saying so, and runs nothing asked in the last one', async () => {
    const { session, server } = await setup(['tool-call', 'tool-call', 'final-answer'], { maxSteps: 2 });
    const r = await session.turn('loop');
    expect(r.status).toBe('failed');
    expect(r.error).toContain('maxSteps 2');
    expect(server.requests).toHaveLength(2);
    expect(session.of('command.started')).toHaveLength(1);
    expect(session.of('tool.result').map((e) => e.data.status)).toEqual(['succeeded', 'interrupted']);
    expect(session.of('error').map((e) => e.data.code)).toEqual(['max_steps']);
  });

  it('gives a second call that reuses an id a new one, so results pair with their calls', async () => {
    const { session, server } = await setup(['tool-call', 'tool-call', 'final-answer']);
    await session.turn('twice');
    const ids = session.of('tool.call').map((e) => e.data.callId);
    expect(ids[0]).toBe('call_abc123');
    expect(ids[1]).not.toBe('call_abc123');
    const sent = server.requests[2]!.body.messages;
    expect(sent.filter((m: { role: string }) => m.role === 'tool').map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual(ids);
  });

  it('on cancel mid-stream aborts the HTTP request at once (the server sees the close) and keeps the partial answer', async () => {
    const { session, server } = await setup(['held-answer']);
    const turn = session.turn('talk');
    await until(() => session.of('message.delta').map((e) => e.data.text).join('') === 'Partial answer', 'the first deltas');
    session.cancel();
    expect(await turn).toEqual({ status: 'cancelled' });
    await server.waitFor((r) => r[0]!.closedByClient, 'the server to see the connection close');
    expect(session.of('message.completed').map((e) => e.data)).toEqual([{ turnId: 'turn-1', text: 'Partial answer', finishReason: 'cancelled' }]);
  });

  it('on cancel while a tool command runs kills it, records an interrupted result and makes no further request', async () => {
    const { session, server } = await setup(['tool-call-slow-command', 'final-answer']);
    const turn = session.turn('wait');
    await until(() => session.of('command.output').length > 0, 'the command to start writing');
    const pid = session.of('command.started')[0]!.data.pid as number;
    session.cancel();
    expect(await turn).toEqual({ status: 'cancelled' });
    await until(() => !isAlive(pid), 'the command to be killed');
    const result = session.of('tool.result')[0]!.data;
    expect(result.status).toBe('interrupted');
    expect(result.output).toBe('started\n\n[interrupted: the user cancelled the turn while the command ran]');
    expect(server.requests).toHaveLength(1);
  });

  it('on cancel while an approval waits records an interrupted result and runs nothing', async () => {
    const { session } = await setup(['tool-call', 'final-answer'], { approvalPolicy: 'ask', decide: () => new Promise(() => undefined) });
    const turn = session.turn('ls');
    await until(() => session.approvals.length === 1, 'the approval to be asked');
    session.cancel();
    expect(await turn).toEqual({ status: 'cancelled' });
    expect(session.of('command.started')).toEqual([]);
    expect(session.of('tool.result')[0]!.data.status).toBe('interrupted');
  });

  it.each([
    ['unauthorized', 'model_auth', false],
    ['model-not-found', 'model_not_found', false],
    ['server-error', 'model_server_error', true],
    ['error-mid-stream', 'model_stream_error', true],
    ['malformed-json', 'model_bad_response', false],
    ['no-finish-reason', 'model_incomplete', true],
  ] as const)('ends the turn failed with an error event on %s (%s)', async (fixture, code, retryable) => {
    const { session } = await setup([fixture]);
    const r = await session.turn('hi');
    expect(r.status).toBe('failed');
    const errors = session.of('error').map((e) => e.data);
    expect(errors).toEqual([{ turnId: 'turn-1', code, message: r.error, retryable }]);
  });

  it('keeps the partial text of an answer a fault cut short, marked finishReason error', async () => {
    const { session } = await setup(['error-mid-stream']);
    await session.turn('hi');
    expect(session.of('message.completed').map((e) => e.data)).toEqual([{ turnId: 'turn-1', text: 'Let me', finishReason: 'error' }]);
  });

  it('ends a stalled stream failed within the bound instead of hanging', async () => {
    const { session } = await setup(['stall'], { config: { stallMs: 300 } });
    const r = await session.turn('hi');
    expect(r.status).toBe('failed');
    expect(session.of('error')[0]!.data.code).toBe('model_stalled');
  });

  it('puts the API key in no event and no error, even when the server echoes it', async () => {
    const key = 'sk-test-NEVER-SHOW-7f3a9c';
    const { session, server } = await setup(['tool-call', 'final-answer', 'unauthorized'], { config: { apiKey: key } });
    await session.turn('what is here?');
    const r = await session.turn('again');
    expect(r.status).toBe('failed');
    expect(server.requests.every((q) => q.headers.authorization === `Bearer ${key}`)).toBe(true);
    const everything = JSON.stringify(session.events) + JSON.stringify(r);
    expect(everything).not.toContain('NEVER-SHOW');
    expect(everything).toContain('[redacted]');
  });

  it('runs tool commands without the key variables, so a model running `env` cannot read the key', async () => {
    const env = { ...process.env, ASTRA_CHAT_API_KEY: 'sk-astra-ENV-LEAK-1', OPENAI_API_KEY: 'sk-openai-ENV-LEAK-2', ASTRA_MARKER: 'kept' };
    const { session, server } = await setup(['tool-call-env', 'final-answer'], { env, config: { apiKey: env.ASTRA_CHAT_API_KEY } });
    await session.turn('show env');
    const out = session.of('tool.result')[0]!.data.output as string;
    expect(out).toContain('ASTRA_MARKER=kept');
    expect(out).not.toContain('ENV-LEAK');
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain('ENV-LEAK');
  });

  it('sends a valid next request after a crash left a tool call without a result', async () => {
    const history = [
      { type: 'turn.started', data: { turnId: 't0', input: { text: 'build' } } },
      { type: 'message.user', data: { turnId: 't0', text: 'build' } },
      { type: 'message.completed', data: { turnId: 't0', text: '', finishReason: 'tool_calls' } },
      { type: 'tool.call', data: { turnId: 't0', callId: 'call_make', name: 'shell', arguments: '{"command":"make"}' } },
      { type: 'command.started', data: { turnId: 't0', command: 'make', cwd: '/w', pid: 1 } },
      { type: 'turn.completed', data: { turnId: 't0', status: 'interrupted' } },
    ];
    const { session, server } = await setup(['plain-answer'], { history });
    await session.turn('what happened?');
    expect(server.requests[0]!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'build' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_make', type: 'function', function: { name: 'shell', arguments: '{"command":"make"}' } }] },
      { role: 'tool', tool_call_id: 'call_make', content: INTERRUPTED_RESULT_OUTPUT },
      { role: 'user', content: 'what happened?' },
    ]);
    expect(session.of('command.started')).toHaveLength(1); // the old one: nothing was re-run
  });

  it('fails a turn with a clear error when the runtime gives it a plain EngineContext', async () => {
    const r = await createChatEngine().runTurn({
      sessionId: 's',
      turnId: 't',
      cwd: '/',
      input: { text: 'hi' },
      approvalPolicy: 'auto',
      signal: new AbortController().signal,
      emit: () => true,
      drained: async () => undefined,
      requestApproval: async () => 'approve',
    });
    expect(r.status).toBe('failed');
    expect(r.error).toContain('ChatEngineContext');
  });
});
