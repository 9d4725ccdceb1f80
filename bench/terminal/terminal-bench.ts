// The terminal rows (issue 17): `astra attach` beside tmux, the terminal multiplexer users compare it
// with, in the same run, interleaved. Every client is a real process in a pseudo-terminal of its own
// (@lydell/node-pty) that this process reads as a terminal would:
//   key to echo: a key written into the controller's terminal (`astra attach`, or a `tmux attach`
//     client), echoed by `cat` (raw mode, so cat itself echoes) in the session's terminal, seen in the
//     observer's terminal output (a second `astra attach` / `tmux attach`); p50 and p99 over KEYS keys
//     after a warm-up, one key at a time, same processes throughout.
//   throughput: `seq 1 2000000` typed into the controller's terminal, run in the session's terminal
//     with two clients attached; MB/s of seq's output until both clients have shown the line after it.
//   cold attach: a fresh `astra attach` process (an observer of a running `cat`) to its first screen
//     drawn, against a fresh `tmux attach -r`.
// The sides are in terminal-sides.ts, the client terminals in term-proc.ts, the table in terminal-report.ts.
// Run by bench/run.ts (section `terminal`, BENCH_ONLY=terminal), or alone:
//   node dist/bench/terminal/terminal-bench.js   (updates bench/results.json's terminal rows and the
//   table in bench/REPORT.md's terminal part). Nothing here asserts a timing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HERE, median, percentile, procCpuUs } from '../lib.js';
import { TermProc, killAllTerms } from './term-proc.js';
import { AstraSide, COLS, ROWS, TITLE, TmuxServer, waitUntil } from './terminal-sides.js';
import { terminalFigures, terminalTable, writeTerminalTable, type Side, type TerminalFigure, type TerminalResult } from './terminal-report.js';

export type { TerminalResult } from './terminal-report.js';

const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
export const KEYS = Number(process.env.BENCH_TERMINAL_KEYS ?? 300);
const KEY_WARMUP = 50;
export const SEQ_N = 2_000_000;
const COLD_REPEATS = 5;
/**
 * BENCH_TERMINAL_PARTS: a comma list of `keys`, `seq`, `alone` (default all three); with fewer, the
 * run alone prints its figures but writes neither results.json nor the report (a partial table).
 */
const ALL_PARTS = ['keys', 'seq', 'alone'] as const;
const PARTS = (process.env.BENCH_TERMINAL_PARTS?.split(',').map((p) => p.trim()).filter(Boolean) ?? [...ALL_PARTS]) as string[];
for (const p of PARTS) if (!(ALL_PARTS as readonly string[]).includes(p)) throw new Error(`bench: BENCH_TERMINAL_PARTS has '${p}'; use a comma list of ${ALL_PARTS.join(', ')}`);
/** The session's command for the key rows: cat echoes every byte itself (raw, no terminal echo). `RE''ADY` so the typed line does not contain the marker. */
const CAT_CMD = `stty raw -echo; printf 'RE''ADY'; exec cat`;
/** `END-$((1+1))` prints END-2, which the typed line does not contain. */
const SEQ_CMD = `seq 1 ${SEQ_N}; echo END-$((1+1))`;

/** Bytes `seq 1 N` prints. */
function seqBytes(n: number): number {
  let total = 0;
  for (let digits = 1, lo = 1; lo <= n; digits++, lo *= 10) total += (Math.min(n, lo * 10 - 1) - lo + 1) * (digits + 1);
  return total;
}

type Log = (line: string) => void;

// ---- the measurements, the same loop for both sides ----

function keyChar(i: number): string {
  return String.fromCharCode(0x4e00 + i);
}

/** One key at a time into `ctl`, each seen on `obs` before the next; latencies in ms after the warm-up. */
async function keyLatencies(ctl: TermProc, obs: TermProc): Promise<number[]> {
  const lat: number[] = [];
  for (let i = 0; i < KEY_WARMUP + KEYS; i++) {
    // A new CJK ideograph per key: nothing either side draws (status lines, ids, a redraw of the
    // line so far) contains it before its echo.
    const ch = keyChar(i);
    const seen = obs.next(ch, 10_000);
    const t0 = performance.now();
    ctl.write(ch);
    const t1 = await seen;
    if (i >= KEY_WARMUP) lat.push(t1 - t0);
  }
  return lat.sort((a, b) => a - b);
}

