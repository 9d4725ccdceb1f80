// The client's fast path for the daemon's event frames (ipc/event-batch.ts, ipc/event-data.ts) gives
// exactly what msgpackr gives for the daemon's bytes — same keys in the same order, numbers, strings,
// bin as a Buffer — across frames whose ids change, and leaves every layout it cannot read exactly
// to msgpackr (undefined): a differential property over the daemon's own packing, and near-misses.
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

/** A stored body as the daemon keeps it (runtime journal: packEventBody), whole. */
function body(b: Body): Buffer {
  const packed = packEventBody(b);
  return Buffer.from(Buffer.isBuffer(packed) ? packed : Buffer.concat([packed[0], packed[1]]));
}

/** A batch frame's payload as the daemon writes it (daemon/subscriptions.ts: batchHead, the count, then per event its head and its stored body's tail: the body without its map header). */
function batch(sessionId: string, bodies: Body[]): Buffer {
  const wire = sessionWire(sessionId);
  const parts: Buffer[] = [wire.batchHead, arrayHeader(bodies.length)];
  for (const b of bodies) parts.push(wire.eventHead, body(b).subarray(1));
  return Buffer.concat(parts);
}

/** A lone event's frame as the daemon writes it: `single`, then the body's tail. */
const single = (sessionId: string, b: Body): Buffer => Buffer.concat([sessionWire(sessionId).single, body(b).subarray(1)]);

/** A value as its keys in order, Buffers as their bytes in base64, -0 and bigints told apart (toEqual on large Buffers is slow). */
const keysDeep = (v: unknown): unknown =>
  Buffer.isBuffer(v)
    ? ['Buffer', v.toString('base64')]
    : typeof v === 'bigint'
      ? ['bigint', String(v)]
      : Object.is(v, -0)
        ? ['-0']
        : v && typeof v === 'object'
          ? [Array.isArray(v) ? 'array' : 'object', Object.entries(v).map(([k, x]) => [k, keysDeep(x)])]
          : v;

/** msgpackr's value for the frame, or the error it throws. */
function slowly(frame: Buffer): unknown {
  try {
    return keysDeep(decodeFromTrustedPeer(frame));
  } catch (e) {
    return ['threw', String(e)];
  }
}

/** Whatever the fast path gives is msgpackr's value; returns whether it gave one. */
function agrees(d: EventBatchDecoder, frame: Buffer): boolean {
  const fast = d.decode(frame);
  if (fast === undefined) return false;
  expect(keysDeep(fast)).toEqual(slowly(frame));
  return true;
}

// ---- arbitraries ----

const ascii = (max: number) => fc.string({ unit: 'binary-ascii', maxLength: max });
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
/** Text of every kind: ASCII, any code point (4-byte sequences too), lone surrogates, and long runs across the str8/16/32 heads. */
const text = fc.oneof(
  { arbitrary: ascii(40), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), loneSurrogate), maxLength: 20 }), weight: 1 },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(31, 32, 255, 256, 65535, 65536, 20_000), fc.constantFrom('', 'é', '€', '😀', '\ud800'), fc.integer({ min: -3, max: 0 }))
      .map(([n, tail, less]) => 'x'.repeat(Math.max(0, n + less - Buffer.byteLength(tail))) + tail),
    weight: 1,
  },
);
const id = fc.oneof(
  { arbitrary: fc.constantFrom('turn_mx4yt68r052f53a9d918', 'turn_1', 't', 'x'.repeat(31)), weight: 4 },
  { arbitrary: fc.constantFrom('turn_é', 'x'.repeat(32), ''), weight: 1 },
);
const int = fc.oneof(
  fc.integer({ min: -200, max: 300 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.constantFrom(2 ** 32, 2 ** 53 - 1, 2 ** 53, -(2 ** 53) + 1, -(2 ** 53), 2 ** 60, -(2 ** 60), -(2 ** 31) - 1),
);
const scalar = fc.oneof(text, int, fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom(2n ** 63n, -(2n ** 63n)));
const key = fc.oneof(
  { arbitrary: fc.constantFrom('turnId', 'text', 'finishReason', 'textFromDeltas', 'status', 'promptTokens', 'input'), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 1 },
  { arbitrary: fc.constantFrom('__proto__', '0', '10', 'k'.repeat(40)), weight: 1 },
);
/** Any data: flat maps of the chat events' kinds, nested maps, arrays, bin, scalars. */
const data: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('map'), fc.array(scalar, { maxLength: 3 }), fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u))),
  map: fc.dictionary(key, tie('value'), { maxKeys: 6 }),
})).value;

