// The client's API against a real daemon: the derived method table, epochs filled in from the held
// lease, subscriptions (iterator and callbacks), leases lost and released, approvals, liveness.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AstraClient, type ClientMethodName } from '../../client/index.js';
import { AstraError, METHOD_NAMES, isExperimentalMethod, type SessionEvent } from '../../protocol/index.js';
import { ROOT } from '../helpers/processes.js';
import { testHome, waitFor } from './helpers.js';

const CLIENT_METHODS = METHOD_NAMES.filter((m) => m !== 'initialize') as ClientMethodName[];

function accessorOf(client: AstraClient, method: string): unknown {
  const slash = method.indexOf('/');
  const holder = client as unknown as Record<string, Record<string, unknown> | undefined>;
  return slash < 0 ? holder[method] : holder[method.slice(0, slash)]?.[method.slice(slash + 1)];
}

/** A client controlling a new auto-approved session on the synthetic engine, in a fresh home. */
async function syntheticSession() {
  const t = testHome();
  const client = await t.client();
  const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
  await client.acquireController(session.id);
  return { t, client, session };
}

/** What the synthetic engine emits per event of `size` bytes. */
function syntheticLine(size: number): Buffer {
  const line = Buffer.alloc(size, 'x');
  line[size - 1] = 0x0a;
  return line;
}

async function collectUntil(sub: AsyncIterable<SessionEvent>, stop: (e: SessionEvent) => boolean): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const e of sub) {
    out.push(e);
    if (stop(e)) break;
  }
  return out;
}

describe('the API derived from the method table', () => {
  it('offers every method of METHODS as client.call and as a namespaced accessor, and the daemon serves each (the experimental ones to a client that took them)', async () => {
    const t = testHome();
    const plain = await t.client();
    expect([...plain.serverInfo.methods].sort()).toEqual(['initialize', ...CLIENT_METHODS.filter((m) => !isExperimentalMethod(m))].sort());
    const client = await t.client({ experimentalApi: true });
    const called: string[] = [];
    // The accessors go through client.call; record what each one calls.
    Object.defineProperty(client, 'call', { value: async (m: string) => void called.push(m) });
    for (const m of CLIENT_METHODS) {
      const fn = accessorOf(client, m);
      expect(typeof fn, `accessor for ${m}`).toBe('function');
      await (fn as (p?: unknown) => Promise<unknown>)({});
    }
    expect(called).toEqual(CLIENT_METHODS);
    for (const m of CLIENT_METHODS) expect(client.serverInfo.methods).toContain(m);
  });

  // tsc on a loaded 2-core machine takes most of a minute: its own deadline and the test's are generous.
  it("type-checks calls against the method table through the package entry ('astra'), and the entry runs", { timeout: 240_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ac-types-'));
    try {
      // An application next to an installed package: node_modules/astra is this repository.
      fs.mkdirSync(path.join(dir, 'node_modules'));
      fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'astra'), 'dir');
      const file = path.join(dir, 'check.mts');
      fs.writeFileSync(
        file,
        `import { AstraClient, OutcomeUnknownError, METHODS } from 'astra';
export async function f(c: AstraClient): Promise<void> {
  const { session } = await c.session.create({ title: 'x', approvalPolicy: 'auto' });
  const started: { turnId: string } = await c.turn.start({ sessionId: session.id, input: { text: 'ls' } });
  const status = await c.call('daemon/status');
  const pid: number = status.pid;
  const now: number = (await c.ping()).now;
  const e: string | undefined = new OutcomeUnknownError('turn/start').idempotencyKey;
  // @ts-expect-error sessionId is required
  await c.session.read({});
  // @ts-expect-error no such method
  await c.call('session/explode', {});
  // @ts-expect-error input is required
  await c.turn.start({ sessionId: session.id });
  // @ts-expect-error approvalPolicy is 'ask' | 'auto'
  await c.session.create({ approvalPolicy: 'sometimes' });
  void [started, pid, now, e, METHODS];
}
`,
      );
      fs.writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            target: 'ES2022',
            skipLibCheck: true,
            types: ['node'],
            typeRoots: [path.join(ROOT, 'node_modules', '@types')],
          },
          files: [file],
        }),
      );
      const run = (args: string[]) =>
        new Promise<string>((resolve) =>
          execFile(process.execPath, args, { cwd: dir, timeout: 180_000 }, (err, stdout, stderr) => resolve(err ? `${stdout}${stderr}` || String(err) : stdout)),
        );
      expect(await run([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'tsconfig.json')])).toBe('');
      fs.writeFileSync(path.join(dir, 'run.mjs'), "import { AstraClient, PROTOCOL_VERSION } from 'astra';\nconsole.log(typeof AstraClient.connect, PROTOCOL_VERSION);\n");
      expect(await run([path.join(dir, 'run.mjs')])).toBe('function 1\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects an unknown method and bad params locally with typed errors, without losing the connection', async () => {
    const t = testHome();
    const client = await t.client();
    const call = client.call.bind(client) as unknown as (m: string, p?: unknown) => Promise<unknown>;
    await expect(call('session/explode', {})).rejects.toMatchObject({ reason: 'method_not_found' });
    await expect(call('session/read', { sessionId: 42 })).rejects.toMatchObject({ reason: 'invalid_params' });
    await expect(client.session.create({ approvalPolicy: 'sometimes' as 'ask' })).rejects.toMatchObject({ reason: 'invalid_params' });
    expect((await client.ping()).now).toBeGreaterThan(0);
  });
});

