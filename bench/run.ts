// The benchmark suite (`npm run bench`): Astra end to end — real daemon, validation, leases, journal,
// fan-out, client library — beside a bare framed-msgpack socket (the baseline), vscode-jsonrpc and
// grpc-js, in one run, as separate processes over real Unix sockets. Every figure is the median of
// REPEATS runs and is printed with its ratio to the baseline measured in the same run. Writes
// bench/REPORT.md and bench/results.json. Not part of npm test; nothing here asserts a timing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runIpcBench } from './ipc/ipc-bench.js';
import { runJournalBench } from './journal/journal-bench.js';
import { CHAT_OBSERVERS, LONG_ROUNDS, LONG_TOKENS, runChatBench, type ChatFigures } from './chat/chat-bench.js';
import { DaemonProc } from './daemon-proc.js';
import { runFromTests } from './from-tests.js';
import { runSoak } from './soak.js';
import { runTerminalBench } from './terminal/terminal-bench.js';
import { terminalFigures, writeTerminalTable, type TerminalResult } from './terminal/terminal-report.js';
import { directIOUsable, giveStage, takeStage } from '../journal/direct-io.js';
import { CLI, HERE, PAR_CALLS, PAR_IN_FLIGHT, RT_CALLS, killAll, median, pinProcess, procLastCpu, procRssBytes, sleep, spawnWorker, tempDir, timeProcess, waitFor, wallMs, type Child, type Figure } from './lib.js';

const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const STREAM_EVENTS = 200_000;
const EVENT_BYTES = 200;
/**
 * Every measuring client first streams this much unmeasured, in the same process (a whole stream of
 * small events; 20 MiB of large output): each figure is the steady state of long-running processes,
 * JIT-compiled and with grown heaps, on both ends — alike for every side.
 */
const WARMUP_EVENTS = STREAM_EVENTS;
const BIG_WARMUP_MIB = 20;
const BIG_BYTES = 4 * 1024 * 1024;
const BIG_EVENTS = 50; // 200 MiB per run
const SHELL_BIG = `head -c ${BIG_EVENTS * 4}M /dev/zero`;
const CHUNK_BYTES = 64 * 1024;
const CHUNKED_EVENTS = (BIG_EVENTS * BIG_BYTES) / CHUNK_BYTES;
const FAN_CLIENTS = 16;
const FAN_EVENTS = Number(process.env.BENCH_FAN_EVENTS ?? 50_000);
const IDLE_CONNECTIONS = 100;
const FLOOD_EVENTS = 50_000;
const STARTUP_REPEATS = 5;
const PEERS = ['bare', 'jsonrpc', 'grpc'] as const;
/** The soak row (bench/soak.md): this many seconds of mixed traffic, then a minute idle, once. */
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 30);
const SOAK_IDLE_SECONDS = 60;
/**
 * BENCH_ONLY=peers,astra,cold,fan,startup,memory,soak,tests,journal,ipc,chat,terminal runs a subset (for profiling); the
 * default is all. BENCH_ONLY=rt runs only the round trips of bare and Astra, beside each other
 * (the full run measures them in `peers` and `astra`).
 */
const ONLY = process.env.BENCH_ONLY?.split(',');
const runs = (section: string): boolean => !ONLY || ONLY.includes(section);
/**
 * Where the round trip's client and server processes run while one call at a time is measured:
 * `one-cpu` (the default; both pairs on CPU 0), `two-cpus` (servers on CPU 1, clients on CPU 0) or
 * `free` (the scheduler decides). On the 2-vCPU VM left free, the pair that finished its warm-up
 * last — alone on the machine — was usually split over both vCPUs, where each message wakes a halted
 * vCPU (p50 ≈ 60–75 µs instead of ≈ 15): warmed up last on purpose, bare measured 64–73 µs in 3 of 4
 * runs and Astra 14–17; warmed up together, Astra (slower to warm up) landed split in about half the
 * runs. Pinned, both peers are measured in the same placement every run.
 */
const RT_PLACEMENT = process.env.BENCH_RT_PLACEMENT ?? 'one-cpu';
if (!['one-cpu', 'two-cpus', 'free'].includes(RT_PLACEMENT)) throw new Error(`bench: BENCH_RT_PLACEMENT is one-cpu, two-cpus or free, not "${RT_PLACEMENT}"`);
/** The bare and Astra round trips are measured together, interleaved (rtRound), whenever both run. */
const INTERLEAVED_RT = (runs('peers') && runs('astra')) || ONLY?.includes('rt') === true;
type Kind = (typeof PEERS)[number] | 'astra';

/** The source tree's bench/ folder (this file runs from dist/bench/). */
const SRC_BENCH = path.resolve(HERE, '..', '..', 'bench');

type Samples = Record<string, Partial<Record<Kind, number[]>>>;
const samples: Samples = {};
function record(figure: string, kind: Kind, value: number): void {
  ((samples[figure] ??= {})[kind] ??= []).push(value);
}
function med(figure: string, kind: Kind): number | undefined {
  const xs = samples[figure]?.[kind];
  return xs && xs.length ? median(xs) : undefined;
}

function log(line: string): void {
  process.stdout.write(line + '\n');
}

// ---- peers: bare, vscode-jsonrpc, grpc-js ----

async function startPeerServer(kind: string, dir: string): Promise<{ child: Child; socketPath: string; pid: number }> {
  const socketPath = path.join(dir, `${kind}.sock`);
  const child = spawnWorker(['serve', kind, socketPath]);
  const msg = await child.nextMessage(15_000);
  return { child, socketPath, pid: Number(msg.pid) };
}

