// The client's fast path for `session/events` batches of output (ipc/event-batch.ts) gives exactly
// what msgpackr gives for the daemon's bytes — same keys in the same order, numbers, strings, bin as
// a Buffer — across frames whose ids change, and leaves every other layout to msgpackr (undefined).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayHeader, encode, packEventBody, sessionWire } from '../../ipc/index.js';
import { EventBatchDecoder } from '../../ipc/event-batch.js';
import { decodeFromTrustedPeer } from '../../ipc/msgpack.js';

type Body = { seq: number; ts: number; type: string; data: unknown };
const output = (seq: number, ts: number, turnId: string, stream: 'stdout' | 'stderr', size: number): Body => ({
  seq,
  ts,
  type: 'command.output',
  data: { turnId, stream, data: Buffer.alloc(size, seq & 0xff) },
});

/** A batch frame's payload as the daemon writes it (daemon/subscriptions.ts: batchHead, the count, then per event its head and its stored body's tail: the body without its map header). */
function batch(sessionId: string, bodies: Body[]): Buffer {
  const wire = sessionWire(sessionId);
  const parts: Buffer[] = [wire.batchHead, arrayHeader(bodies.length)];
  for (const b of bodies) {
    const packed = packEventBody(b);
    parts.push(wire.eventHead, Buffer.from(Buffer.isBuffer(packed) ? packed : Buffer.concat([packed[0], packed[1]])).subarray(1));
  }
  return Buffer.concat(parts);
}

/** A value as its keys in order, Buffers as their bytes in base64 (toEqual on large Buffers is slow). */
const keysDeep = (v: unknown): unknown =>
  Buffer.isBuffer(v) ? ['Buffer', v.toString('base64')] : v && typeof v === 'object' ? Object.entries(v).map(([k, x]) => [k, keysDeep(x)]) : v;

describe('EventBatchDecoder', () => {
  it('decodes the daemon\'s output batches to msgpackr\'s very value, frame after frame with ids changing', () => {
    const d = new EventBatchDecoder();
    fc.assert(
      fc.property(
        fc.constantFrom('ses_01HXYZ', 'ses_other', 's'),
        fc.array(
          fc.record({
            seq: fc.oneof(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 2 ** 53 - 1 })),
            ts: fc.oneof(fc.constant(Date.now()), fc.integer({ min: 0, max: 2 ** 32 + 5 }), fc.constant(2 ** 53 - 1)),
            turnId: fc.constantFrom('turn_1', 'turn_2', 't', 'x'.repeat(31)),
            stream: fc.constantFrom('stdout' as const, 'stderr' as const),
            size: fc.oneof({ arbitrary: fc.integer({ min: 0, max: 300 }), weight: 8 }, { arbitrary: fc.constantFrom(255, 256, 65535, 65536), weight: 1 }),
          }),
          { minLength: 0, maxLength: 20 },
        ),
        (sessionId, specs) => {
          const frame = batch(sessionId, specs.map((s) => output(s.seq, s.ts, s.turnId, s.stream, s.size)));
          const fast = d.decode(frame);
          const slow = decodeFromTrustedPeer(frame);
          expect(fast).toBeDefined();
          expect(keysDeep(fast)).toEqual(keysDeep(slow));
          for (const e of fast!.params.events as Array<{ data: { data: unknown } }>) expect(Buffer.isBuffer(e.data.data)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('leaves other layouts to msgpackr: other events, non-ASCII ids, ts past 2^53, other methods, a cut or longer frame', () => {
    const d = new EventBatchDecoder();
    const good = batch('ses_1', [output(1, 5, 'turn_1', 'stdout', 10), output(2, 6, 'turn_1', 'stdout', 10)]);
    expect(keysDeep(d.decode(good))).toEqual(keysDeep(decodeFromTrustedPeer(good)));
    const cases: Buffer[] = [
      batch('ses_1', [output(1, 5, 'turn_1', 'stdout', 10), { seq: 2, ts: 6, type: 'message.delta', data: { turnId: 'turn_1', text: 'hi' } }]),
      batch('ses_1', [output(1, 5, 'turn_é', 'stdout', 10)]),
      batch('ses_é', [output(1, 5, 'turn_1', 'stdout', 10)]),
      batch('ses_1', [output(1, 2 ** 53 + 2, 'turn_1', 'stdout', 10)]),
      Buffer.from(encode({ method: 'session/event', params: { sessionId: 'ses_1', seq: 1, ts: 5, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: Buffer.alloc(3) } } })),
      Buffer.from(encode({ id: 1, result: {} })),
      Buffer.concat([good, Buffer.from([0xc0])]),
    ];
    for (let cut = 1; cut < good.length; cut += 3) cases.push(good.subarray(0, cut));
    for (const frame of cases) expect(d.decode(frame)).toBeUndefined();
    // After all of that, a good frame is still decoded right (the string slots hold no stale bytes).
    expect(keysDeep(d.decode(good))).toEqual(keysDeep(decodeFromTrustedPeer(good)));
  });
});
