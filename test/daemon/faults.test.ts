// Faults a real daemon must survive (issue 20): its socket deleted under a connected client, a
// silent connection, its record altered, a full disk under its log, a slow but steady reader, and
// the reason words it tells its clients when it goes.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Connection, decode } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION, type AstraError } from '../../protocol/index.js';
import { ROOT, envFor, isAlive, readRecordFile, recordPath, runCli, waitFor, useTempHomes, type RecordShape } from '../helpers/processes.js';

const home = useTempHomes();

async function startDaemon(h: string, extra: Record<string, string> = {}): Promise<RecordShape> {
  const r = await runCli(['daemon', 'start'], envFor(h, extra));
  expect(r.code, r.stderr).toBe(0);
  return readRecordFile(h)!;
}

function rawSocket(endpoint: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ path: endpoint });
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** An initialized client connection; `onNote` hears every notification. */
async function client(rec: RecordShape, onNote: (method: string, params: any) => void = () => undefined): Promise<Connection> {
  const conn = new Connection(await rawSocket(rec.endpoint), {
    maxIncomingBytes: LIMITS.maxFrameBytes,
    maxOutgoingBytes: LIMITS.maxRequestBytes,
    requestTimeoutMs: 10_000,
  });
  conn.onNotification(onNote);
  await conn.request('initialize', { protocolVersion: PROTOCOL_VERSION, token: rec.token, clientInfo: { name: 'faults', version: '1' } });
  conn.notify('initialized', {});
  return conn;
}

function closed(conn: Connection): Promise<AstraError | undefined> {
  return new Promise((resolve) => conn.onClose(resolve));
}

function logOf(h: string): string {
  return fs.readFileSync(path.join(h, 'logs', 'daemon.log'), 'utf8');
}

const fast = { ASTRA_SELF_CHECK_MS: '100' };

describe('the socket file deleted', () => {
  it('while a client is connected, the daemon listens on a new socket file, new clients connect, the old one stays served, and nothing stops when it leaves', async () => {
    const h = home();
    const rec = await startDaemon(h, fast);
    const old = await client(rec);
    const { session } = (await old.request('session/create', { title: 'kept' })) as { session: { id: string } };
    fs.unlinkSync(rec.endpoint);
    await waitFor('a new socket file', () => fs.existsSync(rec.endpoint) && fs.lstatSync(rec.endpoint).isSocket(), 10_000);
    const fresh = await client(rec);
    expect(((await fresh.request('ping', {})) as { now: number }).now).toBeGreaterThan(0);
    // The connection accepted by the old server is still served.
    expect(((await old.request('ping', {})) as { now: number }).now).toBeGreaterThan(0);
    const gone = closed(old);
    old.close();
    await gone;
    // Once the daemon has seen the old client go, it still serves, with its runtime open.
    await waitFor('the old connection closed in the log', () => logOf(h).includes('"msg":"connection closed"'), 5_000);
    const read = (await fresh.request('session/read', { sessionId: session.id, sinceSeq: 0 })) as { session: { title: string } };
    expect(read.session.title).toBe('kept');
    const later = await client(rec);
    await later.request('ping', {});
    later.close();
    fresh.close();
    expect(isAlive(rec.pid)).toBe(true);
    expect(logOf(h)).not.toMatch(/could not recreate the socket|EADDRINUSE|socket lost/);
  });
});

describe('params a second implementation may send', () => {
  it('session/list with cursor: nil lists from the start (nil means absent), not internal_error', async () => {
    const rec = await startDaemon(home());
    const conn = await client(rec);
    try {
      const created = (await conn.request('session/create', { title: 'nil cursor' })) as { session: { id: string } };
      const listed = (await conn.request('session/list', { cursor: null, limit: null })) as { sessions: { id: string }[] };
      expect(listed.sessions.map((x) => x.id)).toContain(created.session.id);
    } finally {
      conn.close();
    }
  });
});