interface SeqRun {
  ms: number;
  /** Bytes each client's terminal received (the mean of the two). */
  clientBytes: number;
  /** CPU ms the server (the daemon, the tmux server) used meanwhile. */
  serverCpuMs: number;
  /** CPU ms each client process used meanwhile (the mean of the two). */
  clientCpuMs: number;
  /** CPU ms this process used reading both terminals meanwhile. */
  readerCpuMs: number;
}

function cpuMs(pid: number): number {
  try {
    return procCpuUs(pid) / 1000;
  } catch {
    return NaN;
  }
}

/** Types `SEQ_CMD` into `ctl`; ms until both terminals showed END-2, and where the CPU time went. */
async function seqThroughput(ctl: TermProc, obs: TermProc, serverPid: number): Promise<SeqRun> {
  const before = ctl.received + obs.received;
  const cpu0 = [serverPid, ctl.pid, obs.pid, process.pid].map(cpuMs);
  const seen = Promise.all([ctl.next('END-2', 300_000), obs.next('END-2', 300_000)]);
  const t0 = performance.now();
  ctl.write(`${SEQ_CMD}\r`);
  const ends = await seen;
  const ms = Math.max(...ends) - t0;
  const cpu = [serverPid, ctl.pid, obs.pid, process.pid].map((p, i) => cpuMs(p) - cpu0[i]!);
  return { ms, clientBytes: (ctl.received + obs.received - before) / 2, serverCpuMs: cpu[0]!, clientCpuMs: (cpu[1]! + cpu[2]!) / 2, readerCpuMs: cpu[3]! };
}

function recordSeq(rec: Recorder, side: Side, r: SeqRun, log: Log): void {
  const mbps = seqBytes(SEQ_N) / 1e6 / (r.ms / 1000);
  rec.record('terminal.seqMBPerSec', side, mbps);
  rec.record('terminal.seqClientMB', side, r.clientBytes / 1e6);
  rec.record('terminal.seqServerCpuMs', side, r.serverCpuMs);
  rec.record('terminal.seqClientCpuMs', side, r.clientCpuMs);
  rec.record('terminal.seqReaderCpuMs', side, r.readerCpuMs);
  log(
    `  ${side.padEnd(8)} seq 1 ${SEQ_N} to two clients: ${mbps.toFixed(1)} MB/s (${(r.ms / 1000).toFixed(2)} s; each client got ${(r.clientBytes / 1e6).toFixed(1)} MB; ` +
      `CPU ms: server ${r.serverCpuMs.toFixed(0)}, each client ${r.clientCpuMs.toFixed(0)}, the bench reading both ${r.readerCpuMs.toFixed(0)})`,
  );
}

// ---- one run: both sides, interleaved ----

interface Recorder {
  record(figure: string, side: Side, value: number): void;
  fail(figure: string, side: Side, e: unknown): void;
}

async function latencyTmux(rec: Recorder, log: Log): Promise<void> {
  const tmux = new TmuxServer();
  const terms: TermProc[] = [];
  try {
    tmux.newSession('lat', CAT_CMD);
    const ctl = tmux.attach('lat', 'the first tmux attach');
    terms.push(ctl);
    await ctl.next('READY', 15_000, true);
    const obs = tmux.attach('lat', 'the second tmux attach');
    terms.push(obs);
    await obs.next('READY', 15_000, true);
    const lat = await keyLatencies(ctl, obs);
    rec.record('terminal.keyP50ms', 'tmux', percentile(lat, 0.5));
    rec.record('terminal.keyP99ms', 'tmux', percentile(lat, 0.99));
    log(`  tmux     key → echo on the other client: p50 ${percentile(lat, 0.5).toFixed(2)} ms, p99 ${percentile(lat, 0.99).toFixed(2)} ms`);
    await coldAttaches(rec, 'tmux', () => tmux.attach('lat', 'a fresh tmux attach -r', true), 'READY');
  } finally {
    for (const t of terms) await t.stop();
    tmux.kill();
  }
}

