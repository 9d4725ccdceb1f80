// A/B of the round trips between built trees: node bench/ab/ab-rt.mjs <rounds> <tree>... — per round and
// tree, a bare client (the first tree's bare peer) and that tree's AstraClient, each on a fresh server,
// take turns in blocks (200 calls one at a time ×50, then 5,000 with 64 in flight ×10), as bench/run.ts
// rtRound does; ratios per round. Works with trees older than the bench's own interleaving (af60b9a).
import path from 'node:path';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
const [rounds, ...trees] = process.argv.slice(2);
const BLOCKS = Number(process.env.BLOCKS ?? 50);
function worker(args) {
  const p = spawn(process.execPath, [new URL('./rtblock-worker.mjs', import.meta.url).pathname, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: p.stdout });
  const queue = []; const waiters = [];
  lines.on('line', (l) => { const w = waiters.shift(); if (w) w(l); else queue.push(l); });
  return { p, next: () => queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiters.push(r)), send: (l) => p.stdin.write(l + '\n') };
}
const res = Object.fromEntries(trees.map((t) => [t, []]));
for (let r = 0; r < Number(rounds); r++) for (let i = 0; i < trees.length; i++) {
  const t = trees[(i + r) % trees.length];
  const lib = await import(path.join(trees[0], 'dist/bench/lib.js'));
  const sock = path.join(lib.tempDir('ab-bare-'), 's.sock');
  const server = lib.spawnWorker(['serve', 'bare', sock]); await server.nextMessage();
  const { DaemonProc } = await import(path.join(t, 'dist/bench/daemon-proc.js'));
  const d = new DaemonProc(); await d.start();
  let b, a;
  try {
    b = worker([trees[0], 'bare', sock]);
    a = worker([t, 'astra', d.home]);
    await b.next(); await a.next();
    for (let k = 0; k < BLOCKS; k++) for (const [w, cmd] of (k % 2 ? [[a], [b]] : [[b], [a]]).flatMap(([w]) => [[w, 'seq 200']])) { w.send(cmd); await w.next(); }
    for (let k = 0; k < 10; k++) for (const w of k % 2 ? [a, b] : [b, a]) { w.send('par 5000'); await w.next(); }
    b.send('report'); a.send('report');
    const rb = JSON.parse(await b.next()), ra = JSON.parse(await a.next());
    const row = { p50: ra.p50 / rb.p50, p99: ra.p99 / rb.p99, par: ra.callsPerSec / rb.callsPerSec, ra, rb };
    res[t].push(row);
    console.log(`${r} ${path.basename(t).padEnd(9)} p50 ${ra.p50.toFixed(1)}/${rb.p50.toFixed(1)} (${row.p50.toFixed(2)}×) p99 ${ra.p99.toFixed(1)}/${rb.p99.toFixed(1)} (${row.p99.toFixed(2)}×) 64 in flight ${Math.round(ra.callsPerSec)}/${Math.round(rb.callsPerSec)} (${row.par.toFixed(2)}×)`);
  } finally {
    for (const w of [a, b]) if (w && w.p.exitCode === null) w.p.kill('SIGKILL');
    server.kill();
    await d.stop();
  }
}
const rng = (xs) => { xs = [...xs].sort((a, b) => a - b); return `${xs[0].toFixed(2)}–${xs.at(-1).toFixed(2)} (med ${xs[xs.length >> 1].toFixed(2)})`; };
for (const t of trees) console.log(`${path.basename(t)}: p50 ${rng(res[t].map((x) => x.p50))}; p99 ${rng(res[t].map((x) => x.p99))}; 64 in flight ${rng(res[t].map((x) => x.par))}`);
process.exit(0);
