import { createHash } from 'node:crypto';
import { describe, it, expect, vi, afterEach } from 'vitest';
import fc from 'fast-check';
import { FrameDecoder, encodeFrame, decode } from '../../ipc/index.js';
import { AstraError, FORBIDDEN_KEYS, LIMITS, parseMessage } from '../../protocol/index.js';

// ---- arbitraries for valid messages ----

const key = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((k) => !FORBIDDEN_KEYS.has(k));
const text = fc.string({ unit: 'grapheme', maxLength: 40 });
const leaf = fc.oneof(
  text,
  fc.integer(),
  fc.maxSafeInteger(),
  fc.integer({ min: 2 ** 32, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -(2 ** 31) }),
  // -0 is written as the integer 0, which is the only sensible msgpack for it.
  // protocol/ refuses integral numbers beyond ±(2^53-1) (digits would be lost), so floats like 1e300 are not valid messages.
  fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d) || Number.isSafeInteger(d)).map((d) => (Object.is(d, -0) ? 0 : d)),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
);
const { value } = fc.letrec<{ value: unknown; map: Record<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('value'), { maxLength: 5 }), tie('map')),
  map: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
}));
const params = fc.dictionary(key, value, { maxKeys: 6 });
const id = fc.oneof(fc.nat(), fc.maxSafeInteger().filter((n) => n >= 0), fc.string({ minLength: 1, maxLength: 20 }));
const method = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 });

const request = fc.record(
  { id, method, params, trace: fc.record({ traceparent: text, tracestate: text }, { requiredKeys: [] }) },
  { requiredKeys: ['id', 'method'] },
);
const response = fc.record({ id, result: value });
const error = fc.record({
  id: fc.oneof(id, fc.constant(null)),
  error: fc.record(
    { code: fc.integer(), message: text, data: fc.record({ reason: text, extra: value }, { requiredKeys: ['reason'] }) },
    { requiredKeys: ['code', 'message'] },
  ),
});
const notification = fc.record({ method, params }, { requiredKeys: ['method'] });
const message = fc.oneof(request, response, error, notification);

function concat(frames: Buffer[]): Buffer {
  return Buffer.concat(frames);
}

/** Cuts a buffer at the given (sorted, deduplicated) offsets. */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let last = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(last, p));
    last = p;
  }
  chunks.push(bytes.subarray(last));
  return chunks;
}

/** `v` with every byte array replaced by its length and SHA-1, for a fast deep comparison. */
function digestBinary(v: unknown): unknown {
  if (v instanceof Uint8Array) return `bin:${v.length}:${createHash('sha1').update(v).digest('hex')}`;
  if (Array.isArray(v)) return v.map(digestBinary);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, digestBinary(x)]));
  return v;
}

