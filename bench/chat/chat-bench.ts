// The chat engine's rows (issue 16), run by bench/run.ts under BENCH_ONLY=chat (and in the full run):
// a real daemon whose chat engine talks to a generating fake model server (model-gen.ts) in its own
// process, each figure beside a client process reading the same kind of stream straight from that
// server in the same run.
//   first token: the server's first body byte → the first message.delta at the attached client
//     (p50, p99), vs. the first parsed content at the direct reader.
//   long answer: 16 observer processes of one session receiving a 50,000-token answer (one token per
//     SSE chunk), tokens/s each from the server's first byte, vs. one direct reader of the same answer.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { DaemonProc } from '../daemon-proc.js';
import { HERE, median, percentile } from '../lib.js';

const CHAT = path.join(HERE, 'chat');
export const FIRST_TURNS = Number(process.env.BENCH_CHAT_FIRST_TURNS ?? 200);
const FIRST_WARMUP = 20;
export const CHAT_OBSERVERS = 16;
export const LONG_TOKENS = 50_000;

interface Proc {
  proc: ChildProcess;
  next(timeoutMs?: number): Promise<Record<string, unknown>>;
  kill(): void;
}

/** A node process of bench/chat/ that talks back with one JSON object per stdout line. */
function start(script: string, args: string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const proc = spawn(process.execPath, [path.join(CHAT, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
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

export interface ChatFigures {
  firstP50ms: number;
  firstP99ms: number;
  directFirstP50ms: number;
  directFirstP99ms: number;
  /** Per observer, from the server's first byte to message.completed. */
  observerTokensPerSec: number[];
  directTokensPerSec: number;
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
    daemon = new DaemonProc({ ASTRA_CHAT_BASE_URL: baseUrl, ASTRA_CHAT_MODEL: 'bench' });
    await daemon.start();

    const stats = (ms: number[]) => {
      const s = [...ms].sort((a, b) => a - b);
      return { p50: percentile(s, 0.5), p99: percentile(s, 0.99) };
    };
    const direct = stats((await run('chat-worker.js', ['direct-first', baseUrl, String(FIRST_TURNS), String(FIRST_WARMUP)]).next()).ms as number[]);
    const astra = stats((await run('chat-worker.js', ['astra-first', daemon.home, String(FIRST_TURNS), String(FIRST_WARMUP)], daemon.env).next()).ms as number[]);
    log(`  chat first token: p50 ${astra.p50.toFixed(2)} ms (direct ${direct.p50.toFixed(2)} ms), p99 ${astra.p99.toFixed(2)} ms (direct ${direct.p99.toFixed(2)} ms)`);

    await firstBytes();
    const d = (await run('chat-worker.js', ['direct-stream', baseUrl, String(LONG_TOKENS)]).next()) as { endMs: number; tokens: number };
    const [directStart] = await firstBytes();
    if (d.tokens !== LONG_TOKENS) throw new Error(`bench chat: the direct reader saw ${d.tokens} of ${LONG_TOKENS} tokens`);
    const directTokensPerSec = LONG_TOKENS / ((d.endMs - directStart!) / 1000);

    const client = await daemon.client('bench-chat-long');
    try {
      const { session } = await client.session.create({ title: 'bench chat long answer', engine: 'chat', approvalPolicy: 'auto' });
      await client.acquireController(session.id);
      const observers = Array.from({ length: CHAT_OBSERVERS }, () => run('chat-worker.js', ['astra-observe', daemon!.home, session.id, String(session.headSeq)], daemon!.env));
      for (const o of observers) await o.next(30_000);
      await client.turn.start({ sessionId: session.id, input: { text: `tokens=${LONG_TOKENS}` } });
      const ends = (await Promise.all(observers.map((o) => o.next()))) as { endMs: number; tokens: number }[];
      const [start] = await firstBytes();
      for (const e of ends) if (e.tokens !== LONG_TOKENS) throw new Error(`bench chat: an observer saw ${e.tokens} of ${LONG_TOKENS} tokens`);
      const observerTokensPerSec = ends.map((e) => LONG_TOKENS / ((e.endMs - start!) / 1000));
      log(`  chat ${LONG_TOKENS} tokens to ${CHAT_OBSERVERS} observers: slowest ${Math.min(...observerTokensPerSec).toFixed(0)} tokens/s, median ${median(observerTokensPerSec).toFixed(0)} (direct ${directTokensPerSec.toFixed(0)})`);
      return { firstP50ms: astra.p50, firstP99ms: astra.p99, directFirstP50ms: direct.p50, directFirstP99ms: direct.p99, observerTokensPerSec, directTokensPerSec };
    } finally {
      await client.close();
    }
  } finally {
    for (const p of procs) p.kill();
    await daemon?.stop();
  }
}
