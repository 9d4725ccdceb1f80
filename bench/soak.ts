// The soak (issue 26, `node dist/bench/soak.js`; `npm run build` first): one real daemon, 4 sessions on
// the shell engine, 8 clients doing mixed traffic for SOAK_SECONDS (60 by default) — turns that print,
// subscribes from the start and from the head, unsubscribes, reconnects (a client closed and a new one
// connected) — then every client gone and the daemon left idle for SOAK_IDLE_SECONDS (60). Prints the
// daemon's RSS at start, at its peak and after the idle, as a row of bench/soak.md's table; `npm run
// bench` runs a shorter one (`runSoak`, BENCH_ONLY=soak). Not part of npm test; nothing here asserts a
// figure. The daemon gives memory back by itself once quiet (daemon/idle-release.ts, after
// ASTRA_IDLE_RELEASE_MS, 45 s); SOAK_RELEASE_MS sets that, 0 turns it off (to compare).
// SOAK_HEAP=1 has the daemon write a heap snapshot (--heapsnapshot-signal=SIGUSR2) at start and after
// the idle, into its home, kept for comparison. SOAK_MEM=1 loads bench/mem-sampler.ts into the daemon
// (its memory split every 5 s, per thread, into a log printed at the end). SOAK_TRIM=1 then asks the
// daemon's glibc for its free memory once more (malloc_trim(0) through gdb) and prints the RSS after.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AstraClient } from '../client/index.js';
import type { SessionEvent } from '../protocol/index.js';
import { fileURLToPath } from 'node:url';
import { DaemonProc } from './daemon-proc.js';
import { procRssBytes, sleep, waitFor } from './lib.js';

const SESSIONS = 4;
const CLIENTS = 8;
const HEAP = process.env.SOAK_HEAP === '1';
const MEM = process.env.SOAK_MEM === '1';
const TRIM = process.env.SOAK_TRIM === '1';
/** Commands a turn runs: some lines, a flood, a screenful of redraws. */
const COMMANDS = ['seq 1 20000', 'head -c 3000000 /dev/zero | od | head -c 2000000', 'for i in $(seq 1 200); do printf "\\033[2J\\033[H%s\\n" $i; done', 'echo hello'];

const mib = (b: number) => Math.round(b / (1024 * 1024));

export interface Stats {
  turns: number;
  subscribes: number;
  reconnects: number;
  events: number;
  errors: Map<string, number>;
}

/** Subscribes from `sinceSeq` until `done` says so (or 20 s pass), then unsubscribes. */
async function watch(client: AstraClient, sessionId: string, sinceSeq: number, stats: Stats, done: (e: SessionEvent) => boolean): Promise<void> {
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const timer = setTimeout(finish, 20_000);
  const sub = await client.subscribe(sessionId, {
    sinceSeq,
    onEvent: (e) => {
      stats.events++;
      if (done(e)) finish();
    },
    onEnd: () => finish(),
  });
  await finished;
  clearTimeout(timer);
  await sub.close();
}

async function clientLoop(d: DaemonProc, n: number, sessions: string[], until: number, stats: Stats): Promise<void> {
  let client: AstraClient = await d.client(`soak-${n}`);
  const note = (e: unknown) => {
    const key = (e as { reason?: string }).reason ?? (e as Error).message.slice(0, 60);
    stats.errors.set(key, (stats.errors.get(key) ?? 0) + 1);
  };
  let round = 0;
  while (Date.now() < until) {
    round++;
    const sessionId = sessions[(n + round) % SESSIONS]!;
    try {
      const what = (n + round) % 5;
      if (what === 4) {
        // Reconnect: a new connection, the old one closed.
        await client.close();
        client = await d.client(`soak-${n}`);
        stats.reconnects++;
      } else if (what === 0 || what === 2) {
        // A turn (who controls the session takes control now), watched to its end.
        const lease = await client.acquireController(sessionId, { takeover: true });
        const from = (await client.session.read({ sessionId, sinceSeq: 0, limit: 1 })).session.headSeq;
        let turnId = '';
        const ended = watch(client, sessionId, from, stats, (e) => e.type === 'turn.completed' && (e.data as { turnId: string }).turnId === turnId);
        turnId = (await client.turn.start({ sessionId, input: { text: COMMANDS[(n + round) % COMMANDS.length]! } })).turnId;
        stats.turns++;
        await ended;
        await lease.release().catch(note);
      } else {
        // A subscriber that replays the whole history, or a part of it, then leaves.
        const head = (await client.session.read({ sessionId, sinceSeq: 0, limit: 1 })).session.headSeq;
        stats.subscribes++;
        let k = 0;
        await watch(client, sessionId, what === 1 ? 0 : Math.max(0, head - 500), stats, (e) => ++k >= 2000 || e.seq >= head);
      }
    } catch (e) {
      note(e);
      await sleep(50);
    }
  }
  await client.close();
}

export interface SoakResult {
  seconds: number;
  idleSeconds: number;
  startBytes: number;
  peakBytes: number;
  endBytes: number;
  /** RSS every 10 s of the idle. */
  idleBytes: number[];
  /** RSS after the idle. */
  afterBytes: number;
  stats: Stats;
}

