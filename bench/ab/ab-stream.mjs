// A/B of the streaming row between built trees (each a checkout with node_modules and `npm run build`,
// e.g. `git worktree add /tmp/af60 af60b9a && cp -al node_modules /tmp/af60/ && (cd /tmp/af60 && npm run build)`):
// node bench/ab/ab-stream.mjs <rounds> <tree>... — per round, each tree's daemon and `astra stream` worker
// (200,000 × 200 B events after as many unmeasured), order alternating; events/s and client CPU/event.
import path from 'node:path';
const [rounds, ...trees] = process.argv.slice(2);
const mods = {};
for (const t of trees) {
  mods[t] = { dp: await import(path.join(t, 'dist/bench/daemon-proc.js')), lib: await import(path.join(t, 'dist/bench/lib.js')) };
}
const res = Object.fromEntries(trees.map((t) => [t, []]));
for (let r = 0; r < Number(rounds); r++) {
  const order = r % 2 ? [...trees].reverse() : trees;
  for (const t of order) {
    const { DaemonProc } = mods[t].dp;
    const d = new DaemonProc();
    await d.start();
    try {
      const w = mods[t].lib.spawnWorker(['astra', 'stream', d.home, 'synthetic', 'count=200000 size=200', 'count=200000 size=200']);
      const st = await w.nextMessage(300000);
      res[t].push(st);
      console.log(`${r} ${path.basename(t)} ${Math.round(st.eventsPerSec)} ev/s client ${st.clientCpuUsPerEvent.toFixed(2)} µs/ev server ${st.serverCpuUsPerEvent.toFixed(2)} µs/ev`);
    } finally {
      await d.stop();
    }
  }
}
for (const t of trees) {
  const e = res[t].map((s) => s.eventsPerSec).sort((a, b) => a - b);
  const c = res[t].map((s) => s.clientCpuUsPerEvent).sort((a, b) => a - b);
  console.log(`${t}: ev/s ${Math.round(e[0])}–${Math.round(e.at(-1))} (median ${Math.round(e[e.length >> 1])}); client µs/ev ${c[0].toFixed(2)}–${c.at(-1).toFixed(2)} (median ${c[c.length >> 1].toFixed(2)})`);
}
process.exit(0);
