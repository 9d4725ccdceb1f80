// The chat engine's rows (issue 16), run by bench/run.ts under BENCH_ONLY=chat (and in the full run):
// a real daemon whose chat engine talks to a generating fake model server (model-gen.ts) in its own
// process, each figure beside a client process reading the same kind of stream straight from that
// server in the same run.
//   first token: the server's first body byte → the first message.delta at the attached client
//     (p50, p99), vs. the first parsed content at the direct reader.
//   tool round trip: the end of an answer whose model calls shell `true` → the next model request
//     (approved automatically, run, its result in the request), at the server; vs. a client that
//     reads the call, runs `/bin/sh -c true` and sends the next request itself.
//   long answer: 16 observer processes of one session receiving a 50,000-token answer (one token per
//     SSE chunk), tokens/s each from the server's first byte, vs. one direct reader of the same answer
//     (fetch + JSON.parse per chunk: the target's reference), and, for information, vs. a reader using
//     the engine's own HTTP client and SSE scan without the daemon (streamChatCompletion), and vs.
//     a bare relay: the engine with a plain fan-out to 16 reader processes in place of the daemon
//     (relay.ts);
//     BENCH_CHAT_LONG_ROUNDS rounds (default 15), the three in turn, medians reported. Every reader
//     sends the request the daemon sends in that round (the session's conversation so far: the
//     earlier answers, megabytes by the last round), checked by its size at the server.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DaemonProc } from '../daemon-proc.js';
import { HERE, median, percentile } from '../lib.js';

const CHAT = path.join(HERE, 'chat');
export const FIRST_TURNS = Number(process.env.BENCH_CHAT_FIRST_TURNS ?? 200);
const FIRST_WARMUP = 20;
/** Observer processes of the long answer (the row is for 16; BENCH_CHAT_OBSERVERS changes it, to see how the ratio scales). */
export const CHAT_OBSERVERS = Number(process.env.BENCH_CHAT_OBSERVERS ?? 16);
export const LONG_TOKENS = 50_000;
export const TOOL_TURNS = Number(process.env.BENCH_CHAT_TOOL_TURNS ?? 50);
const TOOL_WARMUP = 5;
/** Rounds of the long answer (each: the direct reader and the observers in turn). */
export const LONG_ROUNDS = Number(process.env.BENCH_CHAT_LONG_ROUNDS ?? 15);

interface Proc {
  proc: ChildProcess;
  /** A line to its stdin. */
  send(line: string): void;
  next(timeoutMs?: number): Promise<Record<string, unknown>>;
  kill(): void;
}