describe('subscribe and unsubscribe sent back to back', () => {
  it('the later request wins: an unsubscribe sent right after a subscribe leaves no stream, however the two are answered', async () => {
    const rec = await startDaemon(home());
    const notes: { method: string; params: any }[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    const conn = await client(rec, (method, params) => notes.push({ method, params }));
    try {
      const { session } = (await conn.request('session/create', { title: 'race' })) as { session: { id: string } };
      const { epoch } = (await conn.request('lease/acquire', { sessionId: session.id })) as { epoch: number };
      // Neither is awaited before the other is sent: the daemon handles them concurrently.
      const subscribed = conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
      const unsubscribed = conn.request('session/unsubscribe', { sessionId: session.id });
      await Promise.all([subscribed, unsubscribed]);
      // Events of this write are sent before its answer: none may reach a connection that unsubscribed.
      await conn.request('session/rename', { sessionId: session.id, epoch, title: 'renamed' });
      await conn.request('ping', {});
      expect(notes.filter((n) => n.method === 'session/event' || n.method === 'session/events' || n.method === 'session/replayed')).toEqual([]);
      // And a subscribe after it works as usual.
      await conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
      await waitFor('the backlog', () => notes.some((n) => n.method === 'session/replayed'));
    } finally {
      conn.close();
    }
  });
});

describe('the handshake deadline', () => {
  it('a connection that sends nothing gets a handshake_timeout error frame with a nil id, then is closed', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const sock = await rawSocket(rec.endpoint);
    const chunks: Buffer[] = [];
    sock.on('data', (d: Buffer) => chunks.push(d));
    const started = Date.now();
    await new Promise((r) => sock.once('close', r));
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.handshakeDeadlineMs - 100);
    const reply = Buffer.concat(chunks);
    expect(reply.length).toBeGreaterThan(4);
    const msg = decode(reply.subarray(4, 4 + reply.readUInt32BE(0))) as { id: unknown; error: { code: number; data: { reason: string } } };
    expect(msg.id).toBeNull();
    expect(msg.error.data.reason).toBe('handshake_timeout');
  });
});

