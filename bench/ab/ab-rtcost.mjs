// CPU per call of the round trips between built trees: node bench/ab/ab-rtcost.mjs <rounds> <tree>... —
// client CPU (process.cpuUsage), daemon CPU (/proc/<pid>/stat), GCs and write/read syscalls per call
// (/proc/<pid>/io), 20,000 sequential pings and 100,000 with 64 in flight; QUIET=1 prints ranges only.
import path from 'node:path';
import { execFileSync } from 'node:child_process';
const [rounds, ...trees] = process.argv.slice(2);
const res = Object.fromEntries(trees.map((t) => [t, []]));
for (let r = 0; r < Number(rounds); r++) for (let i = 0; i < trees.length; i++) {
  const t = trees[(i + r) % trees.length];
  const { DaemonProc } = await import(path.join(t, 'dist/bench/daemon-proc.js'));
  const d = new DaemonProc(); await d.start();
  try {
    const out = JSON.parse(execFileSync(process.execPath, [...(process.env.AB_CLIENT_FLAGS ?? '').split(' ').filter(Boolean), new URL('./rtcost-worker.mjs', import.meta.url).pathname, t, d.home, String(d.pid)], { encoding: 'utf8' }));
    res[t].push(out);
    const s = out.seq, p = out.par;
    if (!process.env.QUIET) console.log(`${r} ${path.basename(t).padEnd(9)} seq: client ${s.clientUs.toFixed(2)} daemon ${s.daemonUs.toFixed(2)} µs/call, gc ${s.gcs} (${s.gcMs.toFixed(1)} ms), p50 ${s.p50.toFixed(1)} p99 ${s.p99.toFixed(1)} p99.9 ${s.p999.toFixed(1)} | 64: client ${p.clientUs.toFixed(2)} daemon ${p.daemonUs.toFixed(2)} µs/call, gc ${p.gcs}, ${Math.round(p.callsPerSec)}/s, syscalls/call client w ${p.cw.toFixed(3)} r ${p.cr.toFixed(3)} daemon w ${p.dw.toFixed(3)} r ${p.dr.toFixed(3)}`);
  } finally { await d.stop(); }
}
const rng = (xs, f = 2) => { xs = [...xs].sort((a, b) => a - b); return `${xs[0].toFixed(f)}–${xs.at(-1).toFixed(f)} (med ${xs[xs.length >> 1].toFixed(f)})`; };
for (const t of trees) { const R = res[t]; console.log(`${path.basename(t)}: seq client ${rng(R.map((x) => x.seq.clientUs))} daemon ${rng(R.map((x) => x.seq.daemonUs))} µs/call, p99 ${rng(R.map((x) => x.seq.p99), 0)} µs; 64: client ${rng(R.map((x) => x.par.clientUs))} daemon ${rng(R.map((x) => x.par.daemonUs))} µs/call, ${rng(R.map((x) => x.par.callsPerSec), 0)} calls/s, gc seq ${rng(R.map((x) => x.seq.gcs), 0)} par ${rng(R.map((x) => x.par.gcs), 0)}`); }
process.exit(0);