describe('FrameDecoder', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('decodes any sequence of valid messages cut into arbitrary chunks to exactly the same sequence', () => {
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 20 }), fc.array(fc.nat(), { maxLength: 40 }), (messages, offsets) => {
        const wire = concat(messages.map((m) => encodeFrame(m, LIMITS.maxFrameBytes)));
        const received: unknown[] = [];
        const errors: AstraError[] = [];
        const decoder = new FrameDecoder({
          maxPayloadBytes: LIMITS.maxFrameBytes,
          frameDeadlineMs: 0,
          onFrame: (payload) => received.push(decode(payload)),
          onError: (e) => errors.push(e),
        });
        for (const chunk of cut(wire, offsets)) decoder.push(chunk);
        expect(errors).toEqual([]);
        expect(received).toEqual(messages);
        // Every decoded value is also a valid envelope of the same kind.
        for (const m of received) expect(() => parseMessage(m)).not.toThrow();
        expect(decoder.bufferedBytes).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('hands out many frames from one chunk and copies only frames that span chunks', () => {
    const frames = Array.from({ length: 100 }, (_, i) => encodeFrame({ method: 'n', params: { i } }, 1024));
    const wire = Buffer.concat(frames);
    const payloads: Buffer[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: 1024, onFrame: (p) => payloads.push(p), onError: () => {} });
    decoder.push(wire);
    expect(payloads).toHaveLength(100);
    // Same chunk, no copy: every payload is a view on the chunk's memory.
    for (const p of payloads) expect(p.buffer).toBe(wire.buffer);
    expect(payloads.map((p) => (decode(p) as { params: { i: number } }).params.i)).toEqual([...Array(100).keys()]);

    const spanning: Buffer[] = [];
    const d2 = new FrameDecoder({ maxPayloadBytes: 1024, onFrame: (p) => spanning.push(p), onError: () => {} });
    const one = encodeFrame({ method: 'n', params: { s: 'x'.repeat(100) } }, 1024);
    d2.push(one.subarray(0, 2));
    d2.push(one.subarray(2, 50));
    d2.push(one.subarray(50));
    expect(spanning).toHaveLength(1);
    expect(decode(spanning[0]!)).toEqual({ method: 'n', params: { s: 'x'.repeat(100) } });
  });

  for (const limit of [LIMITS.maxRequestBytes, LIMITS.maxFrameBytes]) {
    it(`rejects a length header over ${limit} bytes without allocating the payload`, () => {
      const allocations: number[] = [];
      for (const fn of ['alloc', 'allocUnsafe', 'allocUnsafeSlow'] as const) {
        const original = Buffer[fn].bind(Buffer) as (size: number) => Buffer;
        vi.spyOn(Buffer, fn).mockImplementation(((size: number) => {
          allocations.push(size);
          return original(size);
        }) as typeof Buffer.alloc);
      }
      for (const announced of [limit + 1, 0xffff_ffff]) {
        const errors: AstraError[] = [];
        const frames: Buffer[] = [];
        const decoder = new FrameDecoder({ maxPayloadBytes: limit, onFrame: (p) => frames.push(p), onError: (e) => errors.push(e) });
        const header = Buffer.alloc(4);
        header.writeUInt32BE(announced, 0);
        // The header arrives split, then a little payload, then more: none of it is kept.
        const chunks = [header.subarray(0, 1), Buffer.concat([header.subarray(1), Buffer.alloc(1000, 7)]), Buffer.alloc(1000, 7)];
        allocations.length = 0;
        for (const chunk of chunks) decoder.push(chunk);
        expect(errors).toHaveLength(1);
        expect(errors[0]!.reason).toBe('frame_too_large');
        expect(errors[0]!.data).toEqual({ size: announced, limit });
        expect(frames).toHaveLength(0);
        expect(decoder.bufferedBytes).toBe(0);
        // The only allocation the decoder made is the 4-byte join of the split header (what the
        // process's memory did meanwhile is the GC's business: not asserted).
        expect(allocations.every((n) => n <= 4)).toBe(true);
      }
    });
  }

  it('accepts a frame exactly at the limit', () => {
    const limit = 4096;
    const payloads: Buffer[] = [];
    const errors: AstraError[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: limit, onFrame: (p) => payloads.push(p), onError: (e) => errors.push(e) });
    const frame = Buffer.alloc(4 + limit, 1);
    frame.writeUInt32BE(limit, 0);
    decoder.push(frame);
    expect(errors).toEqual([]);
    expect(payloads[0]).toHaveLength(limit);
  });

  it('fails with frame_timeout when a started frame does not finish within the deadline, and then stops decoding', () => {
    // The decoder's clock and timer are fake: the deadline is exact, however slowly this process runs.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const frame = encodeFrame({ method: 'x', params: { s: 'y'.repeat(50) } }, 1024);
      const payloads: Buffer[] = [];
      const errors: AstraError[] = [];
      const decoder = new FrameDecoder({ maxPayloadBytes: 1024, frameDeadlineMs: 150, onFrame: (p) => payloads.push(p), onError: (e) => errors.push(e) });
      decoder.push(frame.subarray(0, 10));
      vi.advanceTimersByTime(149);
      expect(errors).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(errors.map((e) => e.reason)).toEqual(['frame_timeout']);
      expect(errors[0]!.data).toMatchObject({ deadlineMs: 150 });
      // It stops decoding: the rest of the frame makes no frame.
      decoder.push(frame.subarray(10));
      expect(payloads).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('measures the deadline on the clock it is given', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let now = 5_000;
      const frame = encodeFrame({ method: 'x', params: { s: 'y'.repeat(50) } }, 1024);
      const errors: AstraError[] = [];
      const decoder = new FrameDecoder({ maxPayloadBytes: 1024, frameDeadlineMs: 100, now: () => now, onFrame: () => {}, onError: (e) => errors.push(e) });
      decoder.push(frame.subarray(0, 10));
      // The timer fires, but by the given clock only 40 ms went by: the frame still has time.
      now += 40;
      vi.advanceTimersByTime(100);
      expect(errors).toEqual([]);
      now += 60;
      vi.advanceTimersByTime(60);
      expect(errors.map((e) => e.reason)).toEqual(['frame_timeout']);
      expect(errors[0]!.message).toContain('100 ms ago');
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not time out a stream of frames that each finish in time, even when chunks end mid-frame', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const frame = encodeFrame({ method: 'x', params: { s: 'y'.repeat(50) } }, 1024);
      const payloads: Buffer[] = [];
      const errors: AstraError[] = [];
      const decoder = new FrameDecoder({ maxPayloadBytes: 1024, frameDeadlineMs: 100, onFrame: (p) => payloads.push(p), onError: (e) => errors.push(e) });
      // Every 20 ms a chunk completes one frame and starts the next: 300 ms in all, three deadlines.
      decoder.push(frame.subarray(0, 20));
      for (let t = 0; t < 300; t += 20) {
        vi.advanceTimersByTime(20);
        decoder.push(Buffer.concat([frame.subarray(20), frame.subarray(0, 20)]));
      }
      decoder.push(frame.subarray(20));
      expect(errors).toEqual([]);
      expect(payloads).toHaveLength(16);
      // A frame that then stalls still times out.
      decoder.push(frame.subarray(0, 20));
      vi.advanceTimersByTime(100);
      expect(errors.map((e) => e.reason)).toEqual(['frame_timeout']);
      decoder.dispose();
    } finally {
      vi.useRealTimers();
    }
  });

  it('with direct reads, takes any mix of small and large frames in any read sizes, reading the rest of a large frame into its own buffer', () => {
    const big = fc.integer({ min: 64 * 1024, max: 300 * 1024 }).map((n) => ({ method: 'o', params: { data: Buffer.alloc(n, n & 0xff) } }));
    fc.assert(
      fc.property(fc.array(fc.oneof(message, big), { minLength: 1, maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 200 * 1024 }), { minLength: 1, maxLength: 30 }), (messages, sizes) => {
        const wire = concat(messages.map((m) => encodeFrame(m, LIMITS.maxFrameBytes)));
        const received: unknown[] = [];
        const payloads: Buffer[] = [];
        const targets = new Set<ArrayBufferLike>();
        const decoder = new FrameDecoder({
          maxPayloadBytes: LIMITS.maxFrameBytes,
          frameDeadlineMs: 0,
          onFrame: (payload) => {
            payloads.push(payload);
            received.push(decode(payload));
          },
          onError: (e) => {
            throw e;
          },
        });
        // A socket: each read fills at most the target it is given, however much is available.
        let at = 0;
        for (let i = 0; at < wire.length; i++) {
          const target = decoder.readTarget();
          const n = Math.min(target.length, wire.length - at, sizes[i % sizes.length]!);
          wire.copy(target, 0, at, at + n);
          at += n;
          targets.add(target.buffer);
          decoder.readDone(n, target);
        }
        // Binary compared by digest: toEqual walks 300 KiB buffers byte by byte (most of a minute here).
        expect(digestBinary(received)).toEqual(digestBinary(messages));
        expect(decoder.bufferedBytes).toBe(0);
        // A frame too big for one 64 KiB read was not joined from pieces: it was read into the buffer it was handed out in.
        for (const p of payloads) if (p.length >= 128 * 1024) expect(targets.has(p.buffer)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('with direct reads and onBorrowedFrame, lends whole frames of a read straight from the reused buffer and copies only a frame begun, in any read sizes', () => {
    const big = fc.integer({ min: 64 * 1024, max: 200 * 1024 }).map((n) => ({ method: 'o', params: { data: Buffer.alloc(n, n & 0xff) } }));
    fc.assert(
      fc.property(fc.array(fc.oneof({ arbitrary: message, weight: 6 }, { arbitrary: big, weight: 1 }), { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 100 * 1024 }), { minLength: 1, maxLength: 30 }), (messages, sizes) => {
        const wire = concat(messages.map((m) => encodeFrame(m, LIMITS.maxFrameBytes)));
        const received: unknown[] = [];
        let lent = 0;
        let scratch: ArrayBufferLike | undefined;
        const decoder = new FrameDecoder({
          maxPayloadBytes: LIMITS.maxFrameBytes,
          frameDeadlineMs: 0,
          onFrame: (payload) => {
            // Never the reused buffer: what goes to onFrame may be kept.
            expect(payload.buffer).not.toBe(scratch);
            received.push(decode(payload));
          },
          onBorrowedFrame: (payload) => {
            expect(payload.buffer).toBe(scratch);
            lent++;
            // Kept past the call only as a copy (as Connection does).
            received.push(decode(Buffer.from(payload)));
          },
          onError: (e) => {
            throw e;
          },
        });
        let at = 0;
        let wholeReads = 0;
        for (let i = 0; at < wire.length; i++) {
          const target = decoder.readTarget();
          const n = Math.min(target.length, wire.length - at, sizes[i % sizes.length]!);
          // The reused read buffer (a large frame's rest goes to that frame's own buffer instead).
          const isScratch = target.length === 64 * 1024 && target.byteOffset === 0 && target.buffer.byteLength === 64 * 1024;
          if (isScratch) scratch = target.buffer;
          wire.copy(target, 0, at, at + n);
          const before = received.length;
          decoder.readDone(n, target);
          if (received.length > before && isScratch) wholeReads++;
          // Junk in the reused buffer after the read: a lent frame used later would show it.
          if (isScratch) target.fill(0xc1, 0, n);
          at += n;
        }
        expect(digestBinary(received)).toEqual(digestBinary(messages));
        expect(decoder.bufferedBytes).toBe(0);
        if (sizes.every((s) => s >= 64 * 1024) && messages.every((m) => (m as { method?: string }).method !== 'o')) expect(lent).toBeGreaterThan(0);
        expect(lent).toBeLessThanOrEqual(wholeReads * messages.length);
      }),
      { numRuns: 80 },
    );
  });

  it('with onBorrowedFrame, lends the whole frames of a read from the reused buffer, and the frame begun at its end goes to onFrame as its own copy', () => {
    const got: Array<[string, unknown, boolean]> = [];
    let scratch: ArrayBufferLike | undefined;
    const decoder = new FrameDecoder({
      maxPayloadBytes: 1024,
      onFrame: (p) => got.push(['frame', decode(p), p.buffer === scratch]),
      onBorrowedFrame: (p) => got.push(['lent', decode(p), p.buffer === scratch]),
      onError: () => {},
    });
    const frames = ['a', 'b', 'c', 'd'].map((method) => encodeFrame({ method }, 1024));
    const wire = concat(frames);
    const cut = wire.length - 3;
    let target = decoder.readTarget();
    scratch = target.buffer;
    wire.copy(target, 0, 0, cut);
    decoder.readDone(cut, target);
    target.fill(0xc1, 0, cut);
    target = decoder.readTarget();
    expect(target.buffer).toBe(scratch);
    wire.copy(target, 0, cut);
    decoder.readDone(3, target);
    expect(got).toEqual([
      ['lent', { method: 'a' }, true],
      ['lent', { method: 'b' }, true],
      ['lent', { method: 'c' }, true],
      ['frame', { method: 'd' }, false],
    ]);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('with onBorrowedFrame, a frame over the limit in a lent read still fails with frame_too_large, after the whole frames before it', () => {
    const got: string[] = [];
    const errors: string[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: 64, onFrame: () => got.push('frame'), onBorrowedFrame: () => got.push('lent'), onError: (e) => errors.push(e.reason) });
    const target = decoder.readTarget();
    const ok = encodeFrame({ method: 'a' }, 64);
    ok.copy(target, 0);
    target.writeUInt32BE(1000, ok.length);
    decoder.readDone(ok.length + 10, target);
    expect(got).toEqual(['lent']);
    expect(errors).toEqual(['frame_too_large']);
  });

  it('with direct reads, copies small reads out of the one reused read buffer, so frames outlive the next read', () => {
    const payloads: Buffer[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: 1024, onFrame: (p) => payloads.push(p), onError: () => {} });
    const frames = [encodeFrame({ method: 'a' }, 1024), encodeFrame({ method: 'b' }, 1024)];
    let first: Buffer | undefined;
    for (const f of frames) {
      const target = decoder.readTarget();
      first ??= target;
      expect(target).toBe(first); // the same buffer every time
      f.copy(target);
      decoder.readDone(f.length, target);
    }
    expect(payloads.map((p) => (decode(p) as { method: string }).method)).toEqual(['a', 'b']);
    for (const p of payloads) expect(p.buffer).not.toBe(first!.buffer);
  });

  it('with direct reads, still fails a large frame that stops arriving with frame_timeout', async () => {
    const frame = encodeFrame({ method: 'o', params: { data: Buffer.alloc(256 * 1024, 7) } }, LIMITS.maxFrameBytes);
    const error = await new Promise<AstraError>((resolve) => {
      const decoder = new FrameDecoder({ maxPayloadBytes: LIMITS.maxFrameBytes, frameDeadlineMs: 100, onFrame: () => {}, onError: resolve });
      let target = decoder.readTarget();
      frame.copy(target, 0, 0, 1000);
      decoder.readDone(1000, target);
      target = decoder.readTarget(); // now the frame's own buffer
      frame.copy(target, 0, 1000, 70_000);
      decoder.readDone(69_000, target);
    });
    expect(error.reason).toBe('frame_timeout');
    expect(error.data).toMatchObject({ receivedBytes: 70_000 - 4 });
  });

  it('ignores everything after dispose', () => {
    const payloads: Buffer[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: 1024, onFrame: (p) => payloads.push(p), onError: () => {} });
    decoder.dispose();
    decoder.push(encodeFrame({ method: 'x' }, 1024));
    expect(payloads).toHaveLength(0);
  });
});

describe('encodeFrame', () => {
  it('throws frame_too_large with size and limit before producing anything', () => {
    let caught: unknown;
    try {
      encodeFrame({ method: 'x', params: { s: 'z'.repeat(200) } }, 100);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(AstraError);
    expect((caught as AstraError).reason).toBe('frame_too_large');
    expect((caught as AstraError).data).toMatchObject({ limit: 100 });
    expect((caught as AstraError).data.size as number).toBeGreaterThan(200);
  });

  it('returns a copy that later encodes do not overwrite', () => {
    const a = encodeFrame({ method: 'a', params: { n: 1 } }, 1024);
    const snapshot = Buffer.from(a);
    for (let i = 0; i < 1000; i++) encodeFrame({ method: 'b', params: { n: i, s: 'q'.repeat(i % 100) } }, 1024);
    expect(a.equals(snapshot)).toBe(true);
    // Small frames are copied out of msgpackr's shared buffer so they do not pin it.
    expect(a.buffer.byteLength).toBeLessThan(64 * 1024);
  });
});