/**
 * One soak: `seconds` of traffic, then `idleSeconds` without a client. `releaseMs` is the daemon's
 * ASTRA_IDLE_RELEASE_MS (its own default when undefined). `print` gets the lines soak.js prints.
 */
export async function runSoak(seconds: number, idleSeconds: number, releaseMs: string | undefined, print: (line: string) => void = () => undefined): Promise<SoakResult> {
  const memLog = path.join(os.tmpdir(), `soak-mem-${Date.now()}.jsonl`);
  const d = new DaemonProc({
    ASTRA_SESSION_UNLOAD_MS: String(30_000),
    ...(releaseMs === undefined ? {} : { ASTRA_IDLE_RELEASE_MS: releaseMs }),
    ...(MEM ? { SOAK_MEM_LOG: memLog } : {}),
  });
  const sampler = new URL('./mem-sampler.js', import.meta.url).href;
  await d.start([...(HEAP ? ['--heapsnapshot-signal=SIGUSR2'] : []), ...(MEM ? [`--import=${sampler}`] : [])]);
  const snapshot = async (label: string) => {
    if (!HEAP) return;
    const before = new Set(fs.readdirSync(process.cwd()).filter((f) => f.endsWith('.heapsnapshot')));
    process.kill(d.pid, 'SIGUSR2');
    const file = await waitFor(`the ${label} heap snapshot`, 60_000, () => fs.readdirSync(process.cwd()).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)));
    const to = path.join(os.tmpdir(), `soak-${label}-${Date.now()}.heapsnapshot`);
    // The daemon writes it synchronously: wait until its size has not changed for a second.
    for (let size = -1; size !== fs.statSync(file).size; ) {
      size = fs.statSync(file).size;
      await sleep(1000);
    }
    fs.renameSync(file, to);
    print(`heap snapshot (${label}): ${to}`);
  };
  try {
    const setup = await d.client('soak-setup');
    const sessions: string[] = [];
    for (let i = 0; i < SESSIONS; i++) sessions.push((await setup.session.create({ title: `soak ${i}`, approvalPolicy: 'auto' })).session.id);
    await setup.close();
    await sleep(1000);
    const start = procRssBytes(d.pid);
    await snapshot('start');
    let peak = start;
    const sampler = setInterval(() => (peak = Math.max(peak, procRssBytes(d.pid))), 200);
    const stats: Stats = { turns: 0, subscribes: 0, reconnects: 0, events: 0, errors: new Map() };
    const until = Date.now() + seconds * 1000;
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => clientLoop(d, n, sessions, until, stats)));
    const end = procRssBytes(d.pid);
    const idle: number[] = [];
    for (let s = 0; s < idleSeconds; s += 10) {
      await sleep(10_000);
      idle.push(procRssBytes(d.pid));
    }
    clearInterval(sampler);
    const after = procRssBytes(d.pid);
    await snapshot('idle');
    if (TRIM) print(`RSS after malloc_trim(0) through gdb: ${mib(mallocTrim(d.pid))} MiB (${mib(after)} MiB before)`);
    if (MEM) {
      await sleep(6000);
      print(`memory samples (MiB), every 5 s: ${memLog}`);
      for (const line of fs.readFileSync(memLog, 'utf8').trim().split('\n')) print(line);
    }
    return { seconds, idleSeconds, startBytes: start, peakBytes: peak, endBytes: end, idleBytes: idle, afterBytes: after, stats };
  } finally {
    await d.stop();
  }
}

async function main(): Promise<void> {
  const seconds = Number(process.env.SOAK_SECONDS ?? 60);
  const idleSeconds = Number(process.env.SOAK_IDLE_SECONDS ?? 60);
  const r = await runSoak(seconds, idleSeconds, process.env.SOAK_RELEASE_MS, (l) => console.log(l));
  const { stats } = r;
  const after = r.afterBytes;
  console.log(`turns ${stats.turns}, subscribes ${stats.subscribes}, reconnects ${stats.reconnects}, events ${stats.events}; errors ${JSON.stringify([...stats.errors])}`);
  console.log(`RSS every 10 s idle (MiB): ${r.idleBytes.map(mib).join(' ')}`);
  console.log('| scenario | events served | RSS start | peak | at the end of the traffic | after ' + idleSeconds + ' s idle | idle − start |');
  console.log('|---|---|---|---|---|---|---|');
  console.log(
    `| soak: ${SESSIONS} sessions, ${CLIENTS} clients, ${seconds} s | ${stats.events.toLocaleString('en-US')} | ${mib(r.startBytes)} MiB | ${mib(r.peakBytes)} MiB | ${mib(r.endBytes)} MiB | ${mib(after)} MiB | +${mib(after - r.startBytes)} MiB |`,
  );
}

/** glibc's malloc_trim(0) in the daemon, through gdb (SOAK_TRIM=1); the RSS a second later. */
function mallocTrim(pid: number): number {
  try {
    execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'call (int)malloc_trim(0)'], { stdio: 'ignore', timeout: 60_000 });
  } catch (e) {
    console.log(`SOAK_TRIM: gdb could not call malloc_trim (install gdb; ptrace must be allowed): ${(e as Error).message}`);
  }
  execFileSync('sleep', ['1']);
  return procRssBytes(pid);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
