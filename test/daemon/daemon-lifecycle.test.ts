// The daemon's start-up race, handshake, self-check and idle exit, with real processes.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Connection, encodeFrame } from '../../ipc/index.js';
import { AstraError, LIMITS, PROTOCOL_VERSION } from '../../protocol/index.js';
import {
  ROOT,
  envFor,
  isAlive,
  jsonLines,
  processesOfHome,
  readRecordFile,
  recordPath,
  runCli,
  runNode,
  startNode,
  waitFor,
  type RecordShape,
  useTempHomes,
} from '../helpers/processes.js';

const CLIENT = path.join(ROOT, 'test', 'fixtures', 'connect-client.mjs');
const home = useTempHomes();

async function startDaemon(h: string, extra: Record<string, string> = {}): Promise<RecordShape> {
  const r = await runCli(['daemon', 'start'], envFor(h, extra));
  expect(r.code, r.stderr).toBe(0);
  return readRecordFile(h)!;
}

function rawConnect(endpoint: string): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ path: endpoint });
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(new Connection(s, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 5_000 }));
    });
    s.once('error', reject);
  });
}

function closed(conn: Connection): Promise<AstraError | undefined> {
  return new Promise((resolve) => conn.onClose(resolve));
}

function initParams(record: RecordShape, over: Record<string, unknown> = {}) {
  return { protocolVersion: PROTOCOL_VERSION, token: record.token, clientInfo: { name: 'test', version: '1' }, ...over };
}

