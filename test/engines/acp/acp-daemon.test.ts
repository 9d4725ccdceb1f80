// The acp engine end to end: the real daemon (dist/) in its own ASTRA_HOME, real client processes,
// and a small fake ACP agent of our own (fixtures/fake-agent.mjs, on the SDK's agent side) that the
// daemon spawns per session.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDriverDaemon } from '../../helpers/chat-daemon.js';
import type { Driver, Line } from '../../helpers/driver.js';
import { cleanupHome, ROOT, runCli, tempDir } from '../../helpers/processes.js';

const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
const agentOptions = (env: Record<string, string> = {}) => ({ command: process.execPath, args: [AGENT], env });

const homes: string[] = [];
const drivers: Driver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) d.kill();
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

// These tests read acp.update's `update`, an experimental field (protocol/capabilities.ts): their drivers opt in.
const setup = (extra: Record<string, string> = {}) =>
  startDriverDaemon({ ASTRA_ACP_CANCEL_GRACE_MS: '1500', ASTRA_ACP_START_TIMEOUT_MS: '15000', ...extra }, homes, drivers, { DRIVER_EXPERIMENTAL: '1' });

const ofType = (events: Line[], type: string) => events.filter((e) => e.type === type);
const turnEnd = (d: Driver, turnId: string) => d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId, 20_000);

let keys = 0;
async function startTurn(d: Driver, sessionId: string, text: string, takeover = false) {
  const lease = await d.call('lease/acquire', { sessionId, ...(takeover ? { takeover: true } : {}) });
  const { turnId } = await d.call('turn/start', { sessionId, epoch: lease.epoch, input: { text }, idempotencyKey: `k${keys++}` });
  return { turnId: turnId as string, epoch: lease.epoch as number };
}

async function createSession(d: Driver, env: Record<string, string> = {}, approvalPolicy = 'ask') {
  const { session } = await d.call('session/create', { engine: 'acp', approvalPolicy, cwd: ROOT, engineOptions: agentOptions(env) }, 30_000);
  return session.id as string;
}

