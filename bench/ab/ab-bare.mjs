// The streaming and fan-out rows against the bare references, interleaved, from built trees:
// node bench/ab/ab-bare.mjs <rounds> <tree> <oldTree> — per round and row (warm stream, cold stream,
// 16-way fan-out) Astra (<tree>'s daemon), <tree>'s bare and durable bare servers and <oldTree>'s bare
// server take turns, the order rotating each round; prints events/s, server and client CPU per event
// and the ratios per round, and writes every figure to $TMPDIR/ab-bare.json. NOFAN=1 skips the fan-out.
// A tree is a checkout with node_modules and `npm run build` (see ab-stream.mjs); <oldTree> may be <tree>.
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
const [rounds, NEW, OLD] = process.argv.slice(2);
const lib = { new: await import(path.join(NEW, 'dist/bench/lib.js')), old: await import(path.join(OLD, 'dist/bench/lib.js')) };
const { DaemonProc } = await import(path.join(NEW, 'dist/bench/daemon-proc.js'));
const W = 200000, N = 50000;
const out = [];
async function peer(tree, kind, mode) {
  const l = lib[tree];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-rows-'));
  const sock = path.join(dir, 'b.sock');
  const srv = l.spawnWorker(['serve', kind, sock]);
  const { pid } = await srv.nextMessage(15000);
  try {
    if (mode === 'fan') {
      const cs = Array.from({ length: 16 }, () => l.spawnWorker(['peer', 'bare', 'fan', sock, String(N)]));
      await Promise.all(cs.map((c) => c.nextMessage(30000)));
      const tr = l.spawnWorker(['peer', 'bare', 'trigger', sock, String(N), '200']);
      const ends = await Promise.all(cs.map((c) => c.nextMessage(120000)));
      const tm = await tr.nextMessage();
      return { v: (16 * N) / ((Math.max(...ends.map((e) => e.endMs)) - tm.startMs) / 1000) };
    }
    const args = ['peer', 'bare', 'stream', sock, String(pid), String(W), '200'];
    if (mode === 'warm') args.push(String(W));
    const st = await l.spawnWorker(args).nextMessage(300000);
    return { v: st.eventsPerSec, s: st.serverCpuUsPerEvent, c: st.clientCpuUsPerEvent };
  } finally { srv.kill(); await srv.exited; fs.rmSync(dir, { recursive: true, force: true }); }
}
async function astra(mode) {
  const d = new DaemonProc(); await d.start();
  try {
    if (mode === 'fan') {
      const ctl = await d.client('ab-ctl');
      const { session } = await ctl.session.create({ title: 'fan', engine: 'synthetic', approvalPolicy: 'auto' });
      await ctl.acquireController(session.id);
      const head = (await ctl.session.read({ sessionId: session.id, limit: 1 })).headSeq;
      const cs = Array.from({ length: 16 }, () => lib.new.spawnWorker(['astra', 'fan', d.home, session.id, String(head)]));
      await Promise.all(cs.map((c) => c.nextMessage(30000)));
      const start = lib.new.wallMs();
      await ctl.turn.start({ sessionId: session.id, input: { text: `count=${N} size=200` } });
      const ends = await Promise.all(cs.map((c) => c.nextMessage(120000)));
      await ctl.close();
      return { v: (16 * N) / ((Math.max(...ends.map((e) => e.endMs)) - start) / 1000) };
    }
    const args = ['astra', 'stream', d.home, 'synthetic', `count=${W} size=200`];
    if (mode === 'warm') args.push(`count=${W} size=200`);
    const st = await lib.new.spawnWorker(args).nextMessage(300000);
    return { v: st.eventsPerSec, s: st.serverCpuUsPerEvent, c: st.clientCpuUsPerEvent };
  } finally { await d.stop(); }
}
const sides = [['astra', () => 0], ['bare', 'new', 'bare'], ['durable', 'new', 'bare-durable'], ['old', 'old', 'bare']];
for (let r = 0; r < Number(rounds); r++) {
  for (const mode of ['warm', 'cold', 'fan']) {
    if (mode === 'fan' && process.env.NOFAN) continue;
    const order = sides.map((_, i) => sides[(i + r) % sides.length]);
    const row = { r, mode, load: os.loadavg()[0].toFixed(1) };
    for (const [name, tree, kind] of order) {
      if (mode === 'fan' && name === 'durable') continue;
      const x = name === 'astra' ? await astra(mode) : await peer(tree, kind, mode);
      row[name] = x;
    }
    out.push(row);
    const f = (k) => row[k] ? `${k} ${Math.round(row[k].v)}${row[k].s !== undefined ? ` (s ${row[k].s.toFixed(2)} c ${row[k].c.toFixed(2)})` : ''}` : '';
    console.log(`${r} ${mode} load ${row.load}: ${['astra', 'bare', 'durable', 'old'].map(f).filter(Boolean).join('; ')}; astra/bare ${(row.astra.v / row.bare.v).toFixed(2)} astra/old ${(row.astra.v / row.old.v).toFixed(2)}${row.durable ? ` astra/durable ${(row.astra.v / row.durable.v).toFixed(2)}` : ''}`);
  }
}
fs.writeFileSync(path.join(os.tmpdir(), 'ab-bare.json'), JSON.stringify(out, null, 1));
process.exit(0);
