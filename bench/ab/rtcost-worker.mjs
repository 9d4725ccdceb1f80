// The worker of ab-rtcost.mjs: node rtcost-worker.mjs <tree> <home> <daemonPid>.
import path from 'node:path';
import fs from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
const [tree, home, daemonPid] = process.argv.slice(2);
const { AstraClient } = await import(path.join(tree, 'dist/client/index.js'));
const cpuOf = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 1e4; };
const io = (pid) => { const t = fs.readFileSync(`/proc/${pid}/io`, 'utf8'); return { w: Number(/syscw: (\d+)/.exec(t)[1]), r: Number(/syscr: (\d+)/.exec(t)[1]) }; };
let gcs = 0, gcMs = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcs++; gcMs += e.duration; } }).observe({ entryTypes: ['gc'] });
const c = await AstraClient.connect({ clientName: 'rtcost', home, autoStart: false, reconnect: false });
for (let i = 0; i < 3000; i++) await c.ping();
const N = 20000;
let cpu0 = process.cpuUsage(), d0 = cpuOf(daemonPid), g0 = gcs, gm0 = gcMs, t0 = process.hrtime.bigint();
const lat = new Float64Array(N);
for (let i = 0; i < N; i++) { const t = process.hrtime.bigint(); await c.ping(); lat[i] = Number(process.hrtime.bigint() - t) / 1000; }
let sec = Number(process.hrtime.bigint() - t0) / 1e9;
let cpu = process.cpuUsage(cpu0);
lat.sort();
const seq = { clientUs: (cpu.user + cpu.system) / N, daemonUs: (cpuOf(daemonPid) - d0) / N, gcs: gcs - g0, gcMs: gcMs - gm0, p50: lat[N >> 1], p99: lat[Math.floor(N * 0.99)], p999: lat[Math.floor(N * 0.999)] };
const P = 100000; let issued = 0;
cpu0 = process.cpuUsage(); d0 = cpuOf(daemonPid); g0 = gcs; gm0 = gcMs; const ci0 = io(process.pid), di0 = io(daemonPid); t0 = process.hrtime.bigint();
await Promise.all(Array.from({ length: 64 }, async () => { while (issued < P) { issued++; await c.ping(); } }));
sec = Number(process.hrtime.bigint() - t0) / 1e9; cpu = process.cpuUsage(cpu0);
const par = { clientUs: (cpu.user + cpu.system) / P, daemonUs: (cpuOf(daemonPid) - d0) / P, gcs: gcs - g0, gcMs: gcMs - gm0, callsPerSec: P / sec, cw: (io(process.pid).w - ci0.w) / P, cr: (io(process.pid).r - ci0.r) / P, dw: (io(daemonPid).w - di0.w) / P, dr: (io(daemonPid).r - di0.r) / P };
console.log(JSON.stringify({ seq, par }));
await c.close();
process.exit(0);