/** A node process of bench/chat/ that talks back with one JSON object per stdout line. */
function start(script: string, args: string[], env: NodeJS.ProcessEnv = process.env): Proc {
  // BENCH_CHAT_NODE_FLAGS adds node flags to these processes (e.g. --cpu-prof --cpu-prof-dir=DIR to
  // profile the observers; BENCH_DAEMON_NODE_FLAGS does it for the daemon).
  const extra = process.env.BENCH_CHAT_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const proc = spawn(process.execPath, [...extra, path.join(CHAT, script), ...args], { stdio: ['pipe', 'pipe', 'inherit'], env });
  const lines: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  let closed = false;
  const closeWaiters: (() => void)[] = [];
  let buf = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (c: string) => {
    buf += c;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const msg = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      const w = waiters.shift();
      if (w) w(msg);
      else lines.push(msg);
    }
  });
  proc.once('close', () => {
    closed = true;
    for (const f of closeWaiters.splice(0)) f();
  });
  const what = `${script} ${args.join(' ')}`;
  return {
    proc,
    send(line) {
      proc.stdin!.write(line + '\n');
    },
    next(timeoutMs = 180_000) {
      return new Promise((resolve, reject) => {
        const settle = (m: Record<string, unknown>) => {
          clearTimeout(timer);
          if (typeof m.error === 'string') reject(new Error(`bench chat: ${what}: ${m.error}`));
          else resolve(m);
        };
        const timer = setTimeout(() => reject(new Error(`bench chat: ${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
        const m = lines.shift();
        if (m) return settle(m);
        if (closed) return settle({ error: 'exited before answering' });
        waiters.push(settle);
        closeWaiters.push(() => settle({ error: 'exited before answering' }));
      });
    },
    kill() {
      if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) process.kill(proc.pid, 'SIGKILL');
    },
  };
}

/** A process's CPU time so far (user + system), ms, from /proc/PID/schedstat (ns on CPU). */
function processCpuMs(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

export interface ChatFigures {
  firstP50ms: number;
  firstP99ms: number;
  directFirstP50ms: number;
  directFirstP99ms: number;
  /** Per observer, from the server's first byte to message.completed: the median over the rounds. */
  observerTokensPerSec: number[];
  /** The direct reader's, median over the rounds. */
  directTokensPerSec: number;
  /** Per round, the slowest observer's tokens/s over the direct reader's of the same round. */
  roundRatios: number[];
  /** The end of an answer calling shell `true` → the next model request (auto-approved), at the server. */
  toolP50ms: number;
  toolP99ms: number;
  directToolP50ms: number;
  directToolP99ms: number;
  /** The slowest observer's tokens/s of each round, median over the rounds. */
  slowestTokensPerSec: number;
  /** The median of roundRatios: what the ≥ 0.9× target is judged on. */
  medianRatio: number;
  /** The engine's own reader without the daemon (streamChatCompletion), median over the rounds; and the slowest observer's ratio to it, per round, median. */
  engineTokensPerSec: number;
  engineMedianRatio: number;
  /** The bare relay's slowest reader over the direct reader, per round, median; and the daemon's slowest observer over the relay's slowest reader. */
  relayMedianRatio: number;
  /** The relay's slowest reader, median over the rounds. */
  relayTokensPerSec: number;
  astraVsRelayMedianRatio: number;
  /** CPU time the daemon spent on one long answer (median over rounds), and the direct reader. */
  daemonCpuMsPerAnswer: number;
  directCpuMsPerAnswer: number;
}

export async function runChatBench(log: (line: string) => void): Promise<ChatFigures> {
  const procs: Proc[] = [];
  const run = (script: string, args: string[], env?: NodeJS.ProcessEnv) => {
    const p = start(script, args, env);
    procs.push(p);
    return p;
  };
  const server = run('model-gen.js', []);
  let daemon: DaemonProc | undefined;
  try {
    const { baseUrl } = (await server.next(15_000)) as { baseUrl: string };
    const firstBytes = async () => (await (await fetch(baseUrl.replace(/\/v1$/, '/__firstbytes'))).json()) as number[];
    const lastBytes = async () => (await (await fetch(baseUrl.replace(/\/v1$/, '/__lastbytes'))).json()) as number[];
    daemon = new DaemonProc({ ASTRA_CHAT_BASE_URL: baseUrl, ASTRA_CHAT_MODEL: 'bench' });
    await daemon.start();

    const stats = (ms: number[]) => {
      const s = [...ms].sort((a, b) => a - b);
      return { p50: percentile(s, 0.5), p99: percentile(s, 0.99) };
    };
    const direct = stats((await run('chat-worker.js', ['direct-first', baseUrl, String(FIRST_TURNS), String(FIRST_WARMUP)]).next()).ms as number[]);
    const astra = stats((await run('chat-worker.js', ['astra-first', daemon.home, String(FIRST_TURNS), String(FIRST_WARMUP)], daemon.env).next()).ms as number[]);
    // The tool round trip: the end of an answer asking for shell `true` → the next model request
    // (auto-approved, run, its result sent), measured at the server for both.
    const requestTimes = async () => (await (await fetch(baseUrl.replace(/\/v1$/, '/__requests'))).json()) as number[];
    const toolTrips = async (worker: Proc): Promise<number[]> => {
      await requestTimes();
      await lastBytes();
      await worker.next();
      const [reqs, ends] = [await requestTimes(), await lastBytes()];
      const trips: number[] = [];
      // Per round trip: the tool call's request and answer, then the request with its result and its answer.
      for (let i = TOOL_WARMUP; 2 * i + 1 < reqs.length; i++) trips.push(reqs[2 * i + 1]! - ends[2 * i]!);
      return trips;
    };
    await firstBytes();
    const directTool = stats(await toolTrips(run('chat-worker.js', ['direct-tool', baseUrl, String(TOOL_TURNS + TOOL_WARMUP)])));
    const astraTool = stats(await toolTrips(run('chat-worker.js', ['astra-tool', daemon.home, String(TOOL_TURNS + TOOL_WARMUP)], daemon.env)));
    await firstBytes();
    log(`  chat tool round trip: p50 ${astraTool.p50.toFixed(2)} ms (direct ${directTool.p50.toFixed(2)} ms), p99 ${astraTool.p99.toFixed(2)} ms (direct ${directTool.p99.toFixed(2)} ms)`);
    log(`  chat first token: p50 ${astra.p50.toFixed(2)} ms (direct ${direct.p50.toFixed(2)} ms), p99 ${astra.p99.toFixed(2)} ms (direct ${direct.p99.toFixed(2)} ms)`);

    // The long answer, LONG_ROUNDS times: in each round the direct reader and the daemon's observers
    // read one answer each, in turn (alternating which goes first), so a ratio compares readers that
    // shared the machine's load of that moment; the figures are medians over the rounds. Every reader
    // is one process for all rounds: the first round is cold for all of them, the rest warm.
    const client = await daemon.client('bench-chat-long');
    try {
      const { session } = await client.session.create({ title: 'bench chat long answer', engine: 'chat', approvalPolicy: 'auto' });
      await client.acquireController(session.id);
      const observers = Array.from({ length: CHAT_OBSERVERS }, () =>
        run('chat-worker.js', ['astra-observe', daemon!.home, session.id, String(session.headSeq), String(LONG_ROUNDS)], daemon!.env),
      );
      for (const o of observers) await o.next(30_000);
      const directReader = run('chat-worker.js', ['direct-stream', baseUrl, String(LONG_TOKENS), String(LONG_ROUNDS)]);
      await directReader.next(30_000);
      const engineReader = run('chat-worker.js', ['engine-stream', baseUrl, String(LONG_TOKENS), String(LONG_ROUNDS)]);
      await engineReader.next(30_000);
      const relaySocket = path.join(daemon.home, 'relay.sock');
      const relay = run('relay.js', ['relay', baseUrl, String(LONG_TOKENS), relaySocket, String(CHAT_OBSERVERS)]);
      await relay.next(30_000);
      const relayReaders = Array.from({ length: CHAT_OBSERVERS }, () => run('relay.js', ['relay-reader', relaySocket]));
      for (const r of relayReaders) await r.next(30_000);
      await relay.next(30_000);
      await firstBytes();
      await lastBytes();
      const directRounds: number[] = [];
      // Each observer's CPU time at its last answer (the first round's is counted from its start).
      const observerCpu: number[] = [];
      const cpu = { daemon: [] as number[], observer: [] as number[], direct: [] as number[] };
      const observerRounds: number[][] = [];
      const ratios: number[] = [];
      // Each reader's request is the daemon's of the same round: the conversation so far (r answers).
      const bodies = async () => (await (await fetch(baseUrl.replace(/\/v1$/, '/__bodies'))).json()) as number[];
      let round = 0;
      const directRound = async (reader = directReader) => {
        reader.send(`go ${round}`);
        const d = (await reader.next()) as { endMs: number; tokens: number; cpuMs: number };
        const [first] = await firstBytes();
        const [last] = await lastBytes();
        if (d.tokens !== LONG_TOKENS) throw new Error(`bench chat: a direct reader saw ${d.tokens} of ${LONG_TOKENS} tokens`);
        return { tps: LONG_TOKENS / ((d.endMs - first!) / 1000), wroteMs: last! - first!, lagMs: d.endMs - last!, cpuMs: d.cpuMs };
      };
      const astraRound = async () => {
        const daemonCpu0 = processCpuMs(daemon!.pid);
        await client.turn.start({ sessionId: session.id, input: { text: `tokens=${LONG_TOKENS}` } });
        const ends = (await Promise.all(observers.map((o) => o.next()))) as { endMs: number; tokens: number; deltas: number; cpuMs: number }[];
        const daemonCpuMs = processCpuMs(daemon!.pid) - daemonCpu0;
        const observerCpuMs = median(ends.map((e, i) => e.cpuMs - (observerCpu[i] ?? e.cpuMs)));
        ends.forEach((e, i) => (observerCpu[i] = e.cpuMs));
        const [first] = await firstBytes();
        const [last] = await lastBytes();
        for (const e of ends) if (e.tokens !== LONG_TOKENS) throw new Error(`bench chat: an observer saw ${e.tokens} of ${LONG_TOKENS} tokens`);
        const slowestEnd = Math.max(...ends.map((e) => e.endMs));
        return { tps: ends.map((e) => LONG_TOKENS / ((e.endMs - first!) / 1000)), wroteMs: last! - first!, lagMs: slowestEnd - last!, deltas: ends[0]!.deltas, daemonCpuMs, observerCpuMs };
      };
      const relayRound = async () => {
        relay.send(`go ${round}`);
        const ends = (await Promise.all(relayReaders.map((o) => o.next()))) as { endMs: number; tokens: number }[];
        await relay.next();
        const [first] = await firstBytes();
        const [last] = await lastBytes();
        for (const e of ends) if (e.tokens !== LONG_TOKENS) throw new Error(`bench chat: a relay reader saw ${e.tokens} of ${LONG_TOKENS} tokens`);
        const slowestEnd = Math.max(...ends.map((e) => e.endMs));
        return { tps: LONG_TOKENS / ((slowestEnd - first!) / 1000), wroteMs: last! - first!, lagMs: slowestEnd - last! };
      };
      const engineRounds: number[] = [];
      const engineRatios: number[] = [];
      const relayRounds: number[] = [];
      const relayRatios: number[] = [];
      const astraVsRelay: number[] = [];
      for (let r = 0; r < LONG_ROUNDS; r++) {
        round = r;
        await bodies();
        let d, a, e, f;
        // The observers' and the relay's rounds between the two references', which swap sides each round.
        if (r % 2 === 0) {
          d = await directRound();
          a = await astraRound();
          f = await relayRound();
          e = await directRound(engineReader);
        } else {
          e = await directRound(engineReader);
          f = await relayRound();
          a = await astraRound();
          d = await directRound();
        }
        const sizes = await bodies();
        if (sizes.length !== 4 || Math.max(...sizes) > 1.01 * Math.min(...sizes))
          throw new Error(`bench chat: the four readers of round ${r + 1} sent requests of ${sizes.join(', ')} bytes; they must send the same conversation`);
        relayRounds.push(f.tps);
        relayRatios.push(f.tps / d.tps);
        astraVsRelay.push(Math.min(...a.tps) / f.tps);
        engineRounds.push(e.tps);
        engineRatios.push(Math.min(...a.tps) / e.tps);
        directRounds.push(d.tps);
        cpu.daemon.push(a.daemonCpuMs);
        cpu.direct.push(d.cpuMs);
        if (r > 0) cpu.observer.push(a.observerCpuMs);
        observerRounds.push(a.tps);
        ratios.push(Math.min(...a.tps) / d.tps);
        // Where the time goes: how long the server took to write the answer (a slow reader holds it
        // back), and how long after its last byte the answer's end reached the (slowest) reader.
        log(
          `    round ${r + 1}: slowest observer ${Math.min(...a.tps).toFixed(0)} tokens/s, direct ${d.tps.toFixed(0)} (${ratios[r]!.toFixed(2)}×); ` +
            `server wrote it in ${a.wroteMs.toFixed(0)} ms to the daemon, ${d.wroteMs.toFixed(0)} ms to the direct reader; ` +
            `its end came ${a.lagMs.toFixed(1)} / ${d.lagMs.toFixed(1)} ms after the last byte; ${a.deltas} message.delta events; ` +
            `the engine's reader ${e.tps.toFixed(0)} tokens/s (${engineRatios[r]!.toFixed(2)}×, server ${e.wroteMs.toFixed(0)} ms); ` +
            `the relay's slowest reader ${f.tps.toFixed(0)} tokens/s (${relayRatios[r]!.toFixed(2)}× the direct reader; server ${f.wroteMs.toFixed(0)} ms, end +${f.lagMs.toFixed(1)} ms); ` +
            `requests of ${Math.round(Math.max(...sizes) / 1000)} kB; CPU: daemon ${a.daemonCpuMs.toFixed(0)} ms, an observer ${r > 0 ? a.observerCpuMs.toFixed(1) : '—'} ms, direct reader ${d.cpuMs.toFixed(0)} ms`,
        );
      }
      const observerTokensPerSec = observers.map((_, i) => median(observerRounds.map((round) => round[i]!)));
      const directTokensPerSec = median(directRounds);
      const sorted = [...ratios].sort((x, y) => x - y);
      const warm = ratios.slice(1);
      log(
        `  chat ${LONG_TOKENS} tokens to ${CHAT_OBSERVERS} observers, ${LONG_ROUNDS} rounds: slowest ${Math.min(...observerTokensPerSec).toFixed(0)} tokens/s, ` +
          `median ${median(observerTokensPerSec).toFixed(0)} (direct ${directTokensPerSec.toFixed(0)}); slowest/direct per round ${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)}×, median ${median(ratios).toFixed(2)}×` +
          ` (round 1, every process cold: ${ratios[0]!.toFixed(2)}×${warm.length ? `; the warm rounds' median ${median(warm).toFixed(2)}×` : ''})`,
      );
      log(
        `  chat long answer, CPU per round (median): daemon ${median(cpu.daemon).toFixed(0)} ms, an observer ${cpu.observer.length ? median(cpu.observer).toFixed(1) : '—'} ms, ` +
          `direct reader ${median(cpu.direct).toFixed(0)} ms (${(median(cpu.daemon) / median(cpu.direct)).toFixed(2)}× the direct reader's in the daemon)`,
      );
      log(
        `  chat long answer beside the engine's own reader without the daemon: ${median(engineRounds).toFixed(0)} tokens/s; slowest observer / it per round, median ${median(engineRatios).toFixed(2)}×`,
      );
      log(
        `  chat long answer through the bare relay (the engine, no daemon) to ${CHAT_OBSERVERS} reader processes: slowest/direct per round, median ${median(relayRatios).toFixed(2)}×; ` +
          `the daemon's slowest observer / the relay's slowest reader, median ${median(astraVsRelay).toFixed(2)}×`,
      );
      const slowestTokensPerSec = median(observerRounds.map((round) => Math.min(...round)));
      return { relayTokensPerSec: median(relayRounds), relayMedianRatio: median(relayRatios), astraVsRelayMedianRatio: median(astraVsRelay), engineTokensPerSec: median(engineRounds), engineMedianRatio: median(engineRatios), toolP50ms: astraTool.p50, toolP99ms: astraTool.p99, directToolP50ms: directTool.p50, directToolP99ms: directTool.p99, slowestTokensPerSec, medianRatio: median(ratios), daemonCpuMsPerAnswer: median(cpu.daemon), directCpuMsPerAnswer: median(cpu.direct), firstP50ms: astra.p50, firstP99ms: astra.p99, directFirstP50ms: direct.p50, directFirstP99ms: direct.p99, observerTokensPerSec, directTokensPerSec, roundRatios: ratios };
    } finally {
      await client.close();
    }
  } finally {
    for (const p of procs) p.kill();
    await daemon?.stop();
  }
}
