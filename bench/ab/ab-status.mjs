// `astra daemon status` against `node -e 0`, between built trees: node bench/ab/ab-status.mjs <n> <tree>...
// — a daemon per tree, then n rounds of node -e 0 and each tree's status, order rotating. CPU=1 measures
// CPU time (perf stat task-clock) instead of wall time: on a loaded machine wall time is mostly waiting.
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { spawnSync, spawn } from 'node:child_process';
const [n, ...trees] = process.argv.slice(2);
const homes = {};
try {
for (const t of trees) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-status-'));
  const env = { ...process.env, ASTRA_HOME: home, ASTRA_IDLE_TIMEOUT_MS: '0' };
  const r = spawnSync(process.execPath, [path.join(t, 'dist/cli/main.js'), 'daemon', 'start'], { env });
  if (r.status !== 0) throw new Error(r.stderr.toString());
  homes[t] = { home, env, pid: JSON.parse(fs.readFileSync(path.join(home, 'run', 'daemon.json'), 'utf8')).pid };
}
const CPU = process.env.CPU === '1';
const time = (argv, env) => new Promise((res) => {
  const t0 = performance.now();
  const p = spawn(CPU ? 'perf' : argv[0], CPU ? ['stat', '-x', ',', '-e', 'task-clock', ...argv] : argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = ''; p.stdout.resume(); p.stderr.on('data', (d) => (err += d));
  p.on('exit', (code) => { const m = /([\d.]+),msec,task-clock/.exec(err); res({ ms: CPU ? Number(m[1]) : performance.now() - t0, code }); });
});
const xs = { node: [], ...Object.fromEntries(trees.map((t) => [t, []])) };
const kinds = ['node', ...trees];
for (let i = 0; i < Number(n); i++) for (let k = 0; k < kinds.length; k++) {
  const kind = kinds[(k + i) % kinds.length];
  if (kind === 'node') xs.node.push((await time([process.execPath, '-e', '0'], process.env)).ms);
  else { const r = await time([process.execPath, path.join(kind, 'dist/cli/main.js'), 'daemon', 'status'], homes[kind].env); if (r.code !== 0) throw new Error('status failed ' + r.code); xs[kind].push(r.ms); }
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const min = (a) => Math.min(...a);
console.log(`node -e 0: median ${med(xs.node).toFixed(1)} min ${min(xs.node).toFixed(1)} ms`);
for (const t of trees) console.log(`${path.basename(t)} status: median ${med(xs[t]).toFixed(1)} (+${(med(xs[t]) - med(xs.node)).toFixed(1)}) min ${min(xs[t]).toFixed(1)} (+${(min(xs[t]) - min(xs.node)).toFixed(1)}) ms`);
} finally {
  // Every daemon this started is stopped by its pid, whatever failed.
  for (const t of trees) if (homes[t]) try { process.kill(homes[t].pid, 'SIGTERM'); } catch {}
  await new Promise((r) => setTimeout(r, 500));
  for (const t of trees) if (homes[t]) fs.rmSync(homes[t].home, { recursive: true, force: true });
}
