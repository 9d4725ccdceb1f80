// Many clients, one writer (docs/protocol.md §6–§8): real daemon, real client processes.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Driver, type Line } from '../helpers/driver.js';
import { cleanupHome, envFor, isAlive, makeHome, runCli, waitFor } from '../helpers/processes.js';

const homes: string[] = [];
const drivers: Driver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) d.kill();
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

async function setup(extra: Record<string, string> = {}): Promise<{ env: NodeJS.ProcessEnv; driver: (name: string) => Promise<Driver> }> {
  const h = makeHome();
  homes.push(h);
  const env = envFor(h, extra);
  const r = await runCli(['daemon', 'start'], env);
  expect(r.code, r.stderr).toBe(0);
  return {
    env,
    driver: async (name: string) => {
      const d = new Driver(env, name);
      drivers.push(d);
      return d.ready();
    },
  };
}

function seqs(events: Line[]): number[] {
  return events.map((e) => e.seq as number);
}

function contiguous(list: number[], from = 1): boolean {
  return list.every((s, i) => s === from + i);
}

/** The commands' output text, with a pseudo-terminal's \r\n line ends read as \n (what is compared here is what arrived, not how lines end). */
const output = (events: Line[]) =>
  events
    .filter((e) => e.type === 'command.output')
    .map((e) => e.data.data)
    .join('')
    .replace(/\r\n/g, '\n');

/** A controller starts a command that an observer watches, and is SIGKILLed once output flows. */
async function controllerDiesMidTurn(driver: (name: string) => Promise<Driver>, command: string) {
  const ctl = await driver('controller');
  const obs = await driver('observer');
  const { session } = await ctl.call('session/create', { approvalPolicy: 'auto' });
  const sessionId = session.id as string;
  await obs.call('session/subscribe', { sessionId });
  const lease = await ctl.call('lease/acquire', { sessionId });
  const { turnId } = await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: command }, idempotencyKey: 't1' });
  await obs.next((l) => l.note === 'session/event' && l.params.type === 'command.output');
  ctl.kill('SIGKILL');
  return { obs, sessionId, lease, turnId: turnId as string };
}

