// `astra web` benchmark (not part of npm test; run `npm run build && node dist/bench/web/sse-bench.js`):
// SSE events/s from GET /v1/sessions/{id}/events to one reader and fanned out to 16, beside a bare
// node:http server streaming the same frames in the same run; and, when chromium is installed, the
// time from the daemon's timestamp of an event to the page having rendered it. Targets (issue 18):
// ≥ 0.8× the bare server; emit-to-render p50 ≤ 20 ms.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AstraClient } from '../../client/index.js';
import { readRecord, resolvePaths } from '../../discovery/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(HERE, '..', '..', 'cli', 'main.js');
const COUNT = Number(process.env.BENCH_WEB_EVENTS ?? 100_000);
const SIZE = 200;
const REPEAT = Math.max(1, Number(process.env.BENCH_WEB_REPEAT ?? 3));
/** BENCH_WEB_READERS=1 (say, to profile one case): the reader counts measured, default 1 and 16. */
const READERS = (process.env.BENCH_WEB_READERS ?? '1,16').split(',').map(Number).filter((n) => Number.isSafeInteger(n) && n > 0);
const children: ChildProcess[] = [];

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function until<T>(what: string, ms: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(20);
  }
}

function req(port: number, method: string, p: string, cookie: string, tab: string, body?: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const r = http.request(
      { host: '127.0.0.1', port, method, path: p, headers: { Host: `127.0.0.1:${port}`, Cookie: cookie, 'X-Astra-Tab': tab, ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}) } },
      (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () => (res.statusCode! < 300 ? resolve(t ? JSON.parse(t) : {}) : reject(new Error(`${method} ${p}: ${res.statusCode} ${t}`))));
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

/** An SSE reader that resolves `ready` at the first `replayed` (or at once) and `done` at turn.completed. */
/** Streams that fell behind by the gateway's bound (4 MiB) and resynced from the journal, over the whole bench. */
let laggedStreams = 0;

function reader(port: number, p: string, cookie: string, waitReplayed: boolean): { ready: Promise<void>; done: Promise<number> } {
  let markReady!: () => void;
  let markDone!: (t: number) => void;
  const ready = new Promise<void>((r) => (markReady = r));
  const done = new Promise<number>((r) => (markDone = r));
  if (!waitReplayed) markReady();
  const r = http.request({ host: '127.0.0.1', port, path: p, headers: { Host: `127.0.0.1:${port}`, Cookie: cookie } }, (res) => {
    if (res.statusCode !== 200) throw new Error(`bench: ${p} answered ${res.statusCode}`);
    let tail = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      const s = tail + d;
      if (waitReplayed && s.includes('event: replayed')) markReady();
      if (d.includes('event: lagged') || (tail + d.slice(0, 20)).includes('event: lagged')) laggedStreams++;
      if (s.includes('event: turn.completed')) {
        markDone(performance.now());
        r.destroy();
      }
      tail = s.slice(-40);
    });
  });
  r.on('error', () => undefined);
  r.end();
  return { ready, done };
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks at USER_HZ = 100
  } catch {
    return NaN;
  }
}

async function gatewayRun(port: number, cookie: string, readers: number, atStart: () => void): Promise<number> {
  const { session } = await req(port, 'POST', '/v1/sessions', cookie, 'r0', { title: `bench ${readers}`, engine: 'synthetic', approvalPolicy: 'auto' });
  await req(port, 'POST', `/v1/sessions/${session.id}/lease`, cookie, 'r0', {});
  const rs = Array.from({ length: readers }, (_, i) => reader(port, `/v1/sessions/${session.id}/events?tab=r${i}&since=0`, cookie, true));
  await Promise.all(rs.map((r) => r.ready));
  atStart();
  const t0 = performance.now();
  await req(port, 'POST', `/v1/sessions/${session.id}/messages`, cookie, 'r0', { text: `count=${COUNT} size=${SIZE} batch=1000`, idempotencyKey: `bench-${readers}-${Date.now()}` });
  const ends = await Promise.all(rs.map((r) => r.done));
  await req(port, 'DELETE', `/v1/sessions/${session.id}/lease`, cookie, 'r0');
  return (COUNT * readers) / ((Math.max(...ends) - t0) / 1000);
}

/**
 * The ceiling for any gateway: the same events read straight from the daemon by as many AstraClient
 * subscriptions (one connection each, as the gateway's tabs have), without HTTP or JSON.
 */