describe('start-up', () => {
  it('16 client processes started at once against no daemon all succeed with exactly one daemon', async () => {
    const h = home();
    const env = envFor(h);
    const results = await Promise.all(Array.from({ length: 16 }, () => runNode([CLIENT], env, 30_000)));
    const parsed = results.map((r) => JSON.parse(r.stdout.trim()));
    for (const p of parsed) expect(p, JSON.stringify(p)).toMatchObject({ ok: true });
    const ids = new Set(parsed.map((p) => p.instanceId));
    expect(ids.size).toBe(1);
    expect(parsed.filter((p) => p.spawned)).toHaveLength(1);
    const daemonPids = processesOfHome(h).filter((pid) =>
      /daemon(-bundle)?\/main\.js/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8')),
    );
    expect(daemonPids).toEqual([parsed[0].pid]);
  });

  // The spawn lock vanishing under a client (another process took it over as stale at that moment,
  // as happens on a loaded machine) was a raw ENOENT for spawn.lock.lock. A busy process removes
  // the lock directory over and over: it widens that moment and loads the machine.
  it('16 client processes at once while another process keeps taking the spawn lock over: all succeed, on one daemon', async () => {
    const h = home();
    const env = envFor(h);
    fs.mkdirSync(path.join(h, 'run'), { mode: 0o700 });
    const lockDir = path.join(h, 'run', 'spawn.lock.lock');
    const stealer = startNode(
      ['-e', 'const fs=require("fs");const end=Date.now()+90000;while(Date.now()<end){try{fs.rmdirSync(process.argv[1])}catch{}}', lockDir],
      env,
    );
    try {
      const results = await Promise.all(Array.from({ length: 16 }, () => runNode([CLIENT], env, 60_000)));
      const parsed = results.map((r) => JSON.parse(r.stdout.trim()) as { ok: boolean; instanceId?: string; message?: string });
      for (const p of parsed) expect(p, JSON.stringify(p)).toMatchObject({ ok: true });
      expect(new Set(parsed.map((p) => p.instanceId)).size).toBe(1);
    } finally {
      stealer.kill('SIGKILL');
    }
    const daemonPids = await waitFor('the start-up race decided (losing daemons exit)', () => {
      const pids = processesOfHome(h).filter((pid) => /daemon(-bundle)?\/main\.js/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8')));
      return pids.length === 1 && pids;
    }, 20_000);
    expect(daemonPids).toEqual([readRecordFile(h)!.pid]);
  });

  it('a daemon that cannot start: the client fails with spawn_failed quoting what the daemon logged', async () => {
    const h = home();
    const r = await runCli(['daemon', 'start'], envFor(h, { ASTRA_IDLE_TIMEOUT_MS: 'soon' }));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the daemon exited with code 2 before answering/);
    expect(r.stderr).toMatch(/FATAL daemon failed to start: ASTRA_IDLE_TIMEOUT_MS must be a number of milliseconds/);
    expect(r.stderr).not.toMatch(/"level"/);
    expect(processesOfHome(h)).toEqual([]);
  });

  it('after the daemon is SIGKILLed the next client clears the leftovers and starts a new instance', async () => {
    const h = home();
    const env = envFor(h);
    const first = await startDaemon(h);
    process.kill(first.pid, 'SIGKILL');
    await waitFor('daemon death', () => !isAlive(first.pid));
    expect(fs.existsSync(recordPath(h))).toBe(true);
    expect(fs.existsSync(first.endpoint)).toBe(true);
    const r = await runNode([CLIENT], env);
    const out = JSON.parse(r.stdout.trim());
    expect(out, JSON.stringify(out)).toMatchObject({ ok: true, spawned: true });
    expect(out.instanceId).not.toBe(first.instanceId);
    expect(readRecordFile(h)!.instanceId).toBe(out.instanceId);
  });

  it('a client with autoStart off and no daemon gets daemon_not_running naming the fix', async () => {
    const h = home();
    const { connectOrSpawn } = await import('../../client/connect.js');
    const err = await connectOrSpawn({ clientName: 't', autoStart: false, env: envFor(h) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AstraError);
    expect((err as AstraError).reason).toBe('daemon_not_running');
    expect((err as AstraError).message).toMatch(/astra daemon start/);
  });
});

describe('handshake', () => {
  it('a wrong token gets unauthorized and the connection is closed', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const conn = await rawConnect(rec.endpoint);
    const done = closed(conn);
    const err = await conn.request('initialize', initParams(rec, { token: 'x'.repeat(43) })).catch((e: unknown) => e);
    expect((err as AstraError).reason).toBe('unauthorized');
    await done;
  });

  it('a connection that sends nothing within 2 s is closed', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const conn = await rawConnect(rec.endpoint);
    const started = Date.now();
    await closed(conn);
    const elapsed = Date.now() - started;
    // Not before the deadline (how long after it the daemon got to it depends on the machine).
    expect(elapsed).toBeGreaterThanOrEqual(LIMITS.handshakeDeadlineMs - 100);
  });

  it('a request before initialized gets not_initialized; after it the same request works', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const conn = await rawConnect(rec.endpoint);
    const init = (await conn.request('initialize', initParams(rec))) as Record<string, unknown>;
    expect(init).toMatchObject({ instanceId: rec.instanceId, protocolVersion: 1 });
    expect(init.limits).toEqual({ maxRequestBytes: 131072, maxFrameBytes: 8388608, maxInputChars: LIMITS.maxInputChars });
    expect(init.methods).toEqual(expect.arrayContaining(['initialize', 'ping', 'daemon/status', 'daemon/shutdown', 'turn/start']));
    const err = await conn.request('ping', {}).catch((e: unknown) => e);
    expect((err as AstraError).reason).toBe('not_initialized');
    conn.notify('initialized', {});
    const asked = Date.now();
    const pong = (await conn.request('ping', {})) as { now: number };
    // The daemon's clock when it answered: between the question and the answer (same machine).
    expect(pong.now).toBeGreaterThanOrEqual(asked);
    expect(pong.now).toBeLessThanOrEqual(Date.now());
    conn.close();
  });

  it('an unsupported protocol version gets incompatible_protocol naming both versions and the fix', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const conn = await rawConnect(rec.endpoint);
    const done = closed(conn);
    const err = (await conn.request('initialize', initParams(rec, { protocolVersion: 99 })).catch((e: unknown) => e)) as AstraError;
    expect(err.reason).toBe('incompatible_protocol');
    expect(err.message).toMatch(/99/);
    expect(err.message).toMatch(/speaks 1/);
    expect(err.message).toMatch(/astra daemon restart/);
    expect(err.data).toMatchObject({ idle: true, supported: { min: 1, max: 1 } });
    await done;
    // With another client connected the daemon is not idle: nobody may replace it.
    const other = await rawConnect(rec.endpoint);
    await other.request('initialize', initParams(rec));
    other.notify('initialized', {});
    const again = await rawConnect(rec.endpoint);
    const busy = (await again.request('initialize', initParams(rec, { protocolVersion: 99 })).catch((e: unknown) => e)) as AstraError;
    expect(busy.data).toMatchObject({ idle: false });
    other.close();
  });

  it('a connection that goes silent (no frame, not even ping) past ASTRA_SILENT_CONNECTION_MS is closed', async () => {
    const h = home();
    const rec = await startDaemon(h, { ASTRA_SILENT_CONNECTION_MS: '500' });
    const silent = await rawConnect(rec.endpoint);
    await silent.request('initialize', initParams(rec));
    silent.notify('initialized', {});
    const talker = await rawConnect(rec.endpoint);
    await talker.request('initialize', initParams(rec));
    talker.notify('initialized', {});
    const started = Date.now();
    const gone = closed(silent);
    // The talker pings now and then, as the client library does, and stays.
    const timer = setInterval(() => void talker.request('ping', {}).catch(() => undefined), 100);
    try {
      await gone;
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(talker.closed).toBe(false);
      await talker.request('ping', {});
    } finally {
      clearInterval(timer);
      talker.close();
    }
  });

  it('a wrong instanceId gets wrong_instance', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const conn = await rawConnect(rec.endpoint);
    const err = (await conn.request('initialize', initParams(rec, { instanceId: 'someone-else' })).catch((e: unknown) => e)) as AstraError;
    expect(err.reason).toBe('wrong_instance');
  });

  it('an oversize frame gets frame_too_large and the connection is closed; the daemon lives on', async () => {
    const h = home();
    const rec = await startDaemon(h);
    const sock = net.createConnection({ path: rec.endpoint });
    await new Promise((r) => sock.once('connect', r));
    const chunks: Buffer[] = [];
    sock.on('data', (d: Buffer) => chunks.push(d));
    const header = Buffer.alloc(4);
    header.writeUInt32BE(LIMITS.maxRequestBytes + 1);
    sock.write(header);
    await new Promise((r) => sock.once('close', r));
    const reply = Buffer.concat(chunks);
    const { decode } = await import('../../ipc/index.js');
    const msg = decode(reply.subarray(4, 4 + reply.readUInt32BE(0))) as { error: { data: { reason: string } } };
    expect(msg.error.data.reason).toBe('frame_too_large');
    expect(isAlive(rec.pid)).toBe(true);
    void encodeFrame;
  });
});