async function latencyAstra(rec: Recorder, log: Log): Promise<void> {
  const astra = new AstraSide();
  const terms: TermProc[] = [];
  try {
    await astra.start();
    const id = await astra.session(TITLE);
    const [ctl, obs] = await astra.pair(id);
    terms.push(ctl, obs);
    ctl.write(`${CAT_CMD}\r`);
    await Promise.all([ctl.next('READY', 15_000, true), obs.next('READY', 15_000, true)]);
    try {
      const lat = await keyLatencies(ctl, obs);
      rec.record('terminal.keyP50ms', 'astra', percentile(lat, 0.5));
      rec.record('terminal.keyP99ms', 'astra', percentile(lat, 0.99));
      log(`  astra    key → echo on the observer: p50 ${percentile(lat, 0.5).toFixed(2)} ms, p99 ${percentile(lat, 0.99).toFixed(2)} ms`);
    } catch (e) {
      rec.fail('terminal.keyP50ms', 'astra', e);
    }
    await coldAttaches(rec, 'astra', () => astra.attach(id, 'a fresh astra attach'), 'READY', TITLE);
    await daemonKeyLatency(rec, astra, log);
  } catch (e) {
    rec.fail('terminal.keyP50ms', 'astra', e);
  } finally {
    for (const t of terms) await t.stop();
    await astra.stop();
  }
}

/**
 * The daemon's share of the key path, without the two attach processes: an in-process controller
 * client sends each key with command/input, an in-process subscriber sees cat's echo as command.output.
 */
async function daemonKeyLatency(rec: Recorder, astra: AstraSide, log: Log): Promise<void> {
  const ctl = await astra.daemon.client('bench-terminal-keys');
  const sub = await astra.daemon.client('bench-terminal-echo');
  try {
    const { session } = await ctl.session.create({ title: 'benchkeys', engine: 'shell', approvalPolicy: 'auto', cwd: astra.daemon.home });
    await ctl.acquireController(session.id);
    let waiting: { ch: string; resolve: (at: number) => void } | undefined;
    let ready: (() => void) | undefined;
    const readyP = new Promise<void>((r) => (ready = r));
    await sub.subscribe(session.id, {
      sinceSeq: session.headSeq,
      onEvent: (e) => {
        if (e.type !== 'command.output') return;
        const at = performance.now();
        const raw = (e.data as { data: Uint8Array | string }).data;
        const text = typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8');
        if (text.includes('READY')) ready?.();
        if (waiting && text.includes(waiting.ch)) {
          const w = waiting;
          waiting = undefined;
          w.resolve(at);
        }
      },
    });
    const { turnId } = await ctl.turn.start({ sessionId: session.id, input: { text: CAT_CMD } });
    await Promise.race([readyP, new Promise((_, reject) => setTimeout(() => reject(new Error('bench: cat did not start within 15 s')), 15_000))]);
    const lat: number[] = [];
    for (let i = 0; i < KEY_WARMUP + KEYS; i++) {
      const ch = keyChar(i);
      const seen = new Promise<number>((resolve, reject) => {
        waiting = { ch, resolve };
        setTimeout(() => reject(new Error(`bench: the echo of key ${i} did not reach the subscriber within 10 s`)), 10_000).unref();
      });
      const t0 = performance.now();
      await ctl.command.input({ sessionId: session.id, turnId, data: Buffer.from(ch) });
      const t1 = await seen;
      if (i >= KEY_WARMUP) lat.push(t1 - t0);
    }
    lat.sort((a, b) => a - b);
    rec.record('terminal.keyDaemonP50ms', 'astra', percentile(lat, 0.5));
    rec.record('terminal.keyDaemonP99ms', 'astra', percentile(lat, 0.99));
    log(`  astra    the daemon alone (command/input → command.output at a subscriber, in-process clients): p50 ${percentile(lat, 0.5).toFixed(2)} ms, p99 ${percentile(lat, 0.99).toFixed(2)} ms`);
    await ctl.turn.cancel({ sessionId: session.id, turnId }).catch(() => undefined);
  } catch (e) {
    rec.fail('terminal.keyDaemonP50ms', 'astra', e);
  } finally {
    await ctl.close();
    await sub.close();
  }
}

/** A fresh client process to the first screen showing `marks`, COLD_REPEATS times; records the median. */
async function coldAttaches(rec: Recorder, side: Side, open: () => TermProc, ...marks: string[]): Promise<void> {
  const ms: number[] = [];
  try {
    for (let i = 0; i < COLD_REPEATS; i++) {
      const t0 = performance.now();
      const t = open();
      try {
        const at = await Promise.all(marks.map((m) => t.next(m, 20_000, true)));
        ms.push(Math.max(...at) - t0);
      } finally {
        await t.stop();
      }
    }
    rec.record('terminal.coldAttachMs', side, median(ms));
  } catch (e) {
    rec.fail('terminal.coldAttachMs', side, e);
  }
}

