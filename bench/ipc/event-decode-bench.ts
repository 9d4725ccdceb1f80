// The client's decode of a chat observer's frames: msgpackr (decodeFromTrustedPeer) against the
// fast path (ipc/event-batch.ts, else msgpackr), per 50,000-token answer as the daemon writes it —
// turn.started and message.user alone, message.delta events alone with the chat bench's text sizes,
// then message.completed (compact), usage and turn.completed in one batch. An observer decodes only
// ~15 frames per answer, so most of its decoding runs cold or lukewarm: each sample is a fresh
// process, and the two ways alternate. Not part of npm test.
//   node dist/bench/ipc/event-decode-bench.js [processes per way, default 6]
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { arrayHeader, packEventBody, sessionWire } from '../../ipc/index.js';
import { EventBatchDecoder } from '../../ipc/event-batch.js';
import { decodeFromTrustedPeer } from '../../ipc/msgpack.js';

const SESSION = 'ses_mx4yt5kbdd277d4644b4';
const TURN = 'turn_mx4yt68r052f53a9d918';
/** The text sizes of one answer's message.delta events in a chat bench run (bytes; ~200,000 in all). */
const DELTA_BYTES = [2576, 8464, 12660, 12660, 12660, 24436, 12292, 16340, 16708, 11188, 13028, 20388, 14868, 17444, 6212];
const WARM_ANSWERS = 2000;

type Body = { seq: number; ts: number; type: string; data: unknown };
const tail = (b: Body): Buffer => {
  const packed = packEventBody(b);
  return Buffer.from(Buffer.isBuffer(packed) ? packed : Buffer.concat([packed[0], packed[1]])).subarray(1);
};

function answer(seq0: number): Buffer[] {
  const wire = sessionWire(SESSION);
  const ts = Date.now();
  let seq = seq0;
  const ev = (type: string, data: unknown): Body => ({ seq: seq++, ts, type, data });
  const frames = [
    Buffer.concat([wire.single, tail(ev('turn.started', { turnId: TURN, input: { text: 'tokens=50000' } }))]),
    Buffer.concat([wire.single, tail(ev('message.user', { turnId: TURN, text: 'tokens=50000' }))]),
  ];
  for (const n of DELTA_BYTES) frames.push(Buffer.concat([wire.single, tail(ev('message.delta', { turnId: TURN, text: 'tok '.repeat(n / 4) }))]));
  const last = [
    ev('message.completed', { turnId: TURN, text: '', finishReason: 'stop', textFromDeltas: true }),
    ev('usage', { turnId: TURN, promptTokens: 10, completionTokens: 50000 }),
    ev('turn.completed', { turnId: TURN, status: 'completed' }),
  ];
  frames.push(Buffer.concat([wire.batchHead, arrayHeader(last.length), ...last.flatMap((b) => [wire.eventHead, tail(b)])]));
  return frames;
}

/** A child: decodes `answers` answers one way; prints µs of CPU per answer. */
function child(way: string, answers: number): void {
  const all = Array.from({ length: answers }, (_, i) => answer(3 + i * 20));
  const fast = new EventBatchDecoder();
  const decode = way === 'msgpackr' ? (f: Buffer) => decodeFromTrustedPeer(f) : (f: Buffer) => fast.decode(f) ?? decodeFromTrustedPeer(f);
  const us: number[] = [];
  let sink = 0;
  for (const frames of all) {
    const t0 = process.cpuUsage();
    for (const f of frames) sink += (decode(f) as { method: string }).method.length;
    const t = process.cpuUsage(t0);
    us.push(t.user + t.system);
  }
  if (sink === 0) throw new Error('nothing decoded');
  process.stdout.write(JSON.stringify(us) + '\n');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

function main(): void {
  const n = Number(process.argv[2] ?? 6);
  const self = fileURLToPath(import.meta.url);
  const ways = ['msgpackr', 'astra'] as const;
  const first: Record<string, number[]> = { msgpackr: [], astra: [] };
  const luke: Record<string, number[]> = { msgpackr: [], astra: [] };
  const warm: Record<string, number[]> = { msgpackr: [], astra: [] };
  for (let i = 0; i < n; i++)
    for (const way of i % 2 ? [...ways].reverse() : ways) {
      for (const [answers, into] of [[15, 'cold'], [WARM_ANSWERS, 'warm']] as const) {
        const r = spawnSync(process.execPath, [self, 'child', way, String(answers)], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`event-decode-bench child failed: ${r.stderr}`);
        const us = JSON.parse(r.stdout) as number[];
        if (into === 'cold') {
          first[way]!.push(us[0]!);
          luke[way]!.push(median(us.slice(1)));
        } else warm[way]!.push(median(us.slice(-500)));
      }
    }
  const row = (what: string, m: Record<string, number[]>) =>
    console.log(
      `${what.padEnd(44)} msgpackr ${median(m.msgpackr!).toFixed(0).padStart(5)} µs (${range(m.msgpackr!)})   fast path ${median(m.astra!).toFixed(0).padStart(5)} µs (${range(m.astra!)})   ${(median(m.astra!) / median(m.msgpackr!)).toFixed(2)}×`,
    );
  console.log(`CPU to decode one chat answer's ${answer(0).length} frames (${n} processes per way, medians and ranges):`);
  row('first answer of a fresh process', first);
  row('answers 2–15 (median per process)', luke);
  row(`answers ${WARM_ANSWERS - 499}–${WARM_ANSWERS} (warm)`, warm);
}

if (process.argv[2] === 'child') child(process.argv[3]!, Number(process.argv[4]));
else main();