describe('leases over the wire', () => {
  it('three clients on one session: observers see every event in order, observers cannot write, takeover moves control and the old epoch is stale', async () => {
    const { driver } = await setup();
    const [ctl, obs1, obs2] = await Promise.all([driver('controller'), driver('observer-1'), driver('observer-2')]);
    const { session } = await ctl.call('session/create', { title: 'shared', approvalPolicy: 'ask' });
    const sessionId = session.id as string;
    for (const d of [ctl, obs1, obs2]) await d.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const lease = await ctl.call('lease/acquire', { sessionId });
    expect(lease.epoch).toBeGreaterThan(0);
    expect(lease.resumeToken).toEqual(expect.any(String));

    // Only the controller is asked; observers see the approval events.
    ctl.send({ op: 'approvals', mode: 'approve' });
    const { turnId } = await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'echo hello; echo done' }, idempotencyKey: 'k1' });
    for (const d of [ctl, obs1, obs2]) {
      await d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId);
    }
    expect(ctl.lines.some((l) => l.approvalRequest)).toBe(true);
    expect(obs1.lines.some((l) => l.approvalRequest)).toBe(false);
    const reference = ctl.events(sessionId);
    for (const d of [obs1, obs2]) {
      const events = d.events(sessionId);
      expect(seqs(events)).toEqual(seqs(reference));
      expect(contiguous(seqs(events))).toBe(true);
      expect(events.map((e) => e.type)).toEqual(
        expect.arrayContaining(['lease.changed', 'turn.started', 'approval.requested', 'approval.resolved', 'command.started', 'command.output', 'command.completed', 'turn.completed']),
      );
      expect(output(events)).toBe('hello\ndone\n');
    }
    const completed = reference.find((e) => e.type === 'turn.completed')!;
    expect(completed.data).toMatchObject({ status: 'completed', exitCode: 0 });

    // An observer cannot write.
    const refused = await obs1.callError('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'echo nope' }, idempotencyKey: 'k2' });
    expect(refused.reason).toBe('not_controller');
    const held = await obs1.callError('lease/acquire', { sessionId });
    expect(held.reason).toBe('lease_held');
    expect(held.message).toContain('controller');

    // Takeover: control moves, the old controller is told, and its next write is stale.
    const taken = await obs1.call('lease/acquire', { sessionId, takeover: true });
    expect(taken.epoch).toBeGreaterThan(lease.epoch);
    const revoked = await ctl.next((l) => l.note === 'lease/revoked' && l.params.sessionId === sessionId);
    expect(revoked.params).toMatchObject({ reason: 'takeover', epoch: taken.epoch, holder: { clientName: 'observer-1', connectionId: obs1.connectionId } });
    const stale = await ctl.callError('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'echo late' }, idempotencyKey: 'k3' });
    expect(stale.reason).toBe('stale_epoch');
    await obs2.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'takeover');
    const status = await obs2.call('daemon/status');
    const s = status.sessions.find((x: Line) => x.id === sessionId);
    expect(s.controller.clientName).toBe('observer-1');
    expect(s.epoch).toBe(taken.epoch);
    expect(s.observers).toBe(2);
  });

  it('a controller SIGKILLed mid-turn: observers see grace, a new process reclaims with the resume token and the turn kept running', async () => {
    const { driver, env } = await setup({ ASTRA_LEASE_GRACE_MS: '20000' });
    // The command runs until the test lets it finish, after the reclaim (not for a fixed time).
    const go = path.join(env.ASTRA_HOME!, 'go');
    const { obs, sessionId, lease, turnId } = await controllerDiesMidTurn(driver, `echo started; while [ ! -e '${go}' ]; do sleep 0.05; done; echo finished`);
    const grace = await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'grace');
    expect(grace.params.data.graceUntil).toBeGreaterThan(Date.now());

    const heir = await driver('heir');
    const reclaimed = await heir.call('lease/acquire', { sessionId, resumeToken: lease.resumeToken });
    expect(reclaimed.epoch).toBeGreaterThan(lease.epoch);
    await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'reclaimed');
    expect(obs.events(sessionId).some((e) => e.type === 'turn.completed')).toBe(false);
    fs.writeFileSync(go, '');
    const done = await obs.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed', 15_000);
    expect(done.params.data).toMatchObject({ turnId, status: 'completed', exitCode: 0 });
    expect(output(obs.events(sessionId))).toBe('started\nfinished\n');
  });

  it('when nobody reclaims, grace expiry cancels the running turn and releases the lease', async () => {
    const { driver } = await setup({ ASTRA_LEASE_GRACE_MS: '800' });
    const { obs, sessionId, lease, turnId } = await controllerDiesMidTurn(driver, 'echo started; sleep 30');
    const expired = await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'expired');
    expect(expired.params.data.holder).toBeNull();
    const done = await obs.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed', 10_000);
    expect(done.params.data).toMatchObject({ turnId, status: 'cancelled' });
    // The lease is free again: anyone may acquire without takeover.
    const fresh = await obs.call('lease/acquire', { sessionId });
    expect(fresh.epoch).toBeGreaterThan(lease.epoch);
  });

  it('an approval pending when the controller dies is answered by the next controller', async () => {
    const { driver } = await setup({ ASTRA_LEASE_GRACE_MS: '20000' });
    const ctl = await driver('controller');
    const obs = await driver('observer');
    const { session } = await ctl.call('session/create', { approvalPolicy: 'ask' });
    const sessionId = session.id as string;
    await obs.call('session/subscribe', { sessionId });
    const lease = await ctl.call('lease/acquire', { sessionId });
    await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'echo approved-by-heir' }, idempotencyKey: 't1' });
    const asked = await ctl.next((l) => l.approvalRequest !== undefined);
    ctl.kill('SIGKILL');
    await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'grace');
    obs.send({ op: 'approvals', mode: 'approve' });
    await obs.call('lease/acquire', { sessionId, takeover: true });
    const reAsked = await obs.next((l) => l.approvalRequest !== undefined);
    expect(reAsked.approvalRequest.approvalId).toBe(asked.approvalRequest.approvalId);
    const resolved = await obs.next((l) => l.note === 'session/event' && l.params.type === 'approval.resolved');
    expect(resolved.params.data).toMatchObject({ decision: 'approve', by: { clientName: 'observer' } });
    await obs.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed');
    expect(output(obs.events(sessionId))).toBe('approved-by-heir\n');
  });

  it('subscribing from seq 0 while a turn streams: no gap and no duplicate across session/replayed', async () => {
    const { driver } = await setup();
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { approvalPolicy: 'auto' });
    const sessionId = session.id as string;
    const lease = await ctl.call('lease/acquire', { sessionId });
    await ctl.call('session/subscribe', { sessionId });
    await ctl.call('turn/start', {
      sessionId,
      epoch: lease.epoch,
      input: { text: 'for i in $(seq 1 300); do echo line $i; sleep 0.002; done' },
      idempotencyKey: 't1',
    });
    await ctl.next((l) => l.note === 'session/event' && l.params.type === 'command.output');
    const late = await driver('late');
    const sub = await late.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const replayed = await late.next((l) => l.note === 'session/replayed');
    expect(replayed.params.throughSeq).toBeGreaterThanOrEqual(sub.headSeq);
    const isDone = (l: Line) => l.note === 'session/event' && l.params.type === 'turn.completed';
    await Promise.all([late.next(isDone, 20_000), ctl.next(isDone, 20_000)]);
    const got = seqs(late.events(sessionId));
    expect(contiguous(got)).toBe(true);
    expect(got).toEqual(seqs(ctl.events(sessionId)));
    // session/replayed came after the backlog it names and before anything newer.
    const idx = late.lines.indexOf(replayed);
    const before = late.lines.slice(0, idx).filter((l) => l.note === 'session/event');
    expect(before[before.length - 1]!.params.seq).toBe(replayed.params.throughSeq);
    expect(output(late.events(sessionId))).toBe(Array.from({ length: 300 }, (_, i) => `line ${i + 1}\n`).join(''));
  });

  it('200 connections at once are served or refused with overloaded, and the daemon lives on', async () => {
    const { env } = await setup({ ASTRA_MAX_CONNECTIONS: '100' });
    const { connectOrSpawn } = await import('../../client/connect.js');
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, () => connectOrSpawn({ clientName: 'flood', autoStart: false, env })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    expect(ok.length).toBeGreaterThan(0);
    for (const r of refused) expect((r as PromiseRejectedResult).reason.reason).toBe('overloaded');
    expect(ok.length).toBeLessThanOrEqual(100);
    for (const r of ok) (r as PromiseFulfilledResult<{ conn: { close(): void } }>).value.conn.close();
    const status = await runCli(['daemon', 'status', '--json'], env);
    expect(status.code).toBe(0);
    expect(isAlive(JSON.parse(status.stdout).pid)).toBe(true);
    await waitFor('flood connections closed', async () => JSON.parse((await runCli(['daemon', 'status', '--json'], env)).stdout).connections.length === 1);
  });

  it('a held lease survives a daemon crash: it comes back in grace, reclaimable only with its resume token', async () => {
    const { driver } = await setup({ ASTRA_LEASE_GRACE_MS: '20000' });
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', {});
    const sessionId = session.id as string;
    const lease = await ctl.call('lease/acquire', { sessionId });
    process.kill(ctl.daemonPid, 'SIGKILL');
    await waitFor('daemon death', () => !isAlive(ctl.daemonPid));
    ctl.kill();
    const other = await driver('other'); // starts a new daemon
    expect(other.daemonPid).not.toBe(ctl.daemonPid);
    const refused = await other.callError('lease/acquire', { sessionId });
    expect(refused.reason).toBe('lease_held');
    const heir = await driver('heir');
    const back = await heir.call('lease/acquire', { sessionId, resumeToken: lease.resumeToken });
    expect(back.epoch).toBeGreaterThan(lease.epoch);
    const read = await heir.call('session/read', { sessionId });
    const reasons = read.events.filter((e: Line) => e.type === 'lease.changed').map((e: Line) => e.data.reason);
    expect(reasons).toEqual(['acquired', 'restart', 'reclaimed']);
    expect(read.session.controller.clientName).toBe('heir');
  });
});

