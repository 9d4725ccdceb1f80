// ipc micro-benchmark: this ipc layer against a bare Node socket with the same framing and msgpackr
// (the baseline), each over a real Unix socket between two processes. Not part of npm test.
//   node dist/bench/ipc/ipc-bench.js
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '../../ipc/index.js';
import { BareConn } from '../peers/bare.js';
import { roundTrips } from '../lib.js';
import { LIMITS } from '../../protocol/index.js';

const HWM = 256 * 1024;
const STREAM_EVENTS = 200_000;
const RT_CALLS = 20_000;
const RT_WARMUP = 2_000;
const PAR_CALLS = 100_000;
const PAR_IN_FLIGHT = 64;
const REPEATS = 3;

interface Client {
  request(method: string, params: unknown): Promise<unknown>;
  onNotification(handler: () => void): void;
  close(): void;
}

function event(seq: number): unknown {
  return {
    sessionId: 's-0123456789abcdef',
    seq,
    ts: Date.now(),
    type: 'message.delta',
    data: { turnId: 't-0001', text: 'The quick brown fox jumps over the lazy dog, again and again and again and again and again!!' },
  };
}

// The bare baseline (length-prefixed msgpackr, same-tick batching, 256 KiB high-water mark) is the
// suite's: bench/peers/bare.ts.

// ---- servers (child process) ----

async function pace(queued: () => number, waitDrain: () => Promise<void>): Promise<void> {
  await new Promise((r) => setImmediate(r));
  if (queued() >= HWM) await waitDrain();
}

function serve(kind: string, socketPath: string): void {
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    if (kind === 'bare') {
      const conn = new BareConn(socket);
      conn.onMessage = (m) => {
        if (m.method === 'echo') conn.send({ id: m.id, result: m.params });
        else if (m.method === 'stream') {
          void (async () => {
            const count = (m.params as { count: number }).count;
            for (let i = 1; i <= count; i++) {
              conn.send({ method: 'session/event', params: event(i) });
              if (conn.queued >= HWM) await pace(() => conn.queued, () => new Promise((r) => socket.once('drain', r)));
            }
            conn.send({ id: m.id, result: { sent: count } });
          })();
        }
      };
      return;
    }
    const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxRequestBytes, maxOutgoingBytes: LIMITS.maxFrameBytes });
    let drained: (() => void) | undefined;
    conn.onDrain(() => drained?.());
    const stream = async (count: number) => {
      for (let i = 1; i <= count; i++) {
        conn.notify('session/event', event(i));
        if (conn.queuedBytes >= HWM) await pace(() => conn.queuedBytes, () => new Promise<void>((r) => (drained = r)));
      }
      return { sent: count };
    };
    // Echo answers synchronously, like the bare server; only the stream is async.
    conn.onRequest((method, params) => (method === 'echo' ? params : stream((params as { count: number }).count)));
  });
  server.listen(socketPath, () => process.stdout.write('ready\n'));
}

// ---- clients (this process) ----

async function startServer(kind: string, socketPath: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', kind, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${kind} bench server did not start within 10 s`)), 10_000);
    child.stdout!.once('data', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) => reject(new Error(`the ${kind} bench server exited with ${code}`)));
  });
  return child;
}

async function connectClient(kind: string, socketPath: string): Promise<Client> {
  const socket = net.connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  if (kind === 'bare') {
    const conn = new BareConn(socket);
    return {
      request: (m, p) => conn.request(m, p),
      onNotification: (h) => (conn.onMessage = h),
      close: () => socket.destroy(),
    };
  }
  const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 0 });
  return {
    request: (m, p) => conn.request(m, p),
    onNotification: (h) => conn.onNotification(h),
    close: () => conn.destroy(),
  };
}

