// The worker of ab-rt.mjs: round trips driven block by block from stdin.
// node rtblock-worker.mjs <tree> bare <socket> | astra <home>; stdin lines "seq N", "par N", "report".
import path from 'node:path';
import readline from 'node:readline';
const [tree, kind, where] = process.argv.slice(2);
let call, close;
if (kind === 'bare') {
  const { bare } = await import(path.join(tree, 'dist/bench/peers/bare.js'));
  const c = await bare.connect(where);
  let n = 0; call = () => c.echo(n++); close = () => c.close();
} else {
  const { AstraClient } = await import(path.join(tree, 'dist/client/index.js'));
  const c = await AstraClient.connect({ clientName: 'rtblock', home: where, autoStart: false, reconnect: false });
  call = () => c.ping(); close = () => c.close();
}
for (let i = 0, n = Number(process.env.AB_WARMUP ?? 3000); i < n; i++) await call();
const lat = []; let parCalls = 0, parSec = 0;
console.log('ready');
for await (const line of readline.createInterface({ input: process.stdin })) {
  const [cmd, arg] = line.split(' ');
  if (cmd === 'seq') {
    for (let i = 0, n = Number(arg); i < n; i++) { const t = process.hrtime.bigint(); await call(); lat.push(Number(process.hrtime.bigint() - t) / 1000); }
  } else if (cmd === 'par') {
    const n = Number(arg); let issued = 0; const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: 64 }, async () => { while (issued < n) { issued++; await call(); } }));
    parSec += Number(process.hrtime.bigint() - t0) / 1e9; parCalls += n;
  } else if (cmd === 'report') {
    lat.sort((a, b) => a - b);
    console.log(JSON.stringify({ p50: lat[lat.length >> 1], p99: lat[Math.floor(lat.length * 0.99)], callsPerSec: parCalls / parSec, n: lat.length }));
    await close(); process.exit(0);
  }
  console.log('done');
}