describe('staying true and idle exit', () => {
  const fast = { ASTRA_SELF_CHECK_MS: '100' };

  it('exits when the record is overwritten by another instance', async () => {
    const h = home();
    const rec = await startDaemon(h, fast);
    // Another instance writes its record the way daemons do: atomically.
    const tmp = `${recordPath(h)}.other.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...rec, instanceId: 'another-instance' }), { mode: 0o600 });
    fs.renameSync(tmp, recordPath(h));
    await waitFor('daemon exit', () => !isAlive(rec.pid), 10_000);
    // It must not remove the other instance's record.
    expect(readRecordFile(h)!.instanceId).toBe('another-instance');
  });

  it('recreates its socket (and record) when the socket file is deleted', async () => {
    const h = home();
    const rec = await startDaemon(h, fast);
    fs.unlinkSync(rec.endpoint);
    await waitFor('socket back', () => fs.existsSync(rec.endpoint));
    const status = await runCli(['daemon', 'status', '--json'], envFor(h));
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).instanceId).toBe(rec.instanceId);
  });

  it('exits after the idle timeout with no client, and not while a client is connected', async () => {
    const h = home();
    const env = envFor(h, { ASTRA_IDLE_TIMEOUT_MS: '1500' });
    // The holder, a connection from this process, starts the daemon itself and connects as soon as
    // it is ready (a separate `astra daemon start` left a gap without clients before the holder came,
    // which the timeout had to outlast on a loaded machine); it stays connected past the timeout.
    const { connectOrSpawn } = await import('../../client/connect.js');
    const { conn, spawned } = await connectOrSpawn({ clientName: 'holder', env });
    expect(spawned).toBe(true);
    const rec = readRecordFile(h)!;
    // The idle timer fires while the holder is connected, and the daemon stays: it logs so.
    const logFile = path.join(h, 'logs', 'daemon.log');
    await waitFor('the idle timeout to pass while busy', () => fs.readFileSync(logFile, 'utf8').includes('idle timeout passed while busy'), 30_000);
    expect(isAlive(rec.pid)).toBe(true);
    const startedIdle = Date.now();
    conn.destroy();
    await waitFor('idle exit', () => !isAlive(rec.pid), 30_000);
    expect(Date.now() - startedIdle).toBeGreaterThanOrEqual(500);
    expect(fs.existsSync(recordPath(h))).toBe(false);
    const log = fs.readFileSync(path.join(h, 'logs', 'daemon.log'), 'utf8');
    expect(log).toMatch(/idle/);
  });

  it('--idle-timeout on start is honoured and shown by status', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start', '--idle-timeout', '45s'], env)).code).toBe(0);
    const s = JSON.parse((await runCli(['daemon', 'status', '--json'], env)).stdout);
    expect(s.idleTimeoutMs).toBe(45_000);
  });
});
