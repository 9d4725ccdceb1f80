import { describe, it, expect, beforeAll, afterEach } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '../../ipc/index.js';
import { AstraError, LIMITS } from '../../protocol/index.js';
import { ensureBuilt, tempDir } from './helpers.js';

const FIXTURE = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures', 'echo-server.mjs');
const children: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(() => ensureBuilt(), 180_000);

afterEach(() => {
  for (const child of children.splice(0)) {
    // It may exit between the check and the kill (a test that killed it itself): ESRCH is fine.
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    }
  }
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function startEchoServer(): Promise<{ child: ChildProcess; socketPath: string }> {
  const dir = tempDir();
  dirs.push(dir);
  const socketPath = path.join(dir, 'echo.sock');
  const child = spawn(process.execPath, [FIXTURE, socketPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`echo server did not start within 10 s: ${stderr}`)), 10_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`echo server exited with ${code}: ${stderr}`)));
  });
  return { child, socketPath };
}

async function connect(socketPath: string): Promise<Connection> {
  const socket = net.connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, label: 'test client' });
}

describe('Connection between two processes over a Unix socket', () => {
  it('resolves 10,000 concurrent requests each to its own response', async () => {
    const { socketPath } = await startEchoServer();
    const conn = await connect(socketPath);
    const requests = Array.from({ length: 10_000 }, (_, i) =>
      conn.request('echo', { i, ts: 1_700_000_000_000 + i, text: 'ü'.repeat(i % 37), bytes: Buffer.from([i & 0xff, (i >> 8) & 0xff]) }),
    );
    expect(conn.pendingRequests).toBe(10_000);
    const results = (await Promise.all(requests)) as { i: number; ts: number; text: string; bytes: Buffer }[];
    results.forEach((r, i) => {
      expect(r.i).toBe(i);
      expect(r.ts).toBe(1_700_000_000_000 + i);
      expect(r.text).toBe('ü'.repeat(i % 37));
      expect([...r.bytes]).toEqual([i & 0xff, (i >> 8) & 0xff]);
    });
    expect(conn.pendingRequests).toBe(0);
    conn.close();
  });

  it('answers out of order by id when the peer replies out of order', async () => {
    const { socketPath } = await startEchoServer();
    const conn = await connect(socketPath);
    const order: number[] = [];
    const delays = [120, 10, 60, 0, 90];
    await Promise.all(delays.map((ms, i) => conn.request('delayed', { ms, i }).then((r) => order.push((r as { i: number }).i))));
    expect(order).toEqual([3, 1, 2, 4, 0]);
    conn.close();
  });

  it('fires request timeouts while other requests still complete', async () => {
    const { socketPath } = await startEchoServer();
    const conn = await connect(socketPath);
    const hung = Array.from({ length: 100 }, () => conn.request('hang', {}, { timeoutMs: 200 }).catch((e: unknown) => e));
    await expect(conn.request('echo', { ok: 1 })).resolves.toEqual({ ok: 1 });
    const errors = (await Promise.all(hung)) as AstraError[];
    for (const e of errors) expect(e.reason).toBe('request_timeout');
    expect(conn.pendingRequests).toBe(0);
    conn.close();
  });

  it('rejects everything pending with connection_closed when the connection is closed or the peer dies', async () => {
    const { socketPath, child } = await startEchoServer();
    const a = await connect(socketPath);
    const pendingA = Array.from({ length: 500 }, () => a.request('hang').catch((e: unknown) => e));
    a.close();
    for (const e of (await Promise.all(pendingA)) as AstraError[]) expect(e.reason).toBe('connection_closed');

    const b = await connect(socketPath);
    const pendingB = Array.from({ length: 500 }, () => b.request('hang').catch((e: unknown) => e));
    await expect(b.request('echo', { alive: true })).resolves.toEqual({ alive: true });
    const closed = new Promise<AstraError | undefined>((resolve) => b.onClose(resolve));
    process.kill(child.pid!, 'SIGKILL');
    for (const e of (await Promise.all(pendingB)) as AstraError[]) {
      expect(e).toBeInstanceOf(AstraError);
      expect(e.reason).toBe('connection_closed');
    }
    await closed;
    expect(b.closed).toBe(true);
  });
});
