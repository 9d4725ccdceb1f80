// Shared helpers for the benchmark suite: process spawning with a deadline, /proc readings, statistics.
// Nothing here asserts a timing: benchmarks report, tests assert.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonEntryPath } from '../client/connect.js';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/ (the compiled package root). */
export const DIST = path.resolve(HERE, '..');
export const WORKER = path.join(HERE, 'worker.js');
export const CLI = path.join(DIST, 'cli', 'main.js');
/** The daemon entry clients start (the bundled one when the build made it). */
export const DAEMON = daemonEntryPath();

/**
 * Round-trip warm-up calls, for every peer alike: enough that the JIT is done before measuring.
 * After 1,000 calls V8 was still optimizing Astra's (larger) call path in the measured calls — its
 * background compiles take a core from the other process on a 2-core machine — and the interleaved
 * p99 ratio was 1.45–4.06×; after 5,000, 1.20–1.65× (bench/ab/ab-rt.mjs, AB_WARMUP, 4 runs of 2 rounds).
 */
export const RT_WARMUP = 10_000;
export const RT_CALLS = 10_000;
export const PAR_CALLS = 50_000;
export const PAR_IN_FLIGHT = 64;

/** The same small event shape for every peer: a `command.output` of `size` bytes, as Astra streams it. */
export function benchEvent(seq: number, data: Buffer | string): { sessionId: string; seq: number; ts: number; type: string; data: unknown } {
  return { sessionId: 's-0123456789abcdef', seq, ts: Date.now(), type: 'command.output', data: { turnId: 't-0001', stream: 'stdout', data } };
}

/** Wall clock in ms with sub-ms resolution, comparable between processes on one machine. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * The round-trip figures, the same loop for every peer: `call` is one request and its answer.
 * Latency of one call at a time (p50/p99 µs), then calls/s with `inFlight` outstanding.
 */
export async function roundTrips(
  call: (n: number) => Promise<unknown>,
  counts: { warmup: number; calls: number; parCalls: number; inFlight: number } = {
    warmup: RT_WARMUP,
    calls: RT_CALLS,
    parCalls: PAR_CALLS,
    inFlight: PAR_IN_FLIGHT,
  },
): Promise<{ p50us: number; p99us: number; callsPerSec: number }> {
  for (let i = 0; i < counts.warmup; i++) await call(i);
  const lat = new Float64Array(counts.calls);
  for (let i = 0; i < counts.calls; i++) {
    const t = process.hrtime.bigint();
    await call(i);
    lat[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  lat.sort();
  let issued = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: counts.inFlight }, async () => {
      while (issued < counts.parCalls) await call(issued++);
    }),
  );
  const parSec = Number(process.hrtime.bigint() - t0) / 1e9;
  return { p50us: percentile(lat, 0.5), p99us: percentile(lat, 0.99), callsPerSec: counts.parCalls / parSec };
}

/**
 * Child side of the interleaved round trips (run.ts rtRound): after the warm-up it says {ready}, then
 * runs what the parent asks on stdin, one JSON line each — {seq: n} (n calls one at a time),
 * {par: n} (n calls, `inFlight` outstanding) — answering {done} after each, and at {report} the
 * figures over all its blocks. Two such processes (bare, Astra) driven block by block in turn see
 * the same load on a shared machine, which separate runs seconds apart do not.
 */
export async function roundTripBlocks(call: (n: number) => Promise<unknown>, inFlight = PAR_IN_FLIGHT): Promise<void> {
  for (let i = 0; i < RT_WARMUP; i++) await call(i);
  const lat: number[] = [];
  let parCalls = 0;
  let parSec = 0;
  let n = 0;
  tell({ ready: true });
  let buf = '';
  for await (const chunk of process.stdin) {
    buf += String(chunk);
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const cmd = JSON.parse(buf.slice(0, nl)) as { seq?: number; par?: number; report?: boolean };
      buf = buf.slice(nl + 1);
      if (cmd.seq !== undefined) {
        for (let i = 0; i < cmd.seq; i++) {
          const t = process.hrtime.bigint();
          await call(n++);
          lat.push(Number(process.hrtime.bigint() - t) / 1000);
        }
      } else if (cmd.par !== undefined) {
        const total = cmd.par;
        let issued = 0;
        const t0 = process.hrtime.bigint();
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (issued < total) {
              issued++;
              await call(n++);
            }
          }),
        );
        parSec += Number(process.hrtime.bigint() - t0) / 1e9;
        parCalls += total;
      } else if (cmd.report) {
        const sorted = Float64Array.from(lat).sort();
        tell({ p50us: percentile(sorted, 0.5), p99us: percentile(sorted, 0.99), callsPerSec: parCalls / parSec, calls: lat.length });
        return;
      }
      tell({ done: true });
    }
  }
}

/**
 * The CPU a process's main thread last ran on (/proc/<pid>/stat field 39), or -1 where there is no
 * /proc. The round trip of one call at a time depends on it more than on either program: on the
 * 2-vCPU VM it was measured on, a client and server last seen on one CPU answered in ≈ 15 µs, and
 * pinned to two (taskset) in ≈ 60 µs — bare and Astra alike — because each message then wakes a
 * halted vCPU (guest halt polling off). rtRound reports it beside the figures.
 */
