// The chat engine end to end: the real daemon (dist/), real client processes and the CLI, and the
// fake model server (test/fixtures/model-server/) as a child process on loopback that the daemon
// reaches through ASTRA_CHAT_BASE_URL and that records what it was sent.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Driver, type Line } from '../helpers/driver.js';
import { startChatDaemon } from '../helpers/chat-daemon.js';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { cleanupHome, closedPort, isAlive, runCli, waitFor } from '../helpers/processes.js';
const KEY = 'sk-test-9f8e7d6c5b4a-never-written';

const homes: string[] = [];
const drivers: Driver[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) d.kill();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

/** The fake model server as a child process, scripted with fixture names. */
const modelServer = (script: string[]) => startModelServerProcess(script, children);

const setup = (baseUrl: string, extra: Record<string, string> = {}) => startChatDaemon(baseUrl, { ASTRA_CHAT_API_KEY: KEY, ...extra }, homes, drivers);

const ofType = (events: Line[], type: string) => events.filter((e) => e.type === type);
const turnEnd = (d: Driver, turnId: string) => d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId, 20_000);

async function startTurn(d: Driver, sessionId: string, text: string, key: string, takeover = false) {
  const lease = await d.call('lease/acquire', { sessionId, ...(takeover ? { takeover: true } : {}) });
  const { turnId } = await d.call('turn/start', { sessionId, epoch: lease.epoch, input: { text }, idempotencyKey: key });
  return turnId as string;
}