describe('leases', () => {
  it('fills in the epoch from the held lease, and a stale explicit epoch is refused by the daemon', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ title: 'a' });
    await expect(client.session.archive({ sessionId: session.id })).rejects.toMatchObject({ reason: 'not_controller' });
    const lease = await client.acquireController(session.id);
    expect(lease.epoch).toBeGreaterThan(0);
    const renamed = await client.session.rename({ sessionId: session.id, title: 'b' });
    expect(renamed.session.title).toBe('b');
    expect(renamed.session.epoch).toBe(lease.epoch);
    await expect(client.session.rename({ sessionId: session.id, title: 'c', epoch: lease.epoch - 1 })).rejects.toMatchObject({ reason: 'stale_epoch' });
  });

  it('emits leaseLost when another client takes over, and later writes fail locally with not_controller', async () => {
    const t = testHome();
    const a = await t.client({ clientName: 'a' });
    const b = await t.client({ clientName: 'b' });
    const { session } = await a.session.create({});
    const lease = await a.acquireController(session.id);
    const lost = new Promise<{ sessionId: string; reason: string }>((resolve) => a.once('leaseLost', resolve));
    await expect(b.acquireController(session.id)).rejects.toMatchObject({ reason: 'lease_held' });
    await b.acquireController(session.id, { takeover: true });
    expect(await lost).toMatchObject({ sessionId: session.id, reason: 'takeover' });
    expect(lease.held).toBe(false);
    expect(a.heldLeases.has(session.id)).toBe(false);
    await expect(a.session.archive({ sessionId: session.id })).rejects.toMatchObject({ reason: 'not_controller' });
    expect((await b.session.rename({ sessionId: session.id, title: 'y' })).session.title).toBe('y');
  });

  it('release() gives control up without reporting a lost lease', async () => {
    const t = testHome();
    const a = await t.client({ clientName: 'a' });
    const b = await t.client({ clientName: 'b' });
    const { session } = await a.session.create({});
    const lease = await a.acquireController(session.id);
    let lostEvents = 0;
    a.on('leaseLost', () => lostEvents++);
    await lease.release();
    expect(lease.lost).toBe('released');
    await b.acquireController(session.id);
    await a.ping();
    expect(lostEvents).toBe(0);
  });

  it('close({ releaseLeases }) while reconnecting after a daemon crash waits, reclaims and releases, leaving control free', async () => {
    const t = testHome({ ASTRA_LEASE_GRACE_MS: '30000' });
    const a = await t.client({ clientName: 'a' });
    const { session } = await a.session.create({});
    await a.acquireController(session.id);
    const oldPid = a.daemonPid;
    process.kill(oldPid, 'SIGKILL');
    await waitFor('the client to notice', () => a.state === 'reconnecting');
    await a.close({ releaseLeases: true });
    // Without the release the lease would sit in its 30 s grace and this acquire would be refused.
    const b = await t.client({ clientName: 'b' });
    expect(b.daemonPid).not.toBe(oldPid);
    const lease = await b.acquireController(session.id);
    expect(lease.held).toBe(true);
  });

  it('generates an idempotencyKey for turn/start when none is given', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const sub = await client.subscribe(session.id);
    const { turnId } = await client.turn.start({ sessionId: session.id, input: { text: 'true' } });
    const events = await collectUntil(sub, (e) => e.type === 'turn.completed');
    expect(events.filter((e) => e.type === 'turn.started').map((e) => (e.data as { turnId: string }).turnId)).toEqual([turnId]);
  });
});