export function procLastCpu(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[36]);
  } catch {
    return -1;
  }
}

/**
 * Sets the CPUs every thread of `pid` may run on (`taskset -a -p -c`; threads started later inherit
 * it). False where taskset (util-linux) is missing or refuses.
 */
export function pinProcess(pid: number, cpus: string): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore', timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux.

/** CPU time (user + system) a process has used, in µs, from /proc/<pid>/stat (10 ms resolution). */
export function procCpuUs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) * TICK_US;
}

/** Resident set size in bytes, from /proc/<pid>/status. */
export function procRssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : NaN;
}

export function tempDir(prefix: string): string {
  // Short paths: the socket path must fit 103 bytes.
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns a value, or fails after `timeoutMs` with `what` in the message. */
export async function waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined | Promise<T | undefined>, everyMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`bench: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

export interface Child {
  proc: ChildProcess;
  /** Writes one JSON line to the child's stdin (spawned with `stdin: 'pipe'`). */
  send(msg: Record<string, unknown>): void;
  /** Resolves with each JSON line the child prints, in order. */
  nextMessage(timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

const live = new Set<ChildProcess>();

/** Kills (by pid) every child the suite started that is still running. */
export function killAll(): void {
  for (const p of live) {
    try {
      if (p.pid !== undefined) process.kill(p.pid, 'SIGCONT');
      p.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

/** Runs a worker role in a new node process; it talks back with one JSON object per stdout line. */
export function spawnWorker(args: string[], env: NodeJS.ProcessEnv = process.env, nodeArgs: string[] = [], stdin: 'ignore' | 'pipe' = 'ignore'): Child {
  // BENCH_WORKER_NODE_FLAGS: flags for every measuring process (e.g. --cpu-prof, which NODE_OPTIONS refuses).
  const extra = process.env.BENCH_WORKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const proc = spawn(process.execPath, [...extra, ...nodeArgs, WORKER, ...args], { stdio: [stdin, 'pipe', 'inherit'], env });
  live.add(proc);
  const messages: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  let buf = '';
  let exitCode: number | null | undefined;
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stderr.write(`[worker ${args[0]}] ${line}\n`);
        continue;
      }
      const w = waiters.shift();
      if (w) w(msg);
      else messages.push(msg);
    }
  });
  // 'close', not 'exit': a worker's last line may still be in its stdout pipe when 'exit' fires.
  const exited = new Promise<number | null>((resolve) =>
    proc.once('close', (code) => {
      exitCode = code;
      live.delete(proc);
      resolve(code);
    }),
  );
  return {
    proc,
    exited,
    send(msg) {
      proc.stdin!.write(JSON.stringify(msg) + '\n');
    },
    nextMessage(timeoutMs = 120_000) {
      const m = messages.shift();
      if (m) return Promise.resolve(m);
      if (exitCode !== undefined) return Promise.reject(new Error(`bench worker "${args.join(' ')}" exited with ${exitCode} before answering`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`bench worker "${args.join(' ')}" did not answer within ${timeoutMs} ms`)), timeoutMs);
        const onExit = (code: number | null) => {
          clearTimeout(timer);
          reject(new Error(`bench worker "${args.join(' ')}" exited with ${code} before answering`));
        };
        proc.once('close', onExit);
        waiters.push((msg) => {
          clearTimeout(timer);
          proc.off('close', onExit);
          if (typeof msg.error === 'string') reject(new Error(`bench worker "${args.join(' ')}": ${msg.error}`));
          else resolve(msg);
        });
      });
    },
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
        try {
          process.kill(proc.pid, signal);
        } catch {
          // already gone
        }
      }
    },
  };
}

/** Runs a command to completion and returns its wall time in ms. */
export function timeProcess(argv: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<{ ms: number; code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = wallMs();
    const proc = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
    live.add(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`bench: ${argv.join(' ')} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      const ms = wallMs() - t0;
      clearTimeout(timer);
      live.delete(proc);
      if (stderr.trim()) process.stderr.write(stderr);
      resolve({ ms, code, stdout });
    });
  });
}

/** Child side: prints one JSON message for the parent. */
export function tell(msg: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

/** One row of the report: Astra beside its baseline (the bare peer, or tmux for the terminal rows). */
export interface Figure {
  id: string;
  name: string;
  unit: string;
  /** Higher is better (throughput) or lower is better (latency, memory). */
  better: 'higher' | 'lower';
  astra: number | undefined;
  bare: number | undefined;
  jsonrpc: number | undefined;
  grpc: number | undefined;
  /**
   * Astra relative to the bare baseline: the median of the per-run ratios astra / bare when both
   * sides were measured in every run (each run's pair measured minutes apart at most), else the
   * ratio of the medians.
   */
  ratio: number | undefined;
  /** The smallest and largest per-run ratio, when `ratio` is their median. */
  ratioRange?: [number, number];
  target: string;
  pass: boolean | undefined;
}