async function throughputTmux(rec: Recorder, log: Log): Promise<void> {
  const tmux = new TmuxServer();
  const terms: TermProc[] = [];
  try {
    tmux.newSession('tp', `env PS1='ready> ' sh`);
    const ctl = tmux.attach('tp', 'the first tmux attach');
    const obs = tmux.attach('tp', 'the second tmux attach');
    terms.push(ctl, obs);
    await Promise.all([ctl.next('ready>', 15_000, true), obs.next('ready>', 15_000, true)]);
    recordSeq(rec, 'tmux', await seqThroughput(ctl, obs, tmux.serverPid()), log);
  } finally {
    for (const t of terms) await t.stop();
    tmux.kill();
  }
}

async function throughputAstra(rec: Recorder, log: Log): Promise<void> {
  const astra = new AstraSide();
  const terms: TermProc[] = [];
  try {
    await astra.start();
    const id = await astra.session(TITLE);
    const [ctl, obs] = await astra.pair(id);
    terms.push(ctl, obs);
    recordSeq(rec, 'astra', await seqThroughput(ctl, obs, astra.daemon.pid), log);
    // How long the command itself took in the daemon (command.started → turn.completed), for comparison.
    const ms = await commandMs(astra, id);
    rec.record('terminal.seqDaemonMs', 'astra', ms);
    log(`  astra    the command in the daemon: command.started → turn.completed ${ms} ms`);
  } catch (e) {
    rec.fail('terminal.seqMBPerSec', 'astra', e);
  } finally {
    for (const t of terms) await t.stop();
    await astra.stop();
  }
}

/** command.started → turn.completed of the session's (first) turn, from the events' timestamps. */
async function commandMs(astra: AstraSide, id: string): Promise<number> {
  const c = await astra.daemon.client('bench-terminal-probe');
  try {
    const events = [];
    for (let since = 0; ; ) {
      const page = await c.session.read({ sessionId: id, sinceSeq: since, limit: 1000 });
      events.push(...page.events);
      if (page.nextSeq === undefined || page.events.length === 0) break;
      since = page.events[page.events.length - 1]!.seq;
    }
    const started = events.find((e) => e.type === 'command.started');
    const ended = events.find((e) => e.type === 'turn.completed');
    if (!started || !ended) throw new Error('bench: the seq turn has no command.started or turn.completed');
    return ended.ts - started.ts;
  } finally {
    await c.close();
  }
}

/**
 * The server alone, no client attached: `seq 1 2000000` in an Astra session started by an in-process
 * client that does not subscribe (command.started → turn.completed), and in a tmux pane (send-keys →
 * `tmux wait` signalled after seq).
 */
async function serverAloneTmux(rec: Recorder, log: Log): Promise<void> {
  const tmux = new TmuxServer();
  try {
    tmux.newSession('alone', `env PS1='ready> ' sh`);
    await waitUntil('the tmux pane\'s prompt', 15_000, async () => tmux.run(['capture-pane', '-p', '-t', 'alone']).includes('ready>'));
    const pid = tmux.serverPid();
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    tmux.run(['send-keys', '-t', 'alone', `seq 1 ${SEQ_N}; tmux -L ${tmux.socket} wait -S seqdone`, 'Enter']);
    tmux.run(['wait', 'seqdone']);
    const ms = performance.now() - t0;
    const cpu = cpuMs(pid) - cpu0;
    rec.record('terminal.seqAloneMs', 'tmux', ms);
    rec.record('terminal.seqAloneCpuMs', 'tmux', cpu);
    log(`  tmux     seq 1 ${SEQ_N}, no client attached: ${ms.toFixed(0)} ms (CPU of the server ${cpu.toFixed(0)} ms)`);
  } finally {
    tmux.kill();
  }
}