/** Runs `fn` against a fresh peer server of `kind` in its own temp dir; stops the server and removes the dir after. */
async function withPeerServer<T>(kind: (typeof PEERS)[number] | 'bare-durable', fn: (server: { child: Child; socketPath: string; pid: number }) => Promise<T>): Promise<T> {
  const dir = tempDir('astra-bench-');
  const server = await startPeerServer(kind, dir);
  try {
    return await fn(server);
  } finally {
    server.child.kill();
    await server.child.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` against a fresh daemon (its own ASTRA_HOME); stops it after. */
async function withDaemon<T>(fn: (daemon: DaemonProc) => Promise<T>): Promise<T> {
  const daemon = new DaemonProc();
  await daemon.start();
  try {
    return await fn(daemon);
  } finally {
    await daemon.stop();
  }
}

async function peerRound(kind: (typeof PEERS)[number]): Promise<void> {
  await withPeerServer(kind, async (server) => {
    // The bare round trip is measured beside Astra's (rtRound).
    const rt = kind === 'bare' && INTERLEAVED_RT ? undefined : await spawnWorker(['peer', kind, 'rt', server.socketPath]).nextMessage();
    if (rt) {
      record('rt.p50us', kind, Number(rt.p50us));
      record('rt.p99us', kind, Number(rt.p99us));
      record('rt.callsPerSec', kind, Number(rt.callsPerSec));
    }
    const st = await spawnWorker(['peer', kind, 'stream', server.socketPath, String(server.pid), String(STREAM_EVENTS), String(EVENT_BYTES), String(WARMUP_EVENTS)]).nextMessage();
    record('stream.eventsPerSec', kind, Number(st.eventsPerSec));
    record('stream.clientCpuUs', kind, Number(st.clientCpuUsPerEvent));
    record('stream.serverCpuUs', kind, Number(st.serverCpuUsPerEvent));
    const big = await spawnWorker(['peer', kind, 'stream', server.socketPath, String(server.pid), String(BIG_EVENTS), String(BIG_BYTES), String(BIG_WARMUP_MIB / 4)]).nextMessage();
    record('big.mbPerSec', kind, Number(big.mbPerSec));
    let chunked = '';
    if (kind === 'bare') {
      // Astra's command output row is compared with the same 4 MiB frames; its 64 KiB row with 64 KiB frames.
      record('bigShell.mbPerSec', kind, Number(big.mbPerSec));
      record('bigWarm.mbPerSec', kind, Number(big.mbPerSec));
      const c = await spawnWorker(['peer', kind, 'stream', server.socketPath, String(server.pid), String(CHUNKED_EVENTS), String(CHUNK_BYTES), String(BIG_WARMUP_MIB * 16)]).nextMessage();
      record('big64k.mbPerSec', kind, Number(c.mbPerSec));
      chunked = `; 64 KiB frames ${Number(c.mbPerSec).toFixed(0)} MB/s`;
    }
    if (kind === 'bare') chunked += `; durable stream ${Math.round(await durableBareStream('streamDurable.eventsPerSec', WARMUP_EVENTS))} ev/s`;
    const rtLine = rt ? `rt p50 ${Number(rt.p50us).toFixed(1)} µs, ${Math.round(Number(rt.callsPerSec))} calls/s; ` : '';
    log(`  ${kind.padEnd(8)} ${rtLine}stream ${Math.round(Number(st.eventsPerSec))} ev/s; 4 MiB ${Number(big.mbPerSec).toFixed(0)} MB/s${chunked}`);
  });
}

/**
 * The streaming row against the durable bare server (bench/peers/bare.ts BareJournal: each turn's
 * frames written to a file before the socket, fsync ≤ 5 ms later), recorded as `figure`'s bare side.
 */
async function durableBareStream(figure: string, warmup?: number): Promise<number> {
  return await withPeerServer('bare-durable', async (server) => {
    const args = ['peer', 'bare', 'stream', server.socketPath, String(server.pid), String(STREAM_EVENTS), String(EVENT_BYTES)];
    const st = await spawnWorker(warmup === undefined ? args : [...args, String(warmup)]).nextMessage();
    record(figure, 'bare', Number(st.eventsPerSec));
    return Number(st.eventsPerSec);
  });
}

async function peerFanOut(kind: (typeof PEERS)[number]): Promise<void> {
  await withPeerServer(kind, async (server) => {
    const clients = Array.from({ length: FAN_CLIENTS }, () => spawnWorker(['peer', kind, 'fan', server.socketPath, String(FAN_EVENTS)]));
    await Promise.all(clients.map((c) => c.nextMessage(30_000)));
    const trigger = spawnWorker(['peer', kind, 'trigger', server.socketPath, String(FAN_EVENTS), String(EVENT_BYTES)]);
    const ends = await Promise.all(clients.map((c) => c.nextMessage()));
    const t = await trigger.nextMessage();
    fanFigures(kind, Number(t.startMs), ends.map((e) => Number(e.endMs)));
  });
}

/**
 * 256 MiB written to a new file (1 MiB per writeSync, nothing else) twice: the file is deleted
 * after each. On this VM the first write is often several times slower than the second: memory the
 * guest has not touched lately (or gave back) costs a fault to the host per page, while the pages a
 * deleted file frees are ready at once. The second figure is the bare side of the "runtime alone"
 * row (every byte of Astra's output is journaled before anyone sees it); the freed pages serve the
 * first Astra journal that follows, so Astra's large-output rows (each on a fresh daemon whose home
 * is deleted afterwards) write into memory the VM has already given, like every later one does.
 */
function diskWriteRound(): void {
  const chunk = Buffer.alloc(1024 * 1024, 0x78);
  const total = 256 * 1024 * 1024;
  for (const figure of ['bigDisk.coldMBPerSec', 'bigDisk.mbPerSec']) {
    const dir = tempDir('astra-bench-disk-');
    const file = path.join(dir, 'out');
    const fd = fs.openSync(file, 'wx');
    const t = process.hrtime.bigint();
    for (let at = 0; at < total; at += chunk.length) fs.writeSync(fd, chunk, 0, chunk.length, at);
    const sec = Number(process.hrtime.bigint() - t) / 1e9;
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
    record(figure, 'bare', total / sec / 1e6);
  }
  // The same with O_DIRECT, 4 MiB per write from a page-aligned buffer, as the journal writes large records.
  const stage = directIOUsable() ? takeStage() : undefined;
  if (stage) {
    const dir = tempDir('astra-bench-disk-');
    const fd = fs.openSync(path.join(dir, 'out'), fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_DIRECT!, 0o600);
    const block = 4 * 1024 * 1024;
    stage.fill(0x78, 0, block);
    const t = process.hrtime.bigint();
    for (let at = 0; at < total; at += block) fs.writeSync(fd, stage, 0, block, at);
    const sec = Number(process.hrtime.bigint() - t) / 1e9;
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
    giveStage(stage);
    record('bigDisk.directMBPerSec', 'bare', total / sec / 1e6);
  }
  const direct = med('bigDisk.directMBPerSec', 'bare');
  log(
    `  disk     256 MiB to a new file: ${med('bigDisk.coldMBPerSec', 'bare')!.toFixed(0)} MB/s first, ${med('bigDisk.mbPerSec', 'bare')!.toFixed(0)} MB/s again` +
      (direct === undefined ? '' : `, ${direct.toFixed(0)} MB/s with O_DIRECT`),
  );
}

function fanFigures(kind: Kind, startMs: number, endsMs: number[]): void {
  const last = Math.max(...endsMs);
  const aggregate = (FAN_CLIENTS * FAN_EVENTS) / ((last - startMs) / 1000);
  record('fan.aggregateEventsPerSec', kind, aggregate);
  record('fan.slowestEventsPerSec', kind, FAN_EVENTS / ((last - startMs) / 1000));
  record('fan.fastestEventsPerSec', kind, FAN_EVENTS / ((Math.min(...endsMs) - startMs) / 1000));
  log(`  ${kind.padEnd(8)} fan-out ×${FAN_CLIENTS}: ${Math.round(aggregate)} events/s aggregate, slowest client ${Math.round(FAN_EVENTS / ((last - startMs) / 1000))} events/s`);
}

// ---- Astra through the real daemon ----

/**
 * Writes and deletes 512 MiB, so that the page cache a journal fills next is memory this VM has just
 * used: here, memory the guest has not touched for a few seconds costs a fault to the host per page
 * (see diskWriteRound), which no process but a writer of new files pays. Only for the row that says so.
 */
function touchMemory(): void {
  const dir = tempDir('astra-bench-touch-');
  const chunk = Buffer.alloc(4 * 1024 * 1024, 0x78);
  const fd = fs.openSync(path.join(dir, 'scratch'), 'wx');
  for (let i = 0; i < 128; i++) fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * The cold streaming row: what a user pays on attaching to a daemon that just started. Bare: a
 * fresh server process and a fresh client process; Astra: a fresh daemon and a fresh client
 * process. Neither streams anything before the measured 200,000 events (no warm-up, unlike the
 * streaming row), so start-up, lazy compilation and heap growth are in the figure on both ends.
 */
async function coldRound(): Promise<void> {
  await withPeerServer('bare', async (server) => {
    const st = await spawnWorker(['peer', 'bare', 'stream', server.socketPath, String(server.pid), String(STREAM_EVENTS), String(EVENT_BYTES)]).nextMessage();
    record('streamCold.eventsPerSec', 'bare', Number(st.eventsPerSec));
  });
  await durableBareStream('streamColdDurable.eventsPerSec');
  await withDaemon(async (daemon) => {
    const st = await spawnWorker(['astra', 'stream', daemon.home, 'synthetic', `count=${STREAM_EVENTS} size=${EVENT_BYTES}`]).nextMessage();
    if (st.events !== STREAM_EVENTS) throw new Error(`bench: the cold astra stream delivered ${String(st.events)} of ${STREAM_EVENTS} events`);
    record('streamCold.eventsPerSec', 'astra', Number(st.eventsPerSec));
    record('streamColdDurable.eventsPerSec', 'astra', Number(st.eventsPerSec));
  });
  log(`  cold     stream bare ${Math.round(samples['streamCold.eventsPerSec']!.bare!.at(-1)!)} ev/s, astra ${Math.round(samples['streamCold.eventsPerSec']!.astra!.at(-1)!)} ev/s`);
}

/**
 * The round trips of bare and Astra, interleaved: a bare client process and an Astra client process
 * (each against a fresh server, each warmed up) take turns in blocks — 200 calls one at a time, then
 * 5,000 with 64 in flight — so both see the same load. On a shared machine a p99 measured seconds
 * apart from its baseline compares two different loads (the same code measured 1.0–2.4× that way).
 */
async function rtRound(): Promise<void> {
  const SEQ_BLOCK = 200;
  const PAR_BLOCK = 5_000;
  let placement = '';
  await withPeerServer('bare', async (server) => {
    await withDaemon(async (daemon) => {
      const bareRt = spawnWorker(['peer', 'bare', 'rtblocks', server.socketPath], process.env, [], 'pipe');
      const astraRt = spawnWorker(['astra', 'rtblocks', daemon.home], process.env, [], 'pipe');
      // The same placement for both pairs, from the warm-up to the end of the one-at-a-time blocks
      // (see RT_PLACEMENT); the 64-in-flight blocks run where the scheduler puts them.
      const pairs = [
        [server.pid, bareRt.proc.pid!],
        [daemon.pid, astraRt.proc.pid!],
      ] as const;
      const pin = (serverCpus: string, clientCpus: string) => pairs.every(([s, c]) => pinProcess(s, serverCpus) && pinProcess(c, clientCpus));
      const allCpus = `0-${os.cpus().length - 1}`;
      const pinned = RT_PLACEMENT === 'one-cpu' ? pin('0', '0') : RT_PLACEMENT === 'two-cpus' ? pin('1', '0') : false;
      await Promise.all([bareRt.nextMessage(30_000), astraRt.nextMessage(30_000)]);
      const turn = async (w: typeof bareRt, msg: Record<string, unknown>) => {
        w.send(msg);
        await w.nextMessage();
      };
      // Where each pair ran, read after each of its one-at-a-time blocks (see procLastCpu): a few
      // reads of /proc by this process, which is awake between turns anyway.
      const serverPid = new Map([[bareRt, server.pid], [astraRt, daemon.pid]]);
      const oneCpu = new Map([[bareRt, 0], [astraRt, 0]]);
      let placements = 0;
      for (let i = 0; i < RT_CALLS / SEQ_BLOCK; i++) {
        for (const w of i % 2 ? [astraRt, bareRt] : [bareRt, astraRt]) {
          await turn(w, { seq: SEQ_BLOCK });
          const c = procLastCpu(w.proc.pid!);
          if (c >= 0 && c === procLastCpu(serverPid.get(w)!)) oneCpu.set(w, oneCpu.get(w)! + 1);
        }
        placements++;
      }
      placement = `; ${pinned ? `pinned ${RT_PLACEMENT}` : 'placed by the scheduler'}: client and server on one CPU after ${oneCpu.get(astraRt)}/${placements} blocks for astra, ${oneCpu.get(bareRt)}/${placements} for bare`;
      if (RT_PLACEMENT !== 'free') pin(allCpus, allCpus);
      for (let i = 0; i < PAR_CALLS / PAR_BLOCK; i++)
        for (const w of i % 2 ? [astraRt, bareRt] : [bareRt, astraRt]) await turn(w, { par: PAR_BLOCK });
      bareRt.send({ report: true });
      astraRt.send({ report: true });
      const [b, a] = await Promise.all([bareRt.nextMessage(), astraRt.nextMessage()]);
      for (const [kind, rt] of [['bare', b], ['astra', a]] as const) {
        record('rt.p50us', kind, Number(rt.p50us));
        record('rt.p99us', kind, Number(rt.p99us));
        record('rt.callsPerSec', kind, Number(rt.callsPerSec));
      }
    });
  });
  const last = (f: string, k: Kind) => samples[f]![k]!.at(-1)!;
  log(
    `  rt       p99 ${(last('rt.p99us', 'astra') / last('rt.p99us', 'bare')).toFixed(2)}× bare, ${PAR_IN_FLIGHT} in flight ${(last('rt.callsPerSec', 'astra') / last('rt.callsPerSec', 'bare')).toFixed(2)}× bare` +
      ` (p50 ${last('rt.p50us', 'astra').toFixed(1)} vs ${last('rt.p50us', 'bare').toFixed(1)} µs, p99 ${last('rt.p99us', 'astra').toFixed(0)} vs ${last('rt.p99us', 'bare').toFixed(0)} µs; interleaved${placement})`,
  );
}

async function astraRound(): Promise<void> {
  await withDaemon(async (daemon) => {
    // Astra's round trip is measured beside the bare one (rtRound), unless the peers do not run.
    const rt = INTERLEAVED_RT ? undefined : await spawnWorker(['astra', 'rt', daemon.home]).nextMessage();
    if (rt) {
      record('rt.p50us', 'astra', Number(rt.p50us));
      record('rt.p99us', 'astra', Number(rt.p99us));
      record('rt.callsPerSec', 'astra', Number(rt.callsPerSec));
    }
    const st = await spawnWorker(['astra', 'stream', daemon.home, 'synthetic', `count=${STREAM_EVENTS} size=${EVENT_BYTES}`, `count=${WARMUP_EVENTS} size=${EVENT_BYTES}`]).nextMessage();
    if (st.events !== STREAM_EVENTS) throw new Error(`bench: the astra stream delivered ${String(st.events)} of ${STREAM_EVENTS} events`);
    record('stream.eventsPerSec', 'astra', Number(st.eventsPerSec));
    record('streamDurable.eventsPerSec', 'astra', Number(st.eventsPerSec));
    record('stream.clientCpuUs', 'astra', Number(st.clientCpuUsPerEvent));
    record('stream.serverCpuUs', 'astra', Number(st.serverCpuUsPerEvent));
    const rtLine = rt ? `rt p50 ${Number(rt.p50us).toFixed(1)} µs, ${Math.round(Number(rt.callsPerSec))} calls/s; ` : '';
    log(`  astra    ${rtLine}stream ${Math.round(Number(st.eventsPerSec))} ev/s`);
  });
  // Each large-output figure on a daemon of its own: 220 MiB of journal per figure, freed with its home.
  const big = await largeOutput('synthetic', `count=${BIG_EVENTS} size=${BIG_BYTES} batch=1`, `count=${BIG_WARMUP_MIB / 4} size=${BIG_BYTES} batch=1`);
  if (big.events !== BIG_EVENTS) throw new Error(`bench: the astra large-output stream delivered ${String(big.events)} of ${BIG_EVENTS} events`);
  record('big.mbPerSec', 'astra', Number(big.mbPerSec));
  // The same, with the memory its journal is about to fill touched just before (see touchMemory).
  const warm = await largeOutput('synthetic', `count=${BIG_EVENTS} size=${BIG_BYTES} batch=1`, `count=${BIG_WARMUP_MIB / 4} size=${BIG_BYTES} batch=1`, true);
  record('bigWarm.mbPerSec', 'astra', Number(warm.mbPerSec));
  const shell = await largeOutput('shell', SHELL_BIG, `head -c ${BIG_WARMUP_MIB}M /dev/zero`);
  if (shell.bytes !== BIG_EVENTS * BIG_BYTES) throw new Error(`bench: the shell stream delivered ${String(shell.bytes)} of ${BIG_EVENTS * BIG_BYTES} bytes`);
  record('bigShell.mbPerSec', 'astra', Number(shell.mbPerSec));
  record('bigShell.events', 'astra', Number(shell.events));
  const syn64 = await largeOutput('synthetic', `count=${CHUNKED_EVENTS} size=${CHUNK_BYTES} batch=16`, `count=${BIG_WARMUP_MIB * 16} size=${CHUNK_BYTES} batch=16`);
  record('big64k.mbPerSec', 'astra', Number(syn64.mbPerSec));
  log(
    `  astra    4 MiB events ${Number(big.mbPerSec).toFixed(0)} MB/s (memory touched first: ${Number(warm.mbPerSec).toFixed(0)} MB/s); shell output ${Number(shell.mbPerSec).toFixed(0)} MB/s (${String(shell.events)} events); ` +
      `synthetic 64 KiB ${Number(syn64.mbPerSec).toFixed(0)} MB/s`,
  );
}

/** One large-output stream (after its warm-up, in the same client process) on a fresh daemon. */
async function largeOutput(engine: string, text: string, warmup: string, touchFirst = false): Promise<Record<string, unknown>> {
  return await withDaemon(async (daemon) => {
    if (touchFirst) touchMemory();
    return await spawnWorker(['astra', 'stream', daemon.home, engine, text, warmup]).nextMessage();
  });
}

async function astraFanOut(): Promise<void> {
  await withDaemon(async (daemon) => {
    const ctl = await daemon.client('bench-controller');
    const { session } = await ctl.session.create({ title: 'bench fan-out', engine: 'synthetic', approvalPolicy: 'auto' });
    await ctl.acquireController(session.id);
    const head = (await ctl.session.read({ sessionId: session.id, limit: 1 })).headSeq;
    const clients = Array.from({ length: FAN_CLIENTS }, () => spawnWorker(['astra', 'fan', daemon.home, session.id, String(head)]));
    await Promise.all(clients.map((c) => c.nextMessage(30_000)));
    const startMs = wallMs();
    await ctl.turn.start({ sessionId: session.id, input: { text: `count=${FAN_EVENTS} size=${EVENT_BYTES}` } });
    const ends = await Promise.all(clients.map((c) => c.nextMessage()));
    for (const e of ends) if (e.events !== FAN_EVENTS) throw new Error(`bench: an astra observer got ${String(e.events)} of ${FAN_EVENTS} events`);
    fanFigures('astra', startMs, ends.map((e) => Number(e.endMs)));
    await ctl.close();
  });
}

// ---- start-up ----

async function startup(): Promise<void> {
  for (let i = 0; i < STARTUP_REPEATS; i++) {
    const home = tempDir('astra-bench-');
    const env = { ...process.env, ASTRA_HOME: home, ASTRA_IDLE_TIMEOUT_MS: '0' };
    let pid: number | undefined;
    try {
      const start = await timeProcess([process.execPath, CLI, 'daemon', 'start'], env);
      if (start.code !== 0) throw new Error(`bench: astra daemon start exited with ${start.code}`);
      record('startup.daemonStartMs', 'astra', start.ms);
      const rec = JSON.parse(fs.readFileSync(path.join(home, 'run', 'daemon.json'), 'utf8')) as { pid: number };
      pid = rec.pid;
      const status = await timeProcess([process.execPath, CLI, 'daemon', 'status'], env);
      if (status.code !== 0) throw new Error(`bench: astra daemon status exited with ${status.code}`);
      record('startup.statusMs', 'astra', status.ms);
      record('startup.nodeMs', 'astra', (await timeProcess([process.execPath, '-e', '0'], env)).ms);
    } finally {
      if (pid !== undefined) {
        const p = pid;
        try {
          process.kill(p, 'SIGTERM');
          await waitFor('the started daemon exiting', 5_000, () => {
            try {
              process.kill(p, 0);
              return undefined;
            } catch {
              return true;
            }
          });
        } catch {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
  log(
    `  daemon start → answering ${med('startup.daemonStartMs', 'astra')!.toFixed(0)} ms; daemon status ${med('startup.statusMs', 'astra')!.toFixed(0)} ms; node -e 0 ${med('startup.nodeMs', 'astra')!.toFixed(0)} ms`,
  );
}

// ---- memory ----

/** RSS after the daemon has had a moment to settle: the median of a few samples. */
async function settledRss(pid: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    await sleep(100);
    xs.push(procRssBytes(pid));
  }
  return median(xs);
}

async function memory(): Promise<void> {
  await withDaemon(async (daemon) => {
    await sleep(500);
    const idle = await settledRss(daemon.pid);
    record('mem.idleMB', 'astra', idle / 1e6);

    const holder = spawnWorker(['astra', 'idle', daemon.home, String(IDLE_CONNECTIONS)]);
    await holder.nextMessage(60_000);
    const withConns = await settledRss(daemon.pid);
    record('mem.idleConnectionsAddMB', 'astra', (withConns - idle) / 1e6);
    holder.kill();
    await holder.exited;

    record('mem.stoppedObserverFloodMB', 'astra', await flood(daemon, true));
  });
  // The control: the same flood on a fresh daemon with no stopped observer (the cache and heap growth
  // that any flood causes), so the observer's own share can be told apart.
  const control = new DaemonProc();
  await control.start();
  try {
    await sleep(500);
    record('mem.floodAloneMB', 'astra', await flood(control, false));
  } finally {
    await control.stop();
  }
  record('mem.stoppedObserverAddMB', 'astra', samples['mem.stoppedObserverFloodMB']!.astra!.at(-1)! - samples['mem.floodAloneMB']!.astra!.at(-1)!);
  log(
    `  daemon RSS idle ${med('mem.idleMB', 'astra')!.toFixed(1)} MB; +${IDLE_CONNECTIONS} idle connections ${med('mem.idleConnectionsAddMB', 'astra')!.toFixed(1)} MB; ` +
      `${FLOOD_EVENTS}-event flood with a stopped observer +${med('mem.stoppedObserverFloodMB', 'astra')!.toFixed(1)} MB, ` +
      `without +${med('mem.floodAloneMB', 'astra')!.toFixed(1)} MB`,
  );
}

/** Peak daemon RSS during a flood, minus its RSS just before; optionally with a SIGSTOPped observer subscribed. */
async function flood(daemon: DaemonProc, stoppedObserver: boolean): Promise<number> {
  const ctl = await daemon.client('bench-controller');
  const { session } = await ctl.session.create({ title: 'bench flood', engine: 'synthetic', approvalPolicy: 'auto' });
  await ctl.acquireController(session.id);
  let observer: Child | undefined;
  if (stoppedObserver) {
    observer = spawnWorker(['astra', 'observe', daemon.home, session.id, String(session.headSeq)]);
    await observer.nextMessage(30_000);
    observer.kill('SIGSTOP');
  }
  try {
    let done!: () => void;
    const completed = new Promise<void>((r) => (done = r));
    await ctl.subscribe(session.id, { sinceSeq: session.headSeq, onEvent: (e) => e.type === 'turn.completed' && done() });
    const before = await settledRss(daemon.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, procRssBytes(daemon.pid))), 10);
    await ctl.turn.start({ sessionId: session.id, input: { text: `count=${FLOOD_EVENTS} size=${EVENT_BYTES}` } });
    await completed;
    await sleep(200);
    clearInterval(sampler);
    peak = Math.max(peak, procRssBytes(daemon.pid));
    await ctl.close();
    return (peak - before) / 1e6;
  } finally {
    if (observer) {
      observer.kill('SIGCONT');
      observer.kill('SIGKILL');
      await observer.exited;
    }
  }
}

// ---- report ----


function figure(id: string, name: string, unit: string, better: 'higher' | 'lower', target: string, passes?: (astra: number, ratio: number | undefined) => boolean): Figure {
  const astra = med(id, 'astra');
  const bareV = med(id, 'bare');
  // Run r's Astra figure against run r's bare one: on a shared machine a run's pair saw the same load.
  const as = samples[id]?.astra ?? [];
  const bs = samples[id]?.bare ?? [];
  const paired = as.length > 1 && as.length === bs.length ? as.map((a, i) => a / bs[i]!) : undefined;
  const ratio = paired ? median(paired) : astra !== undefined && bareV !== undefined ? astra / bareV : undefined;
  return {
    id,
    name,
    unit,
    better,
    astra,
    bare: bareV,
    jsonrpc: med(id, 'jsonrpc'),
    grpc: med(id, 'grpc'),
    ratio,
    ratioRange: paired ? [Math.min(...paired), Math.max(...paired)] : undefined,
    target,
    pass: passes && astra !== undefined ? passes(astra, ratio) : undefined,
  };
}

function fmt(v: number | undefined, unit: string): string {
  if (v === undefined || Number.isNaN(v)) return '—';
  if (unit === 'ratio') return v.toFixed(3);
  if (unit === 'µs' || unit === 'MB' || unit === 'ms' || unit === 'µs/event') return v >= 100 ? v.toFixed(0) : v.toFixed(1);
  return Math.round(v).toLocaleString('en-US');
}

function fmtRatio(f: Figure): string {
  return f.ratio === undefined ? '—' : `${f.ratio.toFixed(2)}×`;
}

function loadNow(): string {
  return os.loadavg().map((l) => l.toFixed(1)).join(' / ');
}

async function main(): Promise<void> {
  const t0 = wallMs();
  const loadAtStart = loadNow();
  process.on('SIGINT', () => {
    killAll();
    process.exit(130);
  });
  log(`astra bench: ${REPEATS} runs of each figure (medians), ${os.cpus().length} CPUs, node ${process.version}, load average ${loadAtStart}`);

  for (let r = 0; r < REPEATS; r++) {
    log(`run ${r + 1}/${REPEATS}`);
    if (runs('astra')) diskWriteRound();
    if (runs('peers')) for (const kind of PEERS) await peerRound(kind);
    if (runs('astra')) await astraRound();
    if (runs('cold')) await coldRound();
    if (INTERLEAVED_RT) await rtRound();
    if (runs('fan')) {
      await peerFanOut('bare');
      await astraFanOut();
    }
  }
  if (runs('startup')) {
    log('start-up');
    await startup();
  }
  if (runs('memory')) {
    log('memory');
    for (let r = 0; r < REPEATS; r++) await memory();
  }
  if (runs('soak')) {
    log(`soak: ${SOAK_SECONDS} s of mixed traffic (4 sessions, 8 clients; bench/soak.md), then ${SOAK_IDLE_SECONDS} s without a client`);
    const soak = await runSoak(SOAK_SECONDS, SOAK_IDLE_SECONDS, undefined);
    const mib = (b: number) => b / 1048576;
    record('soak.events', 'astra', soak.stats.events);
    record('soak.startMiB', 'astra', mib(soak.startBytes));
    record('soak.peakMiB', 'astra', mib(soak.peakBytes));
    record('soak.idleMiB', 'astra', mib(soak.afterBytes));
    record('soak.idleAddMiB', 'astra', mib(soak.afterBytes - soak.startBytes));
    log(
      `  ${soak.stats.events} events served; RSS start ${mib(soak.startBytes).toFixed(0)} MiB, peak ${mib(soak.peakBytes).toFixed(0)}, ` +
        `after the idle ${mib(soak.afterBytes).toFixed(0)} (+${mib(soak.afterBytes - soak.startBytes).toFixed(0)}); every 10 s idle: ${soak.idleBytes.map((b) => mib(b).toFixed(0)).join(' ')}`,
    );
  }
  if (runs('tests')) {
    log('what the tests no longer assert: flood frames, terminal chunks, fuzz rate, refused connections\' memory');
    for (let r = 0; r < REPEATS; r++) for (const [id, v] of Object.entries(await runFromTests(log))) record(id, 'astra', v);
  }
  let journal: Record<string, number> = {};
  if (runs('journal')) {
    log('journal');
    journal = await runJournalBench();
    log(`  append ${journal.appendEventsPerSec} events/s (bare appendFile ${journal.bareAppendFileEventsPerSec}); fsynced mutation p50 ${journal.mutationP50us} µs (bare ${journal.bareFsyncP50us} µs)`);
  }
  let ipc: Record<string, number> = {};
  if (runs('ipc')) {
    log('ipc micro-benchmark');
    ipc = await runIpcBench((l) => log(`  ${l}`));
  }

  let chat: ChatFigures | undefined;
  if (runs('chat')) {
    log('chat engine against a generating fake model server');
    chat = await runChatBench((l) => log(l));
  }

  let terminal: TerminalResult | undefined;
  if (runs('terminal')) {
    log('terminal: astra attach beside tmux (key to echo, seq to two clients, cold attach)');
    terminal = await runTerminalBench((l) => log(l));
  }

  const nodeMs = med('startup.nodeMs', 'astra') ?? NaN;
  const figures: Figure[] = [
    figure('rt.p50us', 'round trip, 1 in flight, p50', 'µs', 'lower', '≤ 1.2× bare', (_a, r) => r !== undefined && r <= 1.2),
    figure('rt.p99us', 'round trip, 1 in flight, p99', 'µs', 'lower', '≤ 1.3× bare', (_a, r) => r !== undefined && r <= 1.3),
    figure('rt.callsPerSec', `round trip, ${PAR_IN_FLIGHT} in flight`, 'calls/s', 'higher', '≥ 0.8× bare', (_a, r) => r !== undefined && r >= 0.8),
    figure('stream.eventsPerSec', `durable streaming: ${STREAM_EVENTS.toLocaleString('en-US')} × ${EVENT_BYTES} B events, journaled by Astra (bare: not journaled)`, 'events/s', 'higher', '≥ 0.8× bare', (_a, r) => r !== undefined && r >= 0.8),
    figure('streamCold.eventsPerSec', 'the same, cold: fresh server/daemon and client processes, no warm-up', 'events/s', 'higher', '≥ 0.8× bare', (_a, r) => r !== undefined && r >= 0.8),
    figure('streamDurable.eventsPerSec', 'the same stream beside a durable bare server (a write per turn to a file, fsync ≤ 5 ms later)', 'events/s', 'higher', ''),
    figure('streamColdDurable.eventsPerSec', 'the same, cold, beside the durable bare server', 'events/s', 'higher', ''),
    figure('stream.serverCpuUs', 'streaming CPU, server/daemon side', 'µs/event', 'lower', ''),
    figure('stream.clientCpuUs', 'streaming CPU, client side', 'µs/event', 'lower', ''),
    figure('big.mbPerSec', `large output, ${BIG_EVENTS} × 4 MiB output events (peers: 4 MiB frames)`, 'MB/s', 'higher', '≥ 0.8× bare', (_a, r) => r !== undefined && r >= 0.8),
    figure('bigWarm.mbPerSec', 'the same, with memory for the journal touched just before (see "This machine"; bare: 4 MiB frames)', 'MB/s', 'higher', ''),
    figure('bigShell.mbPerSec', 'large output from a command: `head -c 200M /dev/zero` through the shell engine (bare: 4 MiB frames)', 'MB/s', 'higher', ''),
    figure('big64k.mbPerSec', 'large output, synthetic 64 KiB events (bare: 64 KiB frames)', 'MB/s', 'higher', ''),
    figure('bigDisk.coldMBPerSec', 'this VM: 256 MiB written to a new file, first of two writes (see "This machine")', 'MB/s', 'higher', ''),
    figure('bigDisk.directMBPerSec', 'this VM: 256 MiB written with O_DIRECT, 4 MiB per write (how the journal writes large records)', 'MB/s', 'higher', ''),
    figure('fan.aggregateEventsPerSec', `fan-out to ${FAN_CLIENTS} client processes (${FAN_EVENTS.toLocaleString('en-US')} events), aggregate`, 'events/s', 'higher', '≥ 1.0× bare', (_a, r) => r !== undefined && r >= 1.0),
    figure('fan.slowestEventsPerSec', `fan-out, slowest client`, 'events/s', 'higher', ''),
    figure('startup.daemonStartMs', '`astra daemon start` → answering', 'ms', 'lower', '≤ 250 ms', (a) => a <= 250),
    figure('startup.statusMs', '`astra daemon status`, whole process', 'ms', 'lower', `≤ node -e 0 + 40 ms (${(nodeMs + 40).toFixed(0)} ms)`, (a) => a <= nodeMs + 40),
    figure('startup.nodeMs', '`node -e 0`, for comparison', 'ms', 'lower', ''),
    figure('mem.idleMB', 'daemon RSS, idle', 'MB', 'lower', '≤ 60 MB', (a) => a <= 60),
    figure('mem.idleConnectionsAddMB', `daemon RSS added by ${IDLE_CONNECTIONS} idle connections`, 'MB', 'lower', '≤ 10 MB', (a) => a <= 10),
    figure('mem.stoppedObserverFloodMB', `daemon RSS added during a ${FLOOD_EVENTS.toLocaleString('en-US')}-event flood with a SIGSTOPped observer`, 'MB', 'lower', ''),
    figure('mem.floodAloneMB', `daemon RSS added during the same flood, no stopped observer`, 'MB', 'lower', ''),
    figure('mem.stoppedObserverAddMB', 'daemon RSS added by the stopped observer itself (difference of the two)', 'MB', 'lower', '≤ 32 MB', (a) => a <= 32),
    figure('soak.events', `soak (bench/soak.md): events served in ${SOAK_SECONDS} s of mixed traffic, 4 sessions, 8 clients (varies with the machine's load)`, 'events', 'higher', ''),
    figure('soak.startMiB', 'soak: daemon RSS before the traffic', 'MiB', 'lower', ''),
    figure('soak.peakMiB', 'soak: daemon RSS, peak', 'MiB', 'lower', ''),
    figure('soak.idleMiB', `soak: daemon RSS after ${SOAK_IDLE_SECONDS} s without a client`, 'MiB', 'lower', ''),
    figure('soak.idleAddMiB', `soak: RSS after ${SOAK_IDLE_SECONDS} s idle − RSS before the traffic`, 'MiB', 'lower', '≤ 30 MiB', (a) => a <= 30),
    // Once asserted by tests (bench/from-tests.ts); the targets are the bounds those tests had.
    figure('flood.screenOutputShare', '`seq 1 300000` to a screen subscriber: share of its output delivered as output (the rest as frames)', 'ratio', 'lower', '< 0.25', (a) => a < 0.25),
    figure('flood.screenFrames', 'the same: frames of the screen it got', 'frames', 'lower', ''),
    figure('flood.outputMBPerSec', 'the same: the flood\'s rate (frames begin past 2.5 MB/s)', 'MB/s', 'higher', ''),
    figure('pty.largeChunkShare', '`seq 1 300000` from a pseudo-terminal: share of its bytes in chunks over 4 KiB', 'ratio', 'higher', '> 0.5', (a) => a > 0.5),
    figure('fuzz.framesPerSec', `fuzzed frames answered by a daemon (${(4000).toLocaleString('en-US')} frames)`, 'frames/s', 'higher', '≥ 125', (a) => a >= 125),
    figure('mem.refusedConnectionsArrayBuffersMB', 'daemon arrayBuffers after GC, added by 300 connections refused as overloaded (256 held)', 'MB', 'lower', '< 8 MB', (a) => a < 8),
  ];
  // The journal's own bare peers are in its results; fold them into the same table.
  const jf = (id: string, name: string, unit: string, better: 'higher' | 'lower', astra: number, bareV: number, target: string, pass: boolean): Figure => ({
    id, name, unit, better, astra, bare: bareV, jsonrpc: undefined, grpc: undefined, ratio: astra / bareV, target, pass,
  });
  if (runs('journal')) figures.push(
    jf('journal.appendEventsPerSec', 'journal: group-committed append (bare: appendFileSync per record)', 'events/s', 'higher', journal.appendEventsPerSec!, journal.bareAppendFileEventsPerSec!, '≥ 0.5× bare', journal.appendRatio! >= 0.5),
    jf('journal.mutationP50us', 'journal: fsynced mutation p50 (bare: write + fsync)', 'µs', 'lower', journal.mutationP50us!, journal.bareFsyncP50us!, '≤ 2× bare', journal.mutationP50Ratio! <= 2),
    jf('journal.mutationP99us', 'journal: fsynced mutation p99', 'µs', 'lower', journal.mutationP99us!, journal.bareFsyncP99us!, '', true),
    jf('journal.outputMBPerSec', 'runtime alone: 200 MiB of 64 KiB output events journaled, no subscriber (bare: 256 MiB to a new file, second time)', 'MB/s', 'higher', journal.outputMBPerSec!, med('bigDisk.mbPerSec', 'bare') ?? NaN, '', true),
  );
  if (runs('ipc')) figures.push(
    jf('ipc.p50', 'ipc layer alone: round trip p50', 'µs', 'lower', ipc['ipc.p50']!, ipc['bare.p50']!, '', true),
    jf('ipc.eventsPerSec', 'ipc layer alone: 200,000-event stream', 'events/s', 'higher', ipc['ipc.eventsPerSec']!, ipc['bare.eventsPerSec']!, '', true),
  );
  // The chat rows' baseline is a direct reader of the fake model server (in the bare column).
  if (chat) {
    figures.push(
      jf('chat.firstTokenP50ms', 'chat: model server\'s first byte → first message.delta, p50 (bare: direct reader)', 'ms', 'lower', chat.firstP50ms, chat.directFirstP50ms, '≤ bare + 1 ms', chat.firstP50ms - chat.directFirstP50ms <= 1),
      jf('chat.firstTokenP99ms', 'chat: the same, p99', 'ms', 'lower', chat.firstP99ms, chat.directFirstP99ms, '', true),
      jf('chat.toolRoundTripP50ms', 'chat: tool round trip, the call\'s last byte → the next model request (auto-approved `true`), p50 (bare: a client running it itself)', 'ms', 'lower', chat.toolP50ms, chat.directToolP50ms, '', true),
      jf('chat.toolRoundTripP99ms', 'chat: the same, p99', 'ms', 'lower', chat.toolP99ms, chat.directToolP99ms, '', true),
      jf('chat.slowestObserverTokensPerSec', `chat: ${LONG_TOKENS.toLocaleString('en-US')}-token answer to ${CHAT_OBSERVERS} observers, slowest, median of ${LONG_ROUNDS} rounds (bare: direct reader; target on the median per-round ratio)`, 'tokens/s', 'higher', chat.slowestTokensPerSec, chat.directTokensPerSec, '≥ 0.9× bare', chat.medianRatio >= 0.9),
      jf('chat.medianObserverTokensPerSec', 'chat: the same, median observer', 'tokens/s', 'higher', median(chat.observerTokensPerSec), chat.directTokensPerSec, '', true),
      jf('chat.slowestObserverVsEngineReader', `chat: the same slowest observer beside the engine's own reader without the daemon (bare: streamChatCompletion reading the answer; median per-round ratio ${chat.engineMedianRatio.toFixed(2)}×)`, 'tokens/s', 'higher', chat.slowestTokensPerSec, chat.engineTokensPerSec, '', true),
      jf('chat.slowestObserverVsRelay', `chat: the same slowest observer beside a bare relay, the engine with a plain fan-out in place of the daemon (bare: the slowest of its ${CHAT_OBSERVERS} reader processes; median per-round ratio ${chat.astraVsRelayMedianRatio.toFixed(2)}×, the relay's own to the direct reader ${chat.relayMedianRatio.toFixed(2)}×)`, 'tokens/s', 'higher', chat.slowestTokensPerSec, chat.relayTokensPerSec, '', true),
      jf('chat.cpuMsPerAnswer', 'chat: CPU the daemon spends on one 50,000-token answer, 16 observers (bare: the direct reader\'s)', 'ms', 'lower', chat.daemonCpuMsPerAnswer, chat.directCpuMsPerAnswer, '', true),
    );
  }
  // The terminal rows' baseline is tmux (in the bare column).
  if (terminal) figures.push(...terminalFigures(terminal));
  for (const f of figures) if (f.target === '') f.pass = undefined;

  const durationSec = (wallMs() - t0) / 1000;
  log('');
  log(`${'figure'.padEnd(70)} ${'astra'.padStart(12)} ${'bare'.padStart(12)} ${'ratio'.padStart(7)} ${'jsonrpc'.padStart(10)} ${'grpc'.padStart(10)}  target`);
  for (const f of figures)
    log(
      `${`${f.name} (${f.unit})`.slice(0, 70).padEnd(70)} ${fmt(f.astra, f.unit).padStart(12)} ${fmt(f.bare, f.unit).padStart(12)} ${fmtRatio(f).padStart(7)} ${fmt(f.jsonrpc, f.unit).padStart(10)} ${fmt(f.grpc, f.unit).padStart(10)}  ${f.target}${f.pass === undefined ? '' : f.pass ? ' PASS' : ' MISS'}`,
    );
  log(`suite took ${durationSec.toFixed(0)} s`);

  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    cpu: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown'}`,
    repeats: REPEATS,
    durationSec: Math.round(durationSec),
    /** The machine's load average (1, 5, 15 min) at the start and the end of the suite: other work on the same cores. */
    load: `${loadAtStart} at the start, ${loadNow()} at the end`,
    parameters: { STREAM_EVENTS, EVENT_BYTES, BIG_BYTES, BIG_EVENTS, SHELL_BIG, FAN_CLIENTS, FAN_EVENTS, IDLE_CONNECTIONS, FLOOD_EVENTS, STARTUP_REPEATS, PAR_IN_FLIGHT },
  };
  if (ONLY) {
    log('a partial run (BENCH_ONLY): REPORT.md and results.json left as they were');
    return;
  }
  fs.writeFileSync(path.join(SRC_BENCH, 'results.json'), JSON.stringify({ ...meta, figures, samples, journal, ipc, chat, terminal }, null, 2) + '\n');
  writeReportTable(figures, meta);
  if (terminal) writeTerminalTable(terminalFigures(terminal), terminal);
}