describe('subscriptions', () => {
  it('breaking out of a for-await loop unsubscribes at the daemon', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    const sub = await client.subscribe(session.id);
    const mine = async () => (await client.daemon.status()).connections.find((c) => c.id === client.connectionId)!.subscriptions;
    expect(await mine()).toEqual([session.id]);
    for await (const e of sub) {
      expect(e.seq).toBe(1);
      break;
    }
    expect(sub.closed).toBe(true);
    expect(sub.lastSeq).toBe(1);
    expect(await mine()).toEqual([]);
  });

  it('resumes after sinceSeq, calls onEvent and onReplayed in order, and close() ends the stream', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    const lease = await client.acquireController(session.id);
    for (const title of ['one', 'two', 'three']) await client.session.rename({ sessionId: session.id, title });
    const { headSeq } = await client.session.read({ sessionId: session.id, limit: 1 });
    const seen: number[] = [];
    let replayedThrough: number | undefined;
    let ended = false;
    const sub = await client.subscribe(session.id, {
      sinceSeq: 2,
      onEvent: (e) => seen.push(e.seq),
      onReplayed: (through) => (replayedThrough = through),
      onEnd: () => (ended = true),
    });
    await waitFor('the replay', () => replayedThrough !== undefined);
    expect(replayedThrough).toBe(headSeq);
    expect(seen).toEqual(Array.from({ length: headSeq - 2 }, (_, i) => 3 + i));
    await client.session.rename({ sessionId: session.id, title: 'four', epoch: lease.epoch });
    await waitFor('the live event', () => seen.length === headSeq - 1);
    expect(seen[seen.length - 1]).toBe(headSeq + 1);
    expect(() => sub[Symbol.asyncIterator]()).toThrow(AstraError);
    await sub.close();
    expect(ended).toBe(true);
  });

  it('a subscriber dropped as lagging (tiny daemon queue bound) resumes from lastSeq and still gets every event and byte once', async () => {
    const t = testHome({ ASTRA_MAX_QUEUED_BYTES: '4096' });
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const sub = await client.subscribe(session.id);
    await client.turn.start({ sessionId: session.id, input: { text: 'seq 1 1000000' } });
    // Lagging means taking no data at all while the bound's worth of events goes by (a reader that
    // keeps reading is caught up from the journal instead). So this reader stops once, as a hung one
    // would: its event loop is held at the first output until the daemon has journaled (and so
    // published) 3 MiB more of the command's output — far past the 4 KiB bound and the socket's
    // buffers, however fast or slow this machine runs the command.
    const journal = path.join(t.home, 'data', 'sessions', session.id, 'journal.astra');
    let stalled = false;
    const events = await collectUntil(sub, (e) => {
      if (!stalled && e.type === 'command.output') {
        stalled = true;
        const until = fs.statSync(journal).size + 3 * 1024 * 1024;
        const deadline = Date.now() + 30_000;
        while (fs.statSync(journal).size < until) {
          // hold the loop: the socket is not read meanwhile
          if (Date.now() > deadline) throw new Error(`the journal ${journal} did not grow by 3 MiB within 30 s`);
        }
      }
      return e.type === 'turn.completed';
    });
    expect(sub.lagCount).toBeGreaterThan(0);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    // A pseudo-terminal ends lines with \r\n. Compared without a diff: one of 7 MB takes vitest minutes.
    const output = Buffer.concat(events.filter((e) => e.type === 'command.output').map((e) => Buffer.from((e.data as { data: Uint8Array }).data))).toString().replace(/\r\n/g, '\n');
    const expected = Array.from({ length: 1000000 }, (_, i) => `${i + 1}\n`).join('');
    expect(output.length).toBe(expected.length);
    expect(output === expected, 'the output is every line of seq 1 1000000 once, in order').toBe(true);
  });

  it('receives output events of several MiB whole (read straight into their own buffers), live and replayed', async () => {
    const { t, client, session } = await syntheticSession();
    const size = 3 * 1024 * 1024;
    const line = syntheticLine(size);
    const sub = await client.subscribe(session.id);
    await client.turn.start({ sessionId: session.id, input: { text: `count=5 size=${size}` } });
    const live = await collectUntil(sub, (e) => e.type === 'turn.completed');
    await sub.close();
    const again = await client.subscribe(session.id, { sinceSeq: 0 });
    const replayed = await collectUntil(again, (e) => e.type === 'turn.completed');
    for (const events of [live, replayed]) {
      const outputs = events.filter((e) => e.type === 'command.output').map((e) => (e.data as { data: Uint8Array }).data);
      expect(outputs).toHaveLength(5);
      for (const o of outputs) expect(Buffer.from(o.buffer, o.byteOffset, o.length).equals(line)).toBe(true);
    }
  });

  it('every large output event a subscriber saw survives the daemon being SIGKILLed mid-stream, whole; the turn comes back interrupted', async () => {
    const { t, client, session } = await syntheticSession();
    const size = 4 * 1024 * 1024;
    const line = syntheticLine(size);
    const sub = await client.subscribe(session.id);
    await client.turn.start({ sessionId: session.id, input: { text: `count=400 size=${size} batch=1` } });
    let outputs = 0;
    const seen = await collectUntil(sub, (e) => e.type === 'command.output' && ++outputs === 5);
    const pid = client.serverInfo.daemon.pid;
    process.kill(pid, 'SIGKILL');
    await waitFor('the daemon to die', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    await client.close();
    const after = await t.client(); // starts a new daemon on the same data
    expect(after.serverInfo.daemon.pid).not.toBe(pid);
    const events: SessionEvent[] = [];
    for (let sinceSeq = 0; ; ) {
      const r = await after.session.read({ sessionId: session.id, sinceSeq });
      events.push(...r.events);
      if (r.nextSeq === undefined) break;
      sinceSeq = r.nextSeq;
    }
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(events.length).toBeGreaterThanOrEqual(seen.at(-1)!.seq + 1);
    const kept = events.filter((e) => e.type === 'command.output').map((e) => (e.data as { data: Uint8Array }).data);
    // Every output the subscriber saw is kept; the kill came mid-stream (the turn is interrupted, below).
    expect(kept.length).toBeGreaterThanOrEqual(5);
    for (const o of kept) expect(Buffer.from(o.buffer, o.byteOffset, o.length).equals(line)).toBe(true);
    expect(events.filter((e) => e.type === 'turn.completed')).toMatchObject([{ data: { status: 'interrupted' } }]);
  });

  it('a for-await loop that falls behind holds at most maxQueuedBytes: the stream stops at the daemon and resumes from lastSeq, every event once, in order', async () => {
    const { t, client, session } = await syntheticSession();
    const size = 64 * 1024;
    const count = 400; // 25 MiB of output
    const bound = 2 * 1024 * 1024;
    const sub = await client.subscribe(session.id, { maxQueuedBytes: bound });
    await client.turn.start({ sessionId: session.id, input: { text: `count=${count} size=${size} batch=16` } });
    // Nobody reads: the client stops the stream once the bound is reached; the turn runs to its end all the same.
    await waitFor('the client to hold the stream', () => sub.held);
    await waitFor('the turn to end', async () => (await client.session.read({ sessionId: session.id, limit: 1 })).session.state === 'idle');
    expect(sub.held).toBe(true);
    expect(sub.queued.bytes).toBeLessThanOrEqual(bound);
    expect(sub.queued.events).toBeGreaterThan(0);
    const events = await collectUntil(sub, (e) => e.type === 'turn.completed');
    expect(sub.held).toBe(false);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    const outputs = events.filter((e) => e.type === 'command.output');
    expect(outputs).toHaveLength(count);
    for (const o of outputs) expect((o.data as { data: Uint8Array }).data.length).toBe(size);
  });

  it('a held subscription survives the daemon restarting meanwhile: once its loop catches up, it resumes from lastSeq on the new daemon', async () => {
    const { t, client, session } = await syntheticSession();
    const count = 200;
    const sub = await client.subscribe(session.id, { maxQueuedBytes: 1024 * 1024 });
    await client.turn.start({ sessionId: session.id, input: { text: `count=${count} size=65536 batch=16` } });
    await waitFor('the client to hold the stream', () => sub.held);
    await waitFor('the turn to end', async () => (await client.session.read({ sessionId: session.id, limit: 1 })).session.state === 'idle');
    const reconnected = new Promise<{ daemonRestarted: boolean }>((resolve) => client.once('reconnected', resolve));
    process.kill(client.serverInfo.daemon.pid, 'SIGKILL');
    expect((await reconnected).daemonRestarted).toBe(true);
    expect(sub.held).toBe(true);
    const events = await collectUntil(sub, (e) => e.type === 'turn.completed');
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(events.filter((e) => e.type === 'command.output')).toHaveLength(count);
    expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { status: 'completed' } });
  });

  it('refuses a maxQueuedBytes that is not a number above 0', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    for (const bad of [0, -1, Number.NaN, '1' as unknown as number])
      await expect(client.subscribe(session.id, { maxQueuedBytes: bad })).rejects.toMatchObject({ reason: 'invalid_params' });
  });

  it('a second subscription to the same session is refused with a clear error while the first is open', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    const sub = await client.subscribe(session.id);
    await expect(client.subscribe(session.id)).rejects.toMatchObject({ reason: 'invalid_state' });
    await sub.close();
    await (await client.subscribe(session.id)).close();
  });

  it('subscribing to a session that does not exist rejects with not_found', async () => {
    const t = testHome();
    const client = await t.client();
    await expect(client.subscribe('no-such-session')).rejects.toMatchObject({ reason: 'not_found' });
  });

  it('close() ends every for-await loop', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    const sub = await client.subscribe(session.id);
    await waitFor('the replay', () => sub.replayedThrough !== undefined);
    const loop = collectUntil(sub, () => false);
    await client.close();
    expect((await loop).map((e) => e.seq)).toEqual([1]);
    await expect(client.ping()).rejects.toMatchObject({ reason: 'connection_closed' });
  });
});