async function serverAloneAstra(rec: Recorder, log: Log): Promise<void> {
  const astra = new AstraSide();
  try {
    await astra.start();
    const c = await astra.daemon.client('bench-terminal-alone');
    try {
      const { session } = await c.session.create({ title: 'benchalone', engine: 'shell', approvalPolicy: 'auto', cwd: astra.daemon.home });
      await c.acquireController(session.id);
      const cpu0 = cpuMs(astra.daemon.pid);
      await c.turn.start({ sessionId: session.id, input: { text: `seq 1 ${SEQ_N}` } });
      await waitUntil('the seq turn ending', 300_000, async () => (await c.session.read({ sessionId: session.id, limit: 1 })).session.runningTurnId === undefined);
      // The daemon's CPU over the turn (its screen worker's thread included), read once it ended (the polls add a little).
      const cpu = cpuMs(astra.daemon.pid) - cpu0;
      const ms = await commandMs(astra, session.id);
      rec.record('terminal.seqAloneMs', 'astra', ms);
      rec.record('terminal.seqAloneCpuMs', 'astra', cpu);
      log(`  astra    seq 1 ${SEQ_N}, no client attached: ${ms} ms (CPU of the daemon ${cpu.toFixed(0)} ms)`);
    } finally {
      await c.close();
    }
  } catch (e) {
    rec.fail('terminal.seqAloneMs', 'astra', e);
  } finally {
    await astra.stop();
  }
}

/** The whole section: REPEATS runs, each side in every run, the order alternating between runs. */
export async function runTerminalBench(log: Log): Promise<TerminalResult> {
  const samples: TerminalResult['samples'] = {};
  const errors: string[] = [];
  const rec: Recorder = {
    record: (figure, side, value) => void ((samples[figure] ??= {})[side] ??= []).push(value),
    fail: (figure, side, e) => {
      const msg = `${figure} (${side}): ${(e as Error).message ?? String(e)}`;
      errors.push(msg);
      log(`  ${side.padEnd(8)} FAILED ${msg}`);
    },
  };
  try {
    for (let r = 0; r < REPEATS; r++) {
      log(` terminal run ${r + 1}/${REPEATS}`);
      const pairs: [() => Promise<void>, () => Promise<void>][] = [];
      if (PARTS.includes('keys')) pairs.push([() => latencyTmux(rec, log), () => latencyAstra(rec, log)]);
      if (PARTS.includes('seq')) pairs.push([() => throughputTmux(rec, log), () => throughputAstra(rec, log)]);
      if (PARTS.includes('alone')) pairs.push([() => serverAloneTmux(rec, log), () => serverAloneAstra(rec, log)]);
      for (const [tmuxRun, astraRun] of pairs) {
        if (r % 2 === 0) {
          await tmuxRun();
          await astraRun();
        } else {
          await astraRun();
          await tmuxRun();
        }
      }
    }
  } finally {
    killAllTerms();
  }
  const medians: TerminalResult['medians'] = {};
  for (const [figure, sides] of Object.entries(samples)) {
    medians[figure] = {};
    for (const side of ['astra', 'tmux'] as const) if (sides[side]?.length) medians[figure]![side] = median(sides[side]!);
  }
  return { samples, medians, errors, parameters: { REPEATS, KEYS, KEY_WARMUP, SEQ_N, SEQ_BYTES: seqBytes(SEQ_N), COLD_REPEATS, COLS, ROWS, CAT_CMD, SEQ_CMD } };
}

// ---- alone: node dist/bench/terminal/terminal-bench.js ----

const SRC_BENCH = path.resolve(HERE, '..', '..', 'bench');

async function alone(): Promise<void> {
  const log = (l: string) => process.stdout.write(l + '\n');
  process.on('SIGINT', () => {
    killAllTerms();
    process.exit(130);
  });
  log(`astra terminal bench: ${REPEATS} runs, ${os.cpus().length} CPUs, node ${process.version}`);
  const result = await runTerminalBench(log);
  const figs = terminalFigures(result);
  for (const l of terminalTable(figs)) log(l);
  for (const e of result.errors) log(`error: ${e}`);
  if (PARTS.length < ALL_PARTS.length) {
    log(`BENCH_TERMINAL_PARTS=${PARTS.join(',')}: a partial run, nothing written`);
    return;
  }
  const file = path.join(SRC_BENCH, 'results.json');
  const json = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  const figures = ((json.figures as TerminalFigure[] | undefined) ?? []).filter((f) => !f.id.startsWith('terminal.'));
  json.figures = [...figures, ...figs];
  json.terminal = { date: new Date().toISOString(), ...result };
  fs.writeFileSync(file, JSON.stringify(json, null, 2) + '\n');
  writeTerminalTable(figs, result);
  log(`wrote the terminal rows of ${path.relative(process.cwd(), file)} and bench/REPORT.md`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  alone().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      killAllTerms();
      process.exit(1);
    },
  );
}