const TABLE_START = '<!-- bench:table:start -->';
const TABLE_END = '<!-- bench:table:end -->';

/** Replaces the generated table in REPORT.md, keeping the hand-written analysis around it. */
function writeReportTable(figures: Figure[], meta: { date: string; node: string; platform: string; cpu: string; repeats: number; durationSec: number; load: string }): void {
  const lines = [
    TABLE_START,
    `Measured ${meta.date} on ${meta.cpu}, ${meta.platform}, Node ${meta.node}; median of ${meta.repeats} runs (start-up: of ${STARTUP_REPEATS}); the suite took ${meta.durationSec} s; load average ${meta.load}.`,
    'Ratio = Astra ÷ the reference, the median of the per-run ratios (their range in brackets) where both sides ran in every run (for latency and memory lower is better, for throughput higher).',
    '',
    '| figure | unit | Astra | bare socket | ratio | vscode-jsonrpc | grpc-js | target | |',
    '|---|---|---:|---:|---:|---:|---:|---|---|',
    ...figures.map(
      (f) =>
        `| ${f.name} | ${f.unit} | ${fmt(f.astra, f.unit)} | ${fmt(f.bare, f.unit)} | ${fmtRatio(f)}${f.ratioRange ? ` (${f.ratioRange[0].toFixed(2)}–${f.ratioRange[1].toFixed(2)})` : ''} | ${fmt(f.jsonrpc, f.unit)} | ${fmt(f.grpc, f.unit)} | ${f.target} | ${f.pass === undefined ? '' : f.pass ? 'pass' : '**miss**'} |`,
    ),
    TABLE_END,
  ];
  const file = path.join(SRC_BENCH, 'REPORT.md');
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `# Astra benchmarks\n\n${TABLE_START}\n${TABLE_END}\n`;
  const a = text.indexOf(TABLE_START);
  const b = text.indexOf(TABLE_END);
  text = a >= 0 && b > a ? text.slice(0, a) + lines.join('\n') + text.slice(b + TABLE_END.length) : text + '\n' + lines.join('\n') + '\n';
  fs.writeFileSync(file, text);
  log(`wrote ${path.relative(process.cwd(), file)} and ${path.relative(process.cwd(), path.join(SRC_BENCH, 'results.json'))}`);
}

main().then(
  () => {
    killAll();
    process.exit(0);
  },
  (e: unknown) => {
    console.error(e);
    killAll();
    process.exit(1);
  },
);
