// What hostile input leaves behind in a real daemon (issue 20): heap and RSS after a forced GC,
// before and after 100,000 fuzzed frames, and after 1,000 connection attempts at once (most of
// them refused as overloaded). Run: `npm run build && node dist/bench/fuzz-memory.js [frames]`.
// Prints one JSON line per step. Nothing here asserts; test/ipc/fuzz.test.ts asserts a bound.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DAEMON_NODE_FLAGS } from '../client/index.js';
import { readRecord, resolvePaths } from '../discovery/index.js';
import { RawPeer, fuzzDaemon } from './fuzz-frames.js';
import { HERE, sleep, tempDir, waitFor } from './lib.js';

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

const MB = 1024 * 1024;
const frames = Number(process.argv[2] ?? 100_000);
const home = tempDir('astra-fuzzmem-');
const env = { ...process.env, ASTRA_HOME: home, ASTRA_IDLE_TIMEOUT_MS: '0' };
const proc = spawn(process.execPath, ['--expose-gc', ...DAEMON_NODE_FLAGS, path.join(HERE, 'gc-daemon.js')], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let lines = '';
proc.stdout!.on('data', (d: Buffer) => (lines += d.toString()));

async function measure(step: string): Promise<Memory> {
  const before = lines.split('\n').length;
  proc.kill('SIGUSR2');
  await waitFor('the daemon reporting its memory', 10_000, () => (lines.split('\n').length > before ? true : undefined), 10);
  const all = lines.trim().split('\n');
  const m = JSON.parse(all[all.length - 1]!) as Memory;
  const mb = (n: number) => Math.round((n / MB) * 10) / 10;
  process.stdout.write(JSON.stringify({ step, rssMB: mb(m.rss), heapUsedMB: mb(m.heapUsed), externalMB: mb(m.external), arrayBuffersMB: mb(m.arrayBuffers) }) + '\n');
  return m;
}

try {
  const paths = resolvePaths(env);
  const rec = await waitFor('the daemon record', 15_000, () => readRecord(paths.recordPath), 20);
  await waitFor('the daemon answering', 15_000, async () => RawPeer.open(rec.endpoint, rec.token).then(async (p) => (await p.destroy(), true), () => undefined), 20);
  const p = await RawPeer.open(rec.endpoint, rec.token);
  const created = await p.call('c', 'session/create', { approvalPolicy: 'ask' });
  const sessionId = (created.result as { session: { id: string } }).session.id;
  await p.destroy();
  await measure('start');
  const report = await fuzzDaemon({ endpoint: rec.endpoint, token: rec.token, sessionId, seed: 1, maxFrames: frames, maxMs: 600_000 });
  process.stdout.write(JSON.stringify({ step: 'fuzzed', frames: report.frames, internalErrors: report.internalErrors.length, sessions: fs.readdirSync(path.join(home, 'data', 'sessions')).length }) + '\n');
  await measure(`after ${report.frames} fuzzed frames`);
  const attempts = await Promise.allSettled(Array.from({ length: 1_000 }, () => RawPeer.open(rec.endpoint, rec.token, 30_000)));
  const served = attempts.filter((a) => a.status === 'fulfilled' && a.value.handshake?.reason === undefined).length;
  await Promise.all(attempts.map((a) => (a.status === 'fulfilled' ? a.value.destroy() : undefined)));
  process.stdout.write(JSON.stringify({ step: 'connected', attempts: 1_000, served }) + '\n');
  await waitFor('the daemon to see every connection go', 10_000, async () => {
    try {
      const s = await RawPeer.open(rec.endpoint, rec.token);
      const st = await s.call('st', 'daemon/status', {});
      await s.destroy();
      return (st.result as { connections?: unknown[] } | undefined)?.connections?.length === 1 ? true : undefined;
    } catch {
      return undefined;
    }
  }, 50);
  await measure('after 1,000 connection attempts');
  // A refused connection is destroyed by the daemon's handshake deadline (2 s) at the latest.
  await sleep(2_500);
  await measure('after 1,000 connection attempts, 2.5 s later');
} finally {
  proc.kill('SIGKILL');
  fs.rmSync(home, { recursive: true, force: true });
}