describe('the discovery record', () => {
  it('altered to carry another token while the daemon runs is rewritten, and status says it runs', async () => {
    const h = home();
    const rec = await startDaemon(h, fast);
    const tmp = `${recordPath(h)}.tamper.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...rec, token: 'A'.repeat(43) }), { mode: 0o600 });
    fs.renameSync(tmp, recordPath(h));
    await waitFor('the record to carry the daemon\'s token again', () => readRecordFile(h)?.token === rec.token, 10_000);
    expect(logOf(h)).toMatch(/names this instance but was altered/);
    const status = await runCli(['daemon', 'status', '--json'], envFor(h));
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).instanceId).toBe(rec.instanceId);
  });
});

describe('a steady slow reader', () => {
  it('that never stops reading is not closed as slow_consumer, however far behind it falls, and gets every event', async () => {
    const h = home();
    const rec = await startDaemon(h, { ASTRA_SLOW_CONSUMER_MS: '1000', ASTRA_MAX_QUEUED_BYTES: String(512 * 1024) });
    const sock = await rawSocket(rec.endpoint);
    const conn = new Connection(sock, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 60_000 });
    let lastSeq = 0;
    let completed = false;
    const ended = new Promise<void>((resolve) => {
      conn.onNotification((method, params: any) => {
        // Dropped for lag: resubscribe from where it says, as the client library does.
        if (method === 'session/lagged') void conn.request('session/subscribe', { sessionId: params.sessionId, sinceSeq: params.resumeFromSeq }).catch(() => undefined);
        const events = method === 'session/events' ? params.events : method === 'session/event' ? [params] : [];
        for (const e of events) {
          lastSeq = Math.max(lastSeq, e.seq);
          if (e.type === 'turn.completed') {
            completed = true;
            resolve();
          }
        }
      });
    });
    let closedWith: AstraError | undefined | null = null;
    conn.onClose((err) => (closedWith = err));
    await conn.request('initialize', { protocolVersion: PROTOCOL_VERSION, token: rec.token, clientInfo: { name: 'slow-reader', version: '1' } });
    conn.notify('initialized', {});
    const { session } = (await conn.request('session/create', { engine: 'synthetic', approvalPolicy: 'auto' })) as { session: { id: string } };
    await conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
    const lease = (await conn.request('lease/acquire', { sessionId: session.id })) as { epoch: number };
    // From here on the reader takes one socket read every 40 ms: about 1.5 MB/s, steadily.
    sock.on('data', () => sock.pause());
    const reader = setInterval(() => sock.resume(), 40);
    const started = Date.now();
    try {
      await conn.request('turn/start', { sessionId: session.id, epoch: lease.epoch, input: { text: 'count=9000 size=1000' }, idempotencyKey: 'slow' });
      await Promise.race([ended, closed(conn), new Promise((r) => setTimeout(r, 60_000))]);
      expect(closedWith).toBeNull();
      expect(completed).toBe(true);
      // The stream took several times the bound, so the old watchdog would have cut it off.
      expect(Date.now() - started).toBeGreaterThan(3_000);
      expect(lastSeq).toBeGreaterThan(9000);
      expect(logOf(h)).not.toMatch(/slow consumer/);
    } catch (e) {
      process.stderr.write(logOf(h).split('\n').slice(-30).join('\n'));
      throw e;
    } finally {
      clearInterval(reader);
      sock.resume();
      conn.close();
    }
  }, 90_000);
});

describe('daemon/shuttingDown reasons', () => {
  it('daemon/shutdown says stopped, with restart: true restarting, SIGTERM signal, a replacement replaced; the words go in message', async () => {
    const cases: { name: string; act: (rec: RecordShape, h: string, caller: Connection) => Promise<void>; reason: string; message?: RegExp }[] = [
      {
        name: 'shutdown',
        act: async (_r, _h, c) => {
          const r = (await c.request('daemon/shutdown', { reason: 'tests are done' })) as { connections?: number };
          expect(r.connections).toBe(1);
        },
        reason: 'stopped',
        message: /tests are done/,
      },
      { name: 'restart', act: async (_r, _h, c) => void (await c.request('daemon/shutdown', { restart: true })), reason: 'restarting' },
      { name: 'signal', act: async (r) => void process.kill(r.pid, 'SIGTERM'), reason: 'signal', message: /SIGTERM/ },
      {
        name: 'replaced',
        act: async (r, h) => {
          const tmp = `${recordPath(h)}.other.tmp`;
          fs.writeFileSync(tmp, JSON.stringify({ ...r, instanceId: 'another-instance' }), { mode: 0o600 });
          fs.renameSync(tmp, recordPath(h));
        },
        reason: 'replaced',
      },
    ];
    await Promise.all(
      cases.map(async (c) => {
        const h = home();
        const rec = await startDaemon(h, fast);
        let resolveNote!: (p: { reason: string; message?: string }) => void;
        const note = new Promise<{ reason: string; message?: string }>((r) => (resolveNote = r));
        const watcher = await client(rec, (method, params) => method === 'daemon/shuttingDown' && resolveNote(params));
        const caller = await client(rec);
        await c.act(rec, h, caller);
        const got = await note;
        expect(got.reason, c.name).toBe(c.reason);
        if (c.message) expect(got.message, c.name).toMatch(c.message);
        await waitFor(`${c.name}: daemon exit`, () => !isAlive(rec.pid), 10_000);
        watcher.close();
        caller.close();
      }),
    );
  });
});

describe('an uncaught exception in the daemon', () => {
  it("tells every client why (reason error, the message and where to look), flushes the journals, removes its record and exits; the next daemon has the session's every event", async () => {
    const h = home();
    const preload = path.join(ROOT, 'test', 'fixtures', 'throw-on-sigusr2.cjs');
    const env = envFor(h, { NODE_OPTIONS: `--require ${preload}` });
    const r = await runCli(['daemon', 'start'], env);
    expect(r.code, r.stderr).toBe(0);
    const rec = readRecordFile(h)!;
    let resolveNote!: (p: { reason: string; message?: string }) => void;
    const note = new Promise<{ reason: string; message?: string }>((res) => (resolveNote = res));
    const conn = await client(rec, (method, params) => method === 'daemon/shuttingDown' && resolveNote(params));
    const ended = closed(conn);
    const { session } = (await conn.request('session/create', { title: 'before the crash', approvalPolicy: 'auto' })) as { session: { id: string } };
    const { epoch } = (await conn.request('lease/acquire', { sessionId: session.id })) as { epoch: number };
    await conn.request('session/rename', { sessionId: session.id, epoch, title: 'renamed before the crash' });
    const head = ((await conn.request('session/read', { sessionId: session.id, sinceSeq: 0 })) as { events: { seq: number }[] }).events.at(-1)!.seq;

    process.kill(rec.pid, 'SIGUSR2');
    const got = await note;
    expect(got.reason).toBe('error');
    expect(got.message).toMatch(/internal error: injected by the test; see the daemon log/);
    await ended;
    await waitFor('the crashed daemon to exit', () => !isAlive(rec.pid), 10_000);
    expect(readRecordFile(h)).toBeUndefined();
    expect(logOf(h)).toMatch(/uncaught exception; exiting/);

    // A new daemon (without the preload) serves the session with every event the old one acknowledged.
    const again = await startDaemon(h);
    expect(again.pid).not.toBe(rec.pid);
    const c2 = await client(again);
    const read = (await c2.request('session/read', { sessionId: session.id, sinceSeq: 0 })) as { events: { seq: number; type: string; data: { title?: string } }[] };
    // Every acknowledged event, in order without gaps; then the new daemon's: the crashed controller's lease in its grace.
    expect(read.events.slice(0, head).map((e) => e.seq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect(read.events.slice(head), JSON.stringify(read.events.slice(head))).toMatchObject([{ seq: head + 1, type: 'lease.changed', data: { reason: 'restart', epoch } }]);
    expect((read.events[head]!.data as { graceUntil?: number }).graceUntil).toBeGreaterThan(Date.now());
    const listed = (await c2.request('session/list', {})) as { sessions: { id: string; title: string }[] };
    expect(listed.sessions.find((s) => s.id === session.id)?.title).toBe('renamed before the crash');
    c2.close();
  });
});

/** tmpfs needs root: elsewhere the log-disk test is skipped with one line. */
function canMountTmpfs(): boolean {
  return process.getuid?.() === 0 && process.platform === 'linux';
}

describe('a full disk under the log directory', () => {
  const run = canMountTmpfs();
  if (!run) process.stderr.write('skipped: the full-log-disk test mounts a tmpfs and needs root\n');
  it.skipIf(!run)('does not take the daemon down: lines are dropped and counted, and the log says how many once space returns', async () => {
    const h = home();
    const logs = path.join(h, 'logs');
    fs.mkdirSync(logs, { mode: 0o700 });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', logs]);
    try {
      const rec = await startDaemon(h);
      const filler = path.join(logs, 'filler');
      // Fill what is left of the file system.
      const fd = fs.openSync(filler, 'w');
      try {
        for (;;) fs.writeSync(fd, Buffer.alloc(4096, 1));
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
      } finally {
        fs.closeSync(fd);
      }
      // The log file's last page still has room on a tmpfs: fill that too.
      const log = fs.openSync(path.join(logs, 'daemon.log'), 'a');
      try {
        for (;;) fs.writeSync(log, '\n');
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
      } finally {
        fs.closeSync(log);
      }
      // Every connection logs; these lines cannot be written now.
      for (let i = 0; i < 5; i++) (await client(rec)).close();
      const probe = await client(rec);
      const status = (await probe.request('daemon/status', {})) as { logLinesDropped?: number };
      expect(status.logLinesDropped).toBeGreaterThan(0);
      expect(isAlive(rec.pid)).toBe(true);
      fs.rmSync(filler);
      (await client(rec)).close();
      await waitFor('the dropped-lines notice', () => /log lines? could not be written/.test(logOf(h)), 5_000);
      expect(isAlive(rec.pid)).toBe(true);
      probe.close();
      process.kill(rec.pid, 'SIGTERM');
      await waitFor('daemon exit', () => !isAlive(rec.pid), 10_000);
    } finally {
      execFileSync('umount', ['-l', logs]);
    }
  }, 60_000);
});