async function measure(kind: string): Promise<{ p50: number; p99: number; callsPerSec: number; eventsPerSec: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'astra-bench-'));
  const socketPath = path.join(dir, 'b.sock');
  const child = await startServer(kind, socketPath);
  try {
    const client = await connectClient(kind, socketPath);
    let received = 0;
    let onAll: (() => void) | undefined;
    let target = 0;
    client.onNotification(() => {
      if (++received === target) onAll?.();
    });

    const rt = await roundTrips((n) => client.request('echo', { sessionId: 's-0123456789abcdef', n }), {
      warmup: RT_WARMUP,
      calls: RT_CALLS,
      parCalls: PAR_CALLS,
      inFlight: PAR_IN_FLIGHT,
    });

    target = STREAM_EVENTS;
    received = 0;
    const done = new Promise<void>((resolve) => (onAll = resolve));
    const t1 = process.hrtime.bigint();
    const answered = client.request('stream', { count: STREAM_EVENTS });
    await done;
    const streamSec = Number(process.hrtime.bigint() - t1) / 1e9;
    // The answer follows the last event: wait for it, or closing would reject it unhandled.
    await answered;
    client.close();
    return {
      p50: rt.p50us,
      p99: rt.p99us,
      callsPerSec: rt.callsPerSec,
      eventsPerSec: STREAM_EVENTS / streamSec,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Runs both implementations REPEATS times, alternating, and returns medians and ratios. */
export async function runIpcBench(log: (line: string) => void = (l) => console.log(l)): Promise<Record<string, number>> {
  const runs: Record<string, { p50: number[]; p99: number[]; callsPerSec: number[]; eventsPerSec: number[] }> = {
    bare: { p50: [], p99: [], callsPerSec: [], eventsPerSec: [] },
    ipc: { p50: [], p99: [], callsPerSec: [], eventsPerSec: [] },
  };
  for (let r = 0; r < REPEATS; r++)
    for (const kind of ['bare', 'ipc'] as const) {
      const m = await measure(kind);
      for (const k of ['p50', 'p99', 'callsPerSec', 'eventsPerSec'] as const) runs[kind]![k].push(m[k]);
    }
  const out: Record<string, number> = {};
  for (const kind of ['bare', 'ipc'] as const)
    for (const k of ['p50', 'p99', 'callsPerSec', 'eventsPerSec'] as const) out[`${kind}.${k}`] = median(runs[kind]![k]);
  // "slowdown": how many times worse ipc is than bare, for every figure (1.00 = equal, < 1.25 is the target).
  out['slowdown.p50'] = out['ipc.p50']! / out['bare.p50']!;
  out['slowdown.p99'] = out['ipc.p99']! / out['bare.p99']!;
  out['slowdown.callsPerSec'] = out['bare.callsPerSec']! / out['ipc.callsPerSec']!;
  out['slowdown.eventsPerSec'] = out['bare.eventsPerSec']! / out['ipc.eventsPerSec']!;

  const row = (name: string, unit: string, key: string, digits: number) =>
    log(
      `${name.padEnd(34)} bare ${out[`bare.${key}`]!.toFixed(digits).padStart(10)} ${unit.padEnd(8)} ipc ${out[`ipc.${key}`]!.toFixed(digits).padStart(10)} ${unit.padEnd(8)} ×${out[`slowdown.${key}`]!.toFixed(2)}`,
    );
  log(`ipc bench (Unix socket, separate processes, median of ${REPEATS}; × = ipc slowdown vs bare)`);
  row('round trip, 1 in flight, p50', 'µs', 'p50', 1);
  row('round trip, 1 in flight, p99', 'µs', 'p99', 1);
  row(`round trip, ${PAR_IN_FLIGHT} in flight`, 'calls/s', 'callsPerSec', 0);
  row(`stream of ${STREAM_EVENTS} ~200-byte events`, 'events/s', 'eventsPerSec', 0);
  return out;
}

const argv = process.argv;
if (argv[1] && path.resolve(argv[1]) === fileURLToPath(import.meta.url)) {
  if (argv[2] === '--serve') { process.on('SIGINT', () => process.exit(0)); serve(argv[3]!, argv[4]!); }
  else
    runIpcBench().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(e);
        process.exit(1);
      },
    );
}