describe('overload', () => {
  it('600 concurrent reads on one connection, past the daemon in-flight bound of 256, all resolve (overloaded is retried)', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ title: 'busy' });
    const results = await Promise.all(Array.from({ length: 600 }, () => client.session.read({ sessionId: session.id })));
    expect(results.every((r) => r.session.title === 'busy')).toBe(true);
  });
});

describe('approvals', () => {
  it('the onApproval handler answers approval requests; without one the approval stays pending', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'ask' });
    const lease = await client.acquireController(session.id);
    const sub = await client.subscribe(session.id);
    await client.turn.start({ sessionId: session.id, input: { text: 'echo approved' } });
    await collectUntil(sub, (e) => e.type === 'approval.requested');
    await waitFor('the approval to be pending', async () => (await client.daemon.status()).sessions.find((s) => s.id === session.id)?.pendingApprovals === 1);

    const asked: string[] = [];
    client.onApproval((req) => {
      asked.push(req.command);
      return 'approve';
    });
    // The daemon offers pending approvals to each new grant of the lease.
    await lease.release();
    await client.acquireController(session.id);
    const sub2 = await client.subscribe(session.id, { sinceSeq: sub.lastSeq });
    const rest = await collectUntil(sub2, (e) => e.type === 'turn.completed');
    expect(asked).toEqual(['echo approved']);
    expect(rest.find((e) => e.type === 'approval.resolved')?.data).toMatchObject({ decision: 'approve' });
    expect(rest[rest.length - 1]!.data).toMatchObject({ status: 'completed' });
    const output = rest.filter((e) => e.type === 'command.output').map((e) => Buffer.from((e.data as { data: Uint8Array }).data).toString()).join('');
    expect(output).toMatch(/^approved\r?\n$/);
  });
});

describe('liveness', () => {
  it('treats a daemon that stops answering pings as gone and reconnects when it answers again', async () => {
    const t = testHome();
    const client = await t.client({ pingIntervalMs: 100, pingTimeoutMs: 300, reconnect: { initialDelayMs: 50, maxDelayMs: 200, maxElapsedMs: 20_000 } });
    const pid = client.daemonPid;
    const instance = client.instanceId;
    const disconnected = new Promise<{ error: AstraError | undefined }>((resolve) => client.once('disconnected', resolve));
    const reconnected = new Promise<{ daemonRestarted: boolean }>((resolve) => client.once('reconnected', resolve));
    process.kill(pid, 'SIGSTOP');
    try {
      expect((await disconnected).error?.reason).toBe('request_timeout');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect((await reconnected).daemonRestarted).toBe(false);
    expect(client.instanceId).toBe(instance);
    expect((await client.ping()).now).toBeGreaterThan(0);
  });

  it('connect without autoStart and no daemon fails with daemon_not_running', async () => {
    const t = testHome();
    await expect(AstraClient.connect({ clientName: 'x', env: t.env, autoStart: false })).rejects.toMatchObject({ reason: 'daemon_not_running' });
  });
});