/** The chat stream's events, as the runtime makes them. */
const chatData = fc.oneof(
  fc.record({ turnId: id, text }),
  fc.record({ turnId: id, text: fc.constant(''), finishReason: fc.constantFrom('stop', 'length'), textFromDeltas: fc.constant(true) }),
  fc.record({ turnId: id, promptTokens: fc.nat(), completionTokens: fc.nat() }),
  fc.record({ turnId: id, status: fc.constantFrom('completed', 'failed', 'interrupted') }),
  fc.record({ turnId: id, input: fc.record({ text }) }),
);
const chatType = fc.constantFrom('message.delta', 'message.user', 'message.completed', 'usage', 'turn.started', 'turn.completed');
const seq = fc.oneof(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 2 ** 53 - 1 }));
const ts = fc.oneof(fc.constant(Date.now()), fc.integer({ min: 0, max: 2 ** 32 + 5 }), fc.constant(2 ** 53 - 1), fc.constant(2 ** 53 + 2));
const sessionId = fc.oneof({ arbitrary: fc.constantFrom('ses_mx4yt5kbdd277d4644b4', 'ses_other', 's'), weight: 4 }, { arbitrary: fc.constantFrom('ses_é', 's'.repeat(32), ''), weight: 1 });
const event = (d: fc.Arbitrary<unknown>, type: fc.Arbitrary<string>) => fc.record({ seq, ts, type, data: d });