describe('the acp engine through the daemon', () => {
  it('streams an answer that two clients see identically and the journal replays', async () => {
    const { driver } = await setup();
    const [ctl, obs] = await Promise.all([driver('controller'), driver('observer')]);
    const sessionId = await createSession(ctl);
    await obs.call('session/subscribe', { sessionId, sinceSeq: 0 });
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId } = await startTurn(ctl, sessionId, 'stream 50');
    expect((await turnEnd(obs, turnId)).params.data.status).toBe('completed');
    await turnEnd(ctl, turnId);
    const events = obs.events(sessionId);
    const expected = Array.from({ length: 50 }, (_, i) => `w${i} `).join('');
    expect(ofType(events, 'message.delta').map((e) => e.data.text).join('')).toBe(expected);
    expect(ofType(events, 'message.completed').map((e) => e.data.finishReason)).toEqual(['end_turn']);
    expect(ofType(events, 'acp.session')[0]!.data).toMatchObject({ turnId, how: 'new' });
    expect(ctl.events(sessionId).map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    const { events: replay } = await obs.call('session/read', { sessionId, sinceSeq: 0 });
    expect(replay.map((e: Line) => [e.seq, e.type])).toEqual(events.map((e) => [e.seq, e.type]));
    expect(ofType(replay, 'message.completed')[0]!.data.text).toBe(expected);

    // A second turn goes to the same agent and ACP session: no new acp.session.
    const t2 = await startTurn(ctl, sessionId, 'hello');
    await turnEnd(ctl, t2.turnId);
    expect(ofType(ctl.events(sessionId), 'acp.session')).toHaveLength(1);
  });

  it('maps thoughts, plans, tool calls with a diff, and keeps an unknown update kind', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl);
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId } = await startTurn(ctl, sessionId, 'rich 5');
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('completed');
    const events = ctl.events(sessionId);
    expect(ofType(events, 'thought.delta')[0]!.data).toEqual({ turnId, text: 'thinking…' });
    expect(ofType(events, 'plan.updated')[0]!.data.entries).toEqual([{ content: 'edit a.txt', priority: 'high', status: 'in_progress' }]);
    expect(ofType(events, 'tool.call')[0]!.data).toMatchObject({ callId: 't1', name: 'edit', kind: 'edit', title: 'Edit a.txt', status: 'pending', locations: [{ path: '/w/a.txt', line: 1 }], arguments: '{"path":"a.txt"}' });
    expect(ofType(events, 'tool.updated')[0]!.data).toMatchObject({ callId: 't1', status: 'completed', content: [{ type: 'diff', path: '/w/a.txt', oldText: 'old', newText: 'xxxxx' }] });
    expect(ofType(events, 'acp.update')[0]!.data).toEqual({ turnId, kind: 'future_update_kind', update: { sessionUpdate: 'future_update_kind', something: { nested: [1, 2] } } });
    expect(ofType(events, 'message.completed')[0]!.data.text).toBe('done');

    // A 40 MB diff arrives and is kept cut to the bound, with a marker.
    const big = await startTurn(ctl, sessionId, 'rich 40000000');
    expect((await turnEnd(ctl, big.turnId)).params.data.status).toBe('completed');
    const updated = ofType(ctl.events(sessionId), 'tool.updated').at(-1)!.data;
    const newText = updated.content[0].newText as string;
    expect(newText.length).toBeLessThan(1024 * 1024 + 100);
    expect(newText.endsWith(`[… cut by Astra: ${40_000_000 - 1024 * 1024} more characters]`)).toBe(true);
  });

  it('keeps a malformed update and reads on past a line that is not JSON', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl);
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId } = await startTurn(ctl, sessionId, 'garbage');
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('completed');
    const events = ctl.events(sessionId);
    expect(ofType(events, 'acp.update').map((e) => e.data)).toEqual([{ turnId, kind: 'malformed', update: [1, 2] }]);
    expect(ofType(events, 'message.completed')[0]!.data.text).toBe('after garbage');
  });

  it('routes a permission to the controller; an observer cannot answer; approve picks the first allow option', async () => {
    const { driver } = await setup();
    const [ctl, obs] = await Promise.all([driver('controller'), driver('observer')]);
    const sessionId = await createSession(ctl);
    await obs.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId, epoch } = await startTurn(ctl, sessionId, 'permission');
    const ask = await ctl.next((l) => l.approvalRequest !== undefined, 20_000);
    expect(ask.approvalRequest).toMatchObject({ sessionId, turnId, command: 'Run rm -rf build' });
    expect(ask.approvalRequest.reason).toContain('Allow once [allow_once], Always allow [allow_always], Reject [reject_once]');
    await obs.next((l) => l.note === 'session/event' && l.params.type === 'approval.requested');
    const refused = await obs.callError('approval/answer', { sessionId, epoch, approvalId: ask.approvalRequest.approvalId, decision: 'approve' });
    expect(refused.reason).toBe('not_controller');
    ctl.send({ op: 'answer', approvalId: ask.approvalRequest.approvalId, decision: 'approve' });
    expect((await turnEnd(obs, turnId)).params.data.status).toBe('completed');
    expect(ofType(obs.events(sessionId), 'message.completed')[0]!.data.text).toBe('chose once');

    const t2 = await startTurn(ctl, sessionId, 'permission');
    const ask2 = await ctl.next((l) => l.approvalRequest !== undefined && l.approvalRequest.turnId === t2.turnId, 20_000);
    ctl.send({ op: 'answer', approvalId: ask2.approvalRequest.approvalId, decision: 'deny' });
    await turnEnd(obs, t2.turnId);
    expect(ofType(obs.events(sessionId), 'message.completed').map((e) => e.data.text)).toEqual(['chose once', 'chose no']);

    // approval/answer may name one of the agent's options; its kind must agree with the decision.
    const t3 = await startTurn(ctl, sessionId, 'permission');
    const ask3 = await ctl.next((l) => l.approvalRequest !== undefined && l.approvalRequest.turnId === t3.turnId, 20_000);
    expect(ask3.approvalRequest.options).toEqual([
      { optionId: 'once', name: 'Allow once', kind: 'allow_once' },
      { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
      { optionId: 'no', name: 'Reject', kind: 'reject_once' },
    ]);
    const approvalId = ask3.approvalRequest.approvalId;
    const wrong = await ctl.callError('approval/answer', { sessionId, epoch: t3.epoch, approvalId, decision: 'deny', optionId: 'always' });
    expect(wrong).toMatchObject({ reason: 'invalid_params', data: { field: 'optionId' } });
    const unknown = await ctl.callError('approval/answer', { sessionId, epoch: t3.epoch, approvalId, decision: 'approve', optionId: 'nope' });
    expect(unknown.message).toContain('once, always, no');
    await ctl.call('approval/answer', { sessionId, epoch: t3.epoch, approvalId, decision: 'approve', optionId: 'always' });
    await turnEnd(obs, t3.turnId);
    expect(ofType(obs.events(sessionId), 'message.completed').map((e) => e.data.text)).toEqual(['chose once', 'chose no', 'chose always']);
    expect(ofType(obs.events(sessionId), 'approval.resolved').at(-1)!.data).toMatchObject({ decision: 'approve', optionId: 'always' });
  });

  it('serves the agent files inside the session\'s directory only; a write is journaled as a diff', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const dir = fs.realpathSync(tempDir());
    const work = path.join(dir, 'work');
    fs.mkdirSync(work);
    fs.writeFileSync(path.join(work, 'a.txt'), 'hello\n');
    const { session } = await ctl.call('session/create', { engine: 'acp', cwd: work, engineOptions: agentOptions() }, 30_000);
    const sessionId = session.id as string;
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId } = await startTurn(ctl, sessionId, `files ${work}`);
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('completed');
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('HELLO\n');
    expect(fs.existsSync(path.join(dir, 'escaped.txt'))).toBe(false);
    const events = ctl.events(sessionId);
    const said = ofType(events, 'message.completed')[0]!.data.text as string;
    expect(said).toMatch(/^read "hello\\n"; outside refused: .*outside the session's directory/);
    expect(ofType(events, 'tool.call')[0]!.data).toMatchObject({ name: 'fs/write_text_file', kind: 'edit', status: 'completed', content: [{ type: 'diff', path: path.join(work, 'a.txt'), oldText: 'hello\n', newText: 'HELLO\n' }] });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a turn cancelled while a permission waits answers ACP cancelled and ends cancelled', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl);
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const { turnId, epoch } = await startTurn(ctl, sessionId, 'permission');
    await ctl.next((l) => l.approvalRequest !== undefined, 20_000);
    await ctl.call('turn/cancel', { sessionId, epoch, turnId });
    expect((await turnEnd(ctl, turnId)).params.data.status).toBe('cancelled');
  });

  it('cancel: session/cancel ends the turn cancelled; an agent that ignores it is force-ended after the bound, saying so', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl);
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const a = await startTurn(ctl, sessionId, 'hang');
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'message.delta', 20_000);
    await ctl.call('turn/cancel', { sessionId, epoch: a.epoch, turnId: a.turnId });
    const endA = await turnEnd(ctl, a.turnId);
    expect(endA.params.data.status).toBe('cancelled');
    expect(ofType(ctl.events(sessionId), 'error')).toHaveLength(0);

    const b = await startTurn(ctl, sessionId, 'deaf');
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'message.delta' && l.params.data.turnId === b.turnId, 20_000);
    await ctl.call('turn/cancel', { sessionId, epoch: b.epoch, turnId: b.turnId });
    const endB = await turnEnd(ctl, b.turnId);
    expect(endB.params.data.status).toBe('cancelled');
    expect(ofType(ctl.events(sessionId), 'error')[0]!.data.message).toContain('did not answer session/cancel');
    // The next turn starts the agent again and loads its ACP session.
    const c = await startTurn(ctl, sessionId, 'hello');
    expect((await turnEnd(ctl, c.turnId)).params.data.status).toBe('completed');
    const sessions = ofType(ctl.events(sessionId), 'acp.session');
    expect(sessions.map((e) => e.data.how)).toEqual(['new', 'loaded']);
    expect(sessions[1]!.data.acpSessionId).toBe(sessions[0]!.data.acpSessionId);
    expect(ofType(ctl.events(sessionId), 'message.delta').map((e) => e.data.text)).not.toContain('REPLAYED');
  });

  it('an agent that dies mid-turn ends it interrupted with its exit status and stderr; the next turn respawns it', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl, { FAKE_ACP_MODE: 'no-load' });
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const a = await startTurn(ctl, sessionId, 'die');
    const end = await turnEnd(ctl, a.turnId);
    expect(end.params.data).toMatchObject({ status: 'interrupted', exitCode: 7 });
    expect(end.params.data.error).toContain('out of cheese');
    const b = await startTurn(ctl, sessionId, 'hello');
    expect((await turnEnd(ctl, b.turnId)).params.data.status).toBe('completed');
    const sessions = ofType(ctl.events(sessionId), 'acp.session');
    expect(sessions.map((e) => e.data.how)).toEqual(['new', 'new']);
    expect(sessions[1]!.data.note).toContain('does not advertise loadSession');
  });

  it('the daemon killed mid-answer: the turn is interrupted with what streamed kept, and the next turn loads the ACP session again', async () => {
    const { env, driver } = await setup();
    const ctl = await driver('controller');
    const sessionId = await createSession(ctl);
    await ctl.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const a = await startTurn(ctl, sessionId, 'hang');
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'message.delta', 20_000);
    process.kill(ctl.daemonPid, 'SIGKILL');
    const r = await runCli(['daemon', 'start'], env);
    expect(r.code, r.stderr).toBe(0);
    const again = await driver('again');
    const { events } = await again.call('session/read', { sessionId, sinceSeq: 0 });
    expect(events.filter((e: Line) => e.type === 'message.delta').map((e: Line) => e.data.text)).toEqual(['working']);
    expect(events.find((e: Line) => e.type === 'turn.completed')).toMatchObject({ data: { turnId: a.turnId, status: 'interrupted' } });
    await again.call('session/subscribe', { sessionId, sinceSeq: events.at(-1).seq });
    const b = await startTurn(again, sessionId, 'hello', true);
    expect((await turnEnd(again, b.turnId)).params.data.status).toBe('completed');
    const sessions = ofType(again.events(sessionId), 'acp.session');
    expect(sessions.map((e) => e.data.how)).toEqual(['loaded']);
    expect(ofType(again.events(sessionId), 'message.completed').map((e) => e.data.text)).toEqual(['echo: hello']);
  });

  it('a bad command, an agent that exits at start, or a wrong protocol version fails session/create naming the command', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const missing = await ctl.callError('session/create', { engine: 'acp', cwd: ROOT, engineOptions: { command: 'no-such-agent-astra-test' } });
    expect(missing.reason).toBe('invalid_params');
    expect(missing.message).toContain('no-such-agent-astra-test');
    const exits = await ctl.callError('session/create', { engine: 'acp', cwd: ROOT, engineOptions: agentOptions({ FAKE_ACP_MODE: 'exit-at-start' }) });
    expect(exits.reason).toBe('invalid_params');
    expect(exits.message).toContain('fake-agent.mjs');
    expect(exits.message).toContain('exit status 3');
    expect(exits.message).toContain('fake agent: giving up');
    const version = await ctl.callError('session/create', { engine: 'acp', cwd: ROOT, engineOptions: agentOptions({ FAKE_ACP_MODE: 'bad-version' }) });
    expect(version.message).toContain('protocol version 99');
    const badField = await ctl.callError('session/create', { engine: 'acp', cwd: ROOT, engineOptions: { command: 'x', args: [1] } });
    expect(badField.data.field).toBe('engineOptions.args[0]');
    const { sessions } = await ctl.call('session/list', {});
    expect(sessions).toHaveLength(0);
  });
});