describe('controller loss options and status', () => {
  it("with onControllerLost 'continue' the turn outlives the grace; status shows the grace, the running turn and the pending approval", async () => {
    // A grace long enough that the status below is asked within it on a loaded machine; the turn
    // waits for a file the test writes once the grace has expired, so it outlives the grace however
    // slowly anything runs.
    const { driver, env } = await setup({ ASTRA_LEASE_GRACE_MS: '4000' });
    const go = path.join(env.ASTRA_HOME!, 'go');
    const ctl = await driver('controller');
    const obs = await driver('observer');
    const keep = await ctl.call('session/create', { approvalPolicy: 'auto', onControllerLost: 'continue' });
    const ask = await ctl.call('session/create', { approvalPolicy: 'ask' });
    const keepId = keep.session.id as string;
    const askId = ask.session.id as string;
    await obs.call('session/subscribe', { sessionId: keepId });
    const l1 = await ctl.call('lease/acquire', { sessionId: keepId });
    const l2 = await ctl.call('lease/acquire', { sessionId: askId });
    const { turnId } = await ctl.call('turn/start', { sessionId: keepId, epoch: l1.epoch, input: { text: `while [ ! -e '${go}' ]; do sleep 0.05; done; echo survived` }, idempotencyKey: 'a' });
    await ctl.call('turn/start', { sessionId: askId, epoch: l2.epoch, input: { text: 'echo never' }, idempotencyKey: 'b' });
    await ctl.next((l) => l.approvalRequest !== undefined);
    ctl.kill('SIGKILL');
    const grace = await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'grace');
    const status = await obs.call('daemon/status');
    const k = status.sessions.find((x: Line) => x.id === keepId);
    const a = status.sessions.find((x: Line) => x.id === askId);
    expect(k).toMatchObject({ runningTurnId: turnId, observers: 1, controller: { clientName: 'controller', graceUntil: grace.params.data.graceUntil } });
    expect(a.pendingApprovals).toBe(1);
    expect(a.runningTurnId).toEqual(expect.any(String));
    await obs.next((l) => l.note === 'session/event' && l.params.type === 'lease.changed' && l.params.data.reason === 'expired', 30_000);
    fs.writeFileSync(go, '');
    const done = await obs.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed', 15_000);
    expect(done.params.data).toMatchObject({ turnId, status: 'completed', exitCode: 0 });
    expect(output(obs.events(keepId))).toBe('survived\n');
  });

  it('sessions nobody uses are closed after ASTRA_SESSION_UNLOAD_MS; one with a controller stays in status; both read back', async () => {
    const { driver } = await setup({ ASTRA_SESSION_UNLOAD_MS: '300' });
    const a = await driver('a');
    const quiet = (await a.call('session/create', { title: 'quiet' })).session.id as string;
    const held = (await a.call('session/create', { title: 'held' })).session.id as string;
    await a.call('lease/acquire', { sessionId: held });
    const ids = async () => ((await a.call('daemon/status')).sessions as Line[]).map((x) => x.id as string);
    expect((await ids()).sort()).toEqual([quiet, held].sort());
    await waitFor('the quiet session to be closed', async () => {
      const now = await ids();
      return !now.includes(quiet) && now.includes(held);
    }, 10_000);
    const read = await a.call('session/read', { sessionId: quiet, sinceSeq: 0 });
    expect(read.session.title).toBe('quiet');
    expect(read.events[0].type).toBe('session.created');
  });

  it('connected clients are told daemon/shuttingDown when the daemon stops', async () => {
    const { driver, env } = await setup();
    const d = await driver('watcher');
    const r = await runCli(['daemon', 'stop'], env);
    expect(r.code).toBe(0);
    const note = await d.next((l) => l.note === 'daemon/shuttingDown');
    expect(note.params.reason).toBe('stopped');
    expect(note.params.message).toMatch(/astra daemon stop/);
    await d.next((l) => l.closed === true);
  });
});