describe('EventBatchDecoder', () => {
  it("decodes the daemon's output batches to msgpackr's very value, frame after frame with ids changing", () => {
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
        (sid, specs) => {
          const frame = batch(sid, specs.map((s) => output(s.seq, s.ts, s.turnId, s.stream, s.size)));
          expect(agrees(d, frame)).toBe(true);
          for (const e of (d.decode(frame)!.params as { events: unknown[] }).events as Array<{ data: { data: unknown } }>) expect(Buffer.isBuffer(e.data.data)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("decodes the chat stream's frames (lone events and batches) exactly, and every one whose ids are short ASCII and text well-formed", () => {
    const d = new EventBatchDecoder();
    const wellFormed = (v: unknown): boolean =>
      typeof v === 'string' ? Buffer.from(v, 'utf8').toString('utf8') === v : v && typeof v === 'object' ? Object.values(v).every(wellFormed) : true;
    const plainId = (s: string) => /^[\x00-\x7f]{1,31}$/.test(s);
    fc.assert(
      fc.property(sessionId, fc.array(event(chatData, chatType), { minLength: 1, maxLength: 6 }), fc.boolean(), (sid, events, alone) => {
        const frame = alone ? single(sid, events[0]!) : batch(sid, events);
        const used = alone ? events.slice(0, 1) : events;
        const decoded = agrees(d, frame);
        const readable = plainId(sid) && used.every((e) => e.ts < 2 ** 53 && plainId((e.data as { turnId: string }).turnId) && wellFormed(e.data));
        if (readable) expect(decoded).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('gives msgpackr\'s value or undefined for any data, any envelope, and text bytes that are not UTF-8', () => {
    const d = new EventBatchDecoder();
    fc.assert(
      fc.property(sessionId, fc.array(event(data, fc.oneof(chatType, fc.constantFrom('command.output', 'x', 'é'))), { minLength: 1, maxLength: 4 }), fc.boolean(), (sid, events, alone) => {
        agrees(d, alone ? single(sid, events[0]!) : batch(sid, events));
      }),
      { numRuns: 400 },
    );
    // Near-misses of the envelope: other key orders, extra or missing keys, other methods, written by msgpackr.
    const envelope = fc.record(
      { sessionId: fc.oneof(sessionId, int), seq: fc.oneof(seq, int, fc.double()), ts, type: fc.oneof(chatType, int), data, extra: scalar },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(envelope, fc.constantFrom('session/event', 'session/events', 'session/eventz'), fc.boolean(), (params, method, wrap) => {
        const p = wrap ? { sessionId: params.sessionId, events: [params] } : params;
        agrees(d, Buffer.from(encode({ method, params: p })));
      }),
      { numRuns: 400 },
    );
    // 64-bit integers of every sign and size, written by hand (msgpackr writes floats past 2^53): a number inside ±2^53, a bigint past.
    const edge = fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }), fc.bigInt({ min: -(2n ** 53n) - 3n, max: -(2n ** 53n) + 3n }), fc.bigInt({ min: 2n ** 53n - 3n, max: 2n ** 53n + 3n }));
    fc.assert(
      fc.property(edge, fc.boolean(), (n, unsigned) => {
        const frame = single('ses_1', { seq: 1, ts: 1, type: 'usage', data: { turnId: 't', n: 0 } });
        const int64 = Buffer.alloc(9);
        if (n < 0n || (n < 2n ** 63n && !unsigned)) {
          int64[0] = 0xd3;
          int64.writeBigInt64BE(n, 1);
        } else {
          int64[0] = 0xcf;
          int64.writeBigUInt64BE(n, 1);
        }
        agrees(d, Buffer.concat([frame.subarray(0, frame.length - 1), int64]));
      }),
      { numRuns: 300 },
    );
    // A delta's text replaced by arbitrary bytes (invalid UTF-8, surrogates' encodings, cut sequences).
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.boolean(), (bytes, alone) => {
        const b: Body = { seq: 5, ts: Date.now(), type: 'message.delta', data: { turnId: 'turn_1', text: 'a'.repeat(bytes.length) } };
        const frame = alone ? single('ses_1', b) : batch('ses_1', [b]);
        // The text is the frame's last bytes.
        frame.set(bytes, frame.length - bytes.length);
        agrees(d, frame);
      }),
      { numRuns: 400 },
    );
  });

  it('leaves to msgpackr what it cannot read exactly: non-ASCII or long session ids, bigints, arrays, deep maps, ts past 2^53, invalid UTF-8, a cut or longer frame', () => {
    const d = new EventBatchDecoder();
    const delta = (text: string, turnId = 'turn_1', t = 6): Body => ({ seq: 2, ts: t, type: 'message.delta', data: { turnId, text } });
    const good = batch('ses_1', [output(1, 5, 'turn_1', 'stdout', 10), delta('hi')]);
    const goodSingle = single('ses_1', delta('hello'));
    expect(agrees(d, good)).toBe(true);
    expect(agrees(d, goodSingle)).toBe(true);
    const invalid = single('ses_1', delta('abc'));
    invalid[invalid.length - 2] = 0xff;
    const surrogate = single('ses_1', delta('abc'));
    surrogate.set([0xed, 0xa0, 0x80], surrogate.length - 3);
    const cases: Buffer[] = [
      batch('ses_é', [delta('hi')]),
      single('s'.repeat(32), delta('hi')),
      single('ses_1', delta('hi', 'turn_1', 2 ** 53 + 2)),
      single('ses_1', { seq: 1, ts: 1, type: 'usage', data: { turnId: 't', n: 2n ** 60n } }),
      single('ses_1', { seq: 1, ts: 1, type: 'x', data: { list: [1] } }),
      single('ses_1', { seq: 1, ts: 1, type: 'x', data: { a: { b: { c: {} } } } }),
      invalid,
      surrogate,
      Buffer.from(encode({ id: 1, result: {} })),
      Buffer.concat([good, Buffer.from([0xc0])]),
      Buffer.concat([goodSingle, Buffer.from([0xc0])]),
    ];
    for (let cut = 1; cut < good.length; cut += 3) cases.push(good.subarray(0, cut));
    for (let cut = 1; cut < goodSingle.length; cut += 2) cases.push(goodSingle.subarray(0, cut));
    for (const frame of cases) expect(d.decode(frame)).toBeUndefined();
    // After all of that, a good frame is still decoded right (the string slots and caches hold no stale bytes).
    expect(agrees(d, good)).toBe(true);
    expect(agrees(d, goodSingle)).toBe(true);
  });
});