describe('the chat engine through the daemon', () => {
  it('a controller approves the model\'s shell call while an observer watches; the result goes back, the model answers, and the second turn\'s request carries the first', async () => {
    const server = await modelServer(['tool-call', 'final-answer', 'plain-answer']);
    const { driver } = await setup(server.baseUrl);
    const [ctl, obs] = await Promise.all([driver('controller'), driver('observer')]);
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalPolicy: 'ask', engineOptions: { model: 'llama3.1' } });
    const sessionId = session.id as string;
    await obs.call('session/subscribe', { sessionId, sinceSeq: 0 });
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const turnId = await startTurn(ctl, sessionId, 'what is in this directory?', 't1');

    const ask = await ctl.next((l) => l.approvalRequest !== undefined);
    expect(ask.approvalRequest).toMatchObject({ sessionId, turnId, command: 'ls -1' });
    expect(obs.lines.some((l) => l.approvalRequest)).toBe(false); // observers are never asked
    ctl.send({ op: 'answer', approvalId: ask.approvalRequest.approvalId, decision: 'approve' });
    expect((await turnEnd(obs, turnId)).params.data.status).toBe('completed');

    const seen = obs.events(sessionId).filter((e) => e.type !== 'message.delta' && e.type !== 'command.output').map((e) => e.type);
    expect(seen).toEqual([
      'session.created', 'lease.changed', 'turn.started', 'message.user', 'message.completed', 'usage', 'tool.call', 'approval.requested',
      'approval.resolved', 'command.started', 'command.completed', 'tool.result', 'message.completed', 'usage', 'turn.completed',
    ]);
    const events = obs.events(sessionId);
    expect(ofType(events, 'tool.call')[0]!.data).toEqual({ turnId, callId: 'call_abc123', name: 'shell', arguments: '{"command": "ls -1", "cwd": "."}', argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(ofType(events, 'tool.result')[0]!.data).toMatchObject({ turnId, callId: 'call_abc123', status: 'succeeded', exitCode: 0 });
    expect(ofType(events, 'message.completed').map((e) => e.data.finishReason)).toEqual(['tool_calls', 'stop']);
    expect(ofType(events, 'message.delta').map((e) => e.data.text).join('')).toBe('The directory has two files.');
    // The controller saw exactly the same stream.
    await turnEnd(ctl, turnId);
    expect(ctl.events(sessionId).map((e) => e.seq)).toEqual(events.map((e) => e.seq));

    let reqs = await server.requests();
    expect(reqs).toHaveLength(2);
    expect(reqs[0]!.body.tools).toHaveLength(1);
    const toolMsg = reqs[1]!.body.messages.find((m) => m.role === 'tool')!;
    expect(toolMsg.tool_call_id).toBe('call_abc123');
    expect(toolMsg.content).toBe(ofType(events, 'tool.result')[0]!.data.output);

    const second = await startTurn(ctl, sessionId, 'thanks', 't2');
    await turnEnd(obs, second);
    reqs = await server.requests();
    expect(reqs[2]!.body.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'what is in this directory?'],
      ['assistant', null],
      ['tool', toolMsg.content],
      ['assistant', 'The directory has two files.'],
      ['user', 'thanks'],
    ]);
  });

  it('cancel mid-stream closes the model request at once and keeps the partial answer as message.completed cancelled', async () => {
    const server = await modelServer(['held-answer']);
    const { driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'chat', engineOptions: { model: 'llama3.1' } });
    await ctl.call('session/subscribe', { sessionId: session.id });
    const turnId = await startTurn(ctl, session.id, 'tell me a story', 't1');
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'message.delta' && /answer/.test(l.params.data.text as string));
    const lease = await ctl.call('lease/acquire', { sessionId: session.id });
    await ctl.call('turn/cancel', { sessionId: session.id, epoch: lease.epoch, turnId });
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('cancelled');
    await server.waitFor('the server to see the connection close', (r) => r[0]?.closedByClient === true);
    expect(ofType(ctl.events(session.id), 'message.completed').map((e) => e.data)).toEqual([{ turnId, text: 'Partial answer', finishReason: 'cancelled' }]);
  });

  it('a daemon SIGKILLed during an approved command: the turn is interrupted, the orphaned call gets an interrupted result, the command is not re-run, and the next request is valid', async () => {
    const server = await modelServer(['tool-call-slow-command']);
    const { env, driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    const sessionId = session.id as string;
    await ctl.call('session/subscribe', { sessionId });
    await startTurn(ctl, sessionId, 'wait a while', 't1');
    const started = await ctl.next((l) => l.note === 'session/event' && l.params.type === 'command.started');
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'command.output');
    process.kill(ctl.daemonPid, 'SIGKILL');
    await waitFor('the daemon to die', () => !isAlive(ctl.daemonPid));

    await server.script(['plain-answer']);
    const r = await runCli(['daemon', 'start'], env);
    expect(r.code, r.stderr).toBe(0);
    const next = await driver('after-restart');
    const { events } = await next.call('session/read', { sessionId });
    const tail = (events as Line[]).filter((e) => e.type !== 'lease.changed').slice(-2);
    expect(tail.map((e) => [e.type, e.data.status])).toEqual([['tool.result', 'interrupted'], ['turn.completed', 'interrupted']]);
    expect(tail[0]!.data.callId).toBe('call_sleep');
    await waitFor('the orphaned command to be killed', () => !isAlive(started.params.data.pid as number));

    await next.call('session/subscribe', { sessionId });
    // The lease carried over the restart, reserved for the dead daemon's controller: take it over.
    const turnId = await startTurn(next, sessionId, 'and now?', 't2', true);
    expect((await turnEnd(next, turnId)).params.data.status).toBe('completed');
    const reqs = await server.requests();
    expect(reqs).toHaveLength(2);
    const msgs = reqs[1]!.body.messages;
    const call = msgs.findIndex((m) => m.tool_calls?.[0]?.id === 'call_sleep');
    expect(call).toBeGreaterThan(0);
    expect(msgs[call + 1]).toMatchObject({ role: 'tool', tool_call_id: 'call_sleep', content: expect.stringMatching(/interrupted/) });
    // Run once, never again: one command.started in the whole session.
    const all = (await next.call('session/read', { sessionId })).events as Line[];
    expect(ofType(all, 'command.started')).toHaveLength(1);
  });

  it('a host that does not resolve, a refused connection and a server that closes mid-answer each end the turn failed with an error event that says what to check, retryable as documented, no key in it', async () => {
    const port = await closedPort();
    const server = await modelServer(['connection-cut', 'plain-answer']);
    const { driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const cases: { name: string; baseUrl: string; code: string; retryable: boolean; says: string[] }[] = [
      // .invalid never resolves (RFC 6761): ENOTFOUND, a permanent failure, so not retryable.
      { name: 'dns', baseUrl: 'http://astra-no-such-host.invalid:11434/v1', code: 'model_dns', retryable: false, says: ['astra-no-such-host.invalid does not resolve', 'check the base URL', 'ASTRA_CHAT_BASE_URL'] },
      { name: 'refused', baseUrl: `http://127.0.0.1:${port}/v1`, code: 'model_unreachable', retryable: true, says: [`is a model server listening at http://127.0.0.1:${port}/v1?`, 'ollama serve', 'ASTRA_CHAT_BASE_URL'] },
      { name: 'cut', baseUrl: server.baseUrl, code: 'model_incomplete', retryable: true, says: ['closed the connection mid-answer', 'send the message again'] },
    ];
    for (const c of cases) {
      const { session } = await ctl.call('session/create', { engine: 'chat', engineOptions: { model: 'llama3.1', baseUrl: c.baseUrl } });
      await ctl.call('session/subscribe', { sessionId: session.id });
      const turnId = await startTurn(ctl, session.id, 'hello?', `t-${c.name}`);
      const end = await turnEnd(ctl, turnId);
      expect(end.params.data.status, c.name).toBe('failed');
      const err = ofType(ctl.events(session.id), 'error')[0]!.data;
      expect(err, `${c.name}: ${err.message}`).toMatchObject({ turnId, code: c.code, retryable: c.retryable });
      for (const text of c.says) expect(err.message, c.name).toContain(text);
      expect(end.params.data.error, c.name).toBe(err.message);
      expect(JSON.stringify(ctl.events(session.id)), c.name).not.toContain(KEY);
      if (c.name === 'cut') {
        // What came before the cut is kept as the partial answer, cut short by the error.
        expect(ofType(ctl.events(session.id), 'message.completed').map((e) => e.data)).toEqual([{ turnId, text: 'Cut', finishReason: 'error' }]);
        // And the daemon serves the next turn of that session.
        const next = await startTurn(ctl, session.id, 'again', 't-cut-2');
        expect((await turnEnd(ctl, next)).params.data.status).toBe('completed');
      } else expect(ofType(ctl.events(session.id), 'message.completed'), c.name).toHaveLength(0);
    }
    expect((await server.requests()).length).toBe(2);
  });

  it('every fault of a model server ends its turn failed with an error event {code, message, retryable} and the daemon serves the next turn', async () => {
    const faults: [fixture: string, code: string, retryable: boolean][] = [
      ['unauthorized', 'model_auth', false],
      ['forbidden', 'model_auth', false],
      ['model-not-found', 'model_not_found', false],
      ['rate-limited-long', 'model_rate_limited', true],
      ['server-error', 'model_server_error', true],
      ['error-mid-stream', 'model_stream_error', true],
      ['malformed-json', 'model_bad_response', false],
      ['no-finish-reason', 'model_incomplete', true],
      ['stall', 'model_stalled', true],
    ];
    const server = await modelServer(faults.map(([f]) => f));
    // The stall bound also runs while the server has not answered yet: long enough for a loaded
    // machine's model server to answer the other faults (300 ms made a slow 401 a model_stalled).
    const { driver } = await setup(server.baseUrl, { ASTRA_CHAT_STALL_MS: '5000' });
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'chat', engineOptions: { model: 'llama3.1' } });
    await ctl.call('session/subscribe', { sessionId: session.id });
    for (const [fixture, code, retryable] of faults) {
      const turnId = await startTurn(ctl, session.id, `fault ${fixture}`, `t-${fixture}`);
      const end = await turnEnd(ctl, turnId);
      expect(end.params.data.status, fixture).toBe('failed');
      const err = ofType(ctl.events(session.id), 'error').find((e) => e.data.turnId === turnId)?.data;
      expect(err, fixture).toMatchObject({ code });
      expect(err.retryable, fixture).toBe(retryable);
      expect(typeof err.message === 'string' && err.message.length > 20, `${fixture}: ${err.message}`).toBe(true);
      expect(err.message, fixture).not.toContain(KEY);
    }
  });

  it('refuses a chat session with a malformed base URL at create time, naming the field', async () => {
    const server = await modelServer([]);
    const { driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const err = await ctl.callError('session/create', { engine: 'chat', engineOptions: { model: 'm', baseUrl: 'ftp://x' } });
    expect(err.reason).toBe('invalid_params');
    expect(err.message).toMatch(/engineOptions.baseUrl must be an http/);
    const shell = await ctl.callError('session/create', { engine: 'shell', engineOptions: { model: 'm' } });
    expect(shell.reason).toBe('invalid_params');
  });

  it('the API key is sent to the model server and is in no file under ASTRA_HOME, no event, no command\'s environment and not in daemon/status', async () => {
    const server = await modelServer(['tool-call-env', 'final-answer']);
    const { home, driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    await ctl.call('session/subscribe', { sessionId: session.id });
    const turnId = await startTurn(ctl, session.id, 'show me the environment', 't1');
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('completed');

    const reqs = await server.requests();
    expect(reqs[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    // The env command ran (its output is in the stream) without the key in it.
    const output = ofType(ctl.events(session.id), 'command.output').map((e) => e.data.data).join('');
    expect(output).toContain('ASTRA_HOME=');
    expect(JSON.stringify(ctl.lines)).not.toContain(KEY);
    expect(JSON.stringify(await ctl.call('daemon/status'))).not.toContain(KEY);
    await ctl.call('session/read', { sessionId: session.id });
    // Every file under the home, the journal and the daemon's log included.
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) files.push(p);
      }
    };
    walk(home);
    expect(files.some((f) => f.endsWith('journal.astra'))).toBe(true);
    for (const f of files) expect(fs.readFileSync(f).includes(KEY), f).toBe(false);
  });

  it('astra new --engine chat --model and astra send --wait print the final answer; --json prints the events', async () => {
    const server = await modelServer(['plain-answer', 'plain-answer']);
    const { env } = await setup(server.baseUrl);
    const created = await runCli(['new', '--engine', 'chat', '--model', 'llama3.1', '--approval', 'auto'], env);
    expect(created.code, created.stderr).toBe(0);
    const id = created.stdout.trim();
    const sent = await runCli(['send', id, 'hi', '--wait'], env);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout.trim()).toBe('Hello from the model.');
    const json = await runCli(['send', id, 'again', '--wait', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const types = json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { type?: string }).type);
    expect(types).toContain('message.completed');
    expect(types[types.length - 1]).toBe('turn.completed');
    const bad = await runCli(['new', '--engine', 'chat', '--model', 'm', '--base-url', 'not a url'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/baseUrl is not a URL/);
  });

  it('a denied call is answered denied to the model; an unanswered one expires after approvalTimeoutMs, a late answer changes nothing, and the model is told', async () => {
    const server = await modelServer(['tool-call', 'final-answer', 'tool-call-slow-command', 'final-answer']);
    const { driver } = await setup(server.baseUrl);
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalTimeoutMs: 1000, engineOptions: { model: 'llama3.1' } });
    const sessionId = session.id as string;
    await ctl.call('session/subscribe', { sessionId });

    const t1 = await startTurn(ctl, sessionId, 'list it', 't1');
    const ask = await ctl.next((l) => l.approvalRequest !== undefined);
    expect(ask.approvalRequest).toMatchObject({ revision: 1, expiresAt: expect.any(Number) });
    ctl.send({ op: 'answer', approvalId: ask.approvalRequest.approvalId, decision: 'deny' });
    expect((await turnEnd(ctl, t1)).params.data.status).toBe('completed');
    expect(ofType(ctl.events(sessionId), 'tool.result')[0]!.data).toMatchObject({ status: 'denied', output: '[not run: the user denied this command]' });

    const t2 = await startTurn(ctl, sessionId, 'wait a while', 't2');
    const second = await ctl.next((l) => l.approvalRequest !== undefined && l.approvalRequest.approvalId !== ask.approvalRequest.approvalId);
    expect((await turnEnd(ctl, t2)).params.data.status).toBe('completed');
    const resolved = ofType(ctl.events(sessionId), 'approval.resolved').find((e) => e.data.approvalId === second.approvalRequest.approvalId)!;
    expect(resolved.data).toMatchObject({ decision: 'deny', reason: expect.stringMatching(/^expired: nobody answered within 1 s/) });
    const results = ofType(ctl.events(sessionId), 'tool.result');
    expect(results[1]!.data).toMatchObject({ callId: 'call_sleep', status: 'denied', output: expect.stringMatching(/approval expired/) });
    // The late answer: refused inside the daemon, nothing appended, nothing run.
    const head = ctl.events(sessionId).length;
    ctl.send({ op: 'answer', approvalId: second.approvalRequest.approvalId, decision: 'approve' });
    const { events } = await ctl.call('session/read', { sessionId });
    expect(ofType(events as Line[], 'command.started')).toHaveLength(0);
    expect(ctl.events(sessionId).length).toBe(head);
    const reqs = await server.requests();
    expect(reqs[3]!.body.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([results[0]!.data.output, results[1]!.data.output]);
  });
});