describe('slow clients', () => {
  it('an observer stopped with SIGSTOP during a 50,000-event flood: others get everything, the stopped one lags and catches up exactly once', async () => {
    const { driver, env } = await setup({ ASTRA_MAX_QUEUED_BYTES: String(2 * 1024 * 1024) });
    const quiet = { DRIVER_QUIET_EVENTS: '1' };
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'synthetic', approvalPolicy: 'auto' });
    const sessionId = session.id as string;
    const observers: Driver[] = [];
    for (const name of ['fast-1', 'fast-2', 'stopped']) {
      // Readers that fall behind resubscribe on session/lagged, as the client library does.
      const d = new Driver(env, name, name === 'stopped' ? quiet : { ...quiet, DRIVER_AUTO_RESUBSCRIBE: '1' });
      drivers.push(d);
      await d.ready();
      await d.call('session/subscribe', { sessionId });
      observers.push(d);
    }
    const [fast1, fast2, stopped] = observers as [Driver, Driver, Driver];
    process.kill(stopped.pid, 'SIGSTOP');
    try {
      const lease = await ctl.call('lease/acquire', { sessionId });
      await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'count=50000 size=200' }, idempotencyKey: 'flood' });
      const isDone = (l: Line) => l.note === 'session/event' && l.type === 'turn.completed';
      await Promise.all([fast1.next(isDone, 60_000), fast2.next(isDone, 60_000)]);
      const head = fast1.events(sessionId).at(-1)!.seq as number;
      expect(head).toBeGreaterThan(50_000);
      for (const d of [fast1, fast2]) expect(contiguous(seqs(d.events(sessionId)))).toBe(true);
      // What the daemon's memory did meanwhile is measured by `npm run bench` (mem.stoppedObserverFloodMB
      // and the stopped reader's own share), not asserted here: RSS depends on the GC's timing.
      process.kill(stopped.pid, 'SIGCONT');
      const lagged = await stopped.next((l) => l.note === 'session/lagged', 30_000);
      const from = lagged.params.resumeFromSeq as number;
      expect(from).toBeLessThan(head);
      const sub = await stopped.call('session/subscribe', { sessionId, sinceSeq: from }, 30_000);
      expect(sub.headSeq).toBe(head);
      await stopped.next(isDone, 60_000);
      const got = seqs(stopped.events(sessionId));
      expect(got).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    } finally {
      try {
        process.kill(stopped.pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
  });

  it('a connection that cannot drain for the bound is closed as slow_consumer; the others go on', async () => {
    const { driver, env } = await setup({ ASTRA_MAX_QUEUED_BYTES: String(256 * 1024), ASTRA_SLOW_CONSUMER_MS: '1000' });
    const ctl = await driver('controller');
    const { session } = await ctl.call('session/create', { engine: 'synthetic', approvalPolicy: 'auto' });
    const sessionId = session.id as string;
    const stuck = new Driver(env, 'stuck', { DRIVER_QUIET_EVENTS: '1' });
    drivers.push(stuck);
    await stuck.ready();
    await stuck.call('session/subscribe', { sessionId });
    process.kill(stuck.pid, 'SIGSTOP');
    try {
      const lease = await ctl.call('lease/acquire', { sessionId });
      await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'count=20000 size=1000' }, idempotencyKey: 'f' });
      await waitFor(
        'the stuck connection to be closed',
        async () => !(await ctl.call('daemon/status')).connections.some((c: Line) => c.clientName === 'stuck'),
        15_000,
      );
      expect(fs.readFileSync(path.join(env.ASTRA_HOME!, 'logs', 'daemon.log'), 'utf8')).toMatch(/slow consumer/);
      expect(isAlive(ctl.daemonPid)).toBe(true);
    } finally {
      process.kill(stuck.pid, 'SIGCONT');
    }
  });
});