async function directRun(env: NodeJS.ProcessEnv, readers: number): Promise<number> {
  const clients = await Promise.all(Array.from({ length: readers }, (_, i) => AstraClient.connect({ clientName: `bench direct ${i}`, env })));
  try {
    const { session } = await clients[0]!.session.create({ title: `bench direct ${readers}`, engine: 'synthetic', approvalPolicy: 'auto' });
    await clients[0]!.acquireController(session.id);
    const ends: Array<Promise<number>> = [];
    for (const c of clients) {
      let markDone!: (t: number) => void;
      ends.push(new Promise<number>((r) => (markDone = r)));
      await c.subscribe(session.id, { sinceSeq: 0, onEvent: (e) => e.type === 'turn.completed' && markDone(performance.now()) });
    }
    const t0 = performance.now();
    await clients[0]!.turn.start({ sessionId: session.id, input: { text: `count=${COUNT} size=${SIZE} batch=1000` }, idempotencyKey: `direct-${readers}-${Date.now()}` });
    const done = await Promise.all(ends);
    return (COUNT * readers) / ((Math.max(...done) - t0) / 1000);
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }
}

async function bareRun(readers: number): Promise<number> {
  const child = spawn(process.execPath, [path.join(HERE, 'bare-sse.js'), String(COUNT), String(SIZE)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const port = await until('the bare SSE server', 10_000, () => (/^\d+\n/.test(out) ? Number(out.trim()) : undefined));
  const t0 = performance.now();
  const rs = Array.from({ length: readers }, () => reader(port, '/', '', false));
  const ends = await Promise.all(rs.map((r) => r.done));
  child.kill('SIGKILL');
  return (COUNT * readers) / ((Math.max(...ends) - t0) / 1000);
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function renderLatency(env: NodeJS.ProcessEnv, origin: string): Promise<{ p50: number; p99: number; samples: number } | string> {
  if (spawnSync('/usr/bin/chromium', ['--version'], { stdio: 'ignore' }).status !== 0) return 'skipped: chromium is not installed (apt-get install chromium)';
  const { chromium } = await import('playwright-core');
  const link = spawnSync(process.execPath, [CLI, 'web', 'pair'], { env, encoding: 'utf8' }).stdout.trim();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(link);
    await page.waitForSelector('#new-session:not([disabled])');
    await page.click('#new-session');
    await page.waitForSelector('#status[data-stream="live"]');
    await page.click('#take');
    await page.waitForSelector('#status-control[data-controlled="true"]');
    await page.fill('#input', 'for i in $(seq 1 300); do echo line$i; sleep 0.01; done');
    await page.click('#send');
    await page.waitForSelector('.card.approval button.approve');
    await page.click('.card.approval button.approve');
    await page.waitForFunction(() => ((globalThis as any).astra.terminalText() as string).includes('line300'), undefined, { timeout: 60_000 });
    const lat = (await page.evaluate(() => (globalThis as any).astra.latencies as number[])) as number[];
    void origin;
    return { p50: percentile(lat, 50), p99: percentile(lat, 99), samples: lat.length };
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abw-'));
  const env = { ...process.env, ASTRA_HOME: home, ASTRA_IDLE_TIMEOUT_MS: '0' };
  // Interrupted (Ctrl-C, a timeout): stop what this run started, the daemon included, by pid.
  const abort = (): void => {
    for (const c of children) c.kill('SIGKILL');
    spawnSync(process.execPath, [CLI, 'daemon', 'stop'], { env, stdio: 'ignore' });
    fs.rmSync(home, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  // BENCH_WEB_CPU_PROF=<dir>: the gateway writes a V8 CPU profile there when it stops (node --cpu-prof).
  const prof = process.env.BENCH_WEB_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_WEB_CPU_PROF}`] : [];
  // BENCH_WEB_GATEWAY_FLAGS: node flags for the gateway process only (e.g. --max-semi-space-size=32); the daemon it starts does not inherit them.
  const flags = (process.env.BENCH_WEB_GATEWAY_FLAGS ?? '').split(' ').filter(Boolean);
  const gw = spawn(process.execPath, [...prof, ...flags, CLI, 'web'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(gw);
  let out = '';
  gw.stdout!.on('data', (d) => (out += d));
  try {
    const link = await until('the pairing link', 20_000, () => /http:\/\/127\.0\.0\.1:(\d+)\/#pair=(\S+)/.exec(out) ?? undefined);
    const port = Number(link[1]);
    const cookie = await new Promise<string>((resolve, reject) => {
      const body = JSON.stringify({ code: link[2] });
      const r = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/pair', headers: { Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
        res.resume();
        resolve(String(res.headers['set-cookie']![0]).split(';')[0]!);
      });
      r.on('error', reject);
      r.end(body);
    });
    const results: Record<string, unknown> = { events: COUNT, eventBytes: SIZE };
    // BENCH_WEB_REPEAT runs of each (gateway, bare, direct back to back): ratios of the same run, with their spread.
    for (const readers of READERS) {
      const runs: Array<{ gateway: number; bare: number; direct: number; gatewayCpuUsPerEvent: number; gatewaySetupCpuMs: number; daemonCpuUsPerEvent: number; readerCpuUsPerEvent: number }> = [];
      for (let rep = 0; rep < REPEAT; rep++) {
        process.stderr.write(`bench: ${readers} reader(s), run ${rep + 1}/${REPEAT}: gateway, bare server, direct daemon clients\n`);
        const cpu0 = cpuMs(gw.pid!);
        const reader0 = process.cpuUsage();
        // The daemon's CPU from the turn's start (the first run starts the daemon: it is there by then).
        let daemonPid = 0;
        let daemon0 = NaN;
        let gatewayAtTurn = NaN;
        const gateway = await gatewayRun(port, cookie, readers, () => {
          daemonPid = readRecord(resolvePaths(env).recordPath)?.pid ?? 0;
          daemon0 = cpuMs(daemonPid);
          gatewayAtTurn = cpuMs(gw.pid!);
        });
        // Of the gateway's CPU, what went before the turn (the session, the lease, the streams; in the first run also the daemon's start).
        const gatewaySetupCpuMs = gatewayAtTurn - cpu0;
        // The gateway's own CPU per delivered event: steadier than events/s on a loaded machine.
        const gatewayCpuUsPerEvent = ((cpuMs(gw.pid!) - cpu0) * 1000) / (COUNT * readers);
        // The two other processes of a gateway run on the same cores: the daemon (per event it emits) and this one's readers (per event read).
        const daemonCpuUsPerEvent = ((cpuMs(daemonPid) - daemon0) * 1000) / COUNT;
        const r1 = process.cpuUsage(reader0);
        const readerCpuUsPerEvent = (r1.user + r1.system) / (COUNT * readers);
        const bare = await bareRun(readers);
        const direct = await directRun(env, readers);
        runs.push({ gateway, bare, direct, gatewayCpuUsPerEvent, gatewaySetupCpuMs, daemonCpuUsPerEvent, readerCpuUsPerEvent });
      }
      const ratios = (f: (r: (typeof runs)[number]) => number): { median: number; min: number; max: number } => {
        const xs = runs.map(f);
        const r2 = (x: number): number => Number(x.toFixed(2));
        const sorted = [...xs].sort((a, b) => a - b);
        const mid = sorted.length / 2;
        const median = sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
        return { median: r2(median), min: r2(sorted[0]!), max: r2(sorted.at(-1)!) };
      };
      results[`readers${readers}`] = {
        runs: runs.map((r) => ({ gateway: Math.round(r.gateway), bare: Math.round(r.bare), direct: Math.round(r.direct), gatewayCpuUsPerEvent: Number(r.gatewayCpuUsPerEvent.toFixed(2)), gatewaySetupCpuMs: r.gatewaySetupCpuMs, daemonCpuUsPerEvent: Number(r.daemonCpuUsPerEvent.toFixed(2)), readerCpuUsPerEvent: Number(r.readerCpuUsPerEvent.toFixed(2)) })),
        gatewayOfBare: ratios((r) => r.gateway / r.bare),
        directOfBare: ratios((r) => r.direct / r.bare),
        gatewayOfDirect: ratios((r) => r.gateway / r.direct),
        gatewayCpuUsPerEvent: ratios((r) => r.gatewayCpuUsPerEvent),
        target: 0.8,
      };
    }
    results.laggedStreams = laggedStreams;
    if (process.env.BENCH_WEB_RENDER !== '0') results.emitToRenderMs = await renderLatency(env, `http://127.0.0.1:${port}`);
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  } finally {
    for (const c of children) c.kill('SIGINT');
    await sleep(500);
    spawnSync(process.execPath, [CLI, 'daemon', 'stop'], { env, stdio: 'ignore' });
    fs.rmSync(home, { recursive: true, force: true });
  }
}

await main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
});
