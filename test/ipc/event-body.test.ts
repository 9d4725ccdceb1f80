// The hand-written encoder for command.output bodies must write exactly what the generic path writes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decode, packEventBody, packWithReserve } from '../../ipc/index.js';

/** An encoded body as one buffer (concatenating a [head, output] pair). */
const joinEncoded = (e: Buffer | readonly [Buffer, Uint8Array]): Buffer => (Buffer.isBuffer(e) ? e : Buffer.concat([e[0], e[1]]));

const body = (seq: number, ts: number, turnId: string, stream: 'stdout' | 'stderr', data: Buffer) => ({
  seq,
  ts,
  type: 'command.output',
  data: { turnId, stream, data },
});

describe('packEventBody', () => {
  it('writes command.output bodies byte for byte like the generic encoder, for any sizes and numbers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.oneof(fc.integer({ min: 0, max: 2 ** 32 + 5 }), fc.constant(Date.now())),
        fc.string({ maxLength: 40 }),
        fc.constantFrom('stdout' as const, 'stderr' as const),
        fc.oneof(fc.integer({ min: 0, max: 300 }), fc.constantFrom(255, 256, 4095, 4096, 65535, 65536, 70_000)),
        (seq, ts, turnId, stream, size) => {
          const b = body(seq, ts, turnId || 't', stream, Buffer.alloc(size, 7));
          const packed = packEventBody(b);
          // 4 KiB of output or more comes back as [head, output], the output not copied.
          expect(Buffer.isBuffer(packed)).toBe(size < 4096);
          if (!Buffer.isBuffer(packed)) expect(packed[1]).toBe(b.data.data);
          const hand = Buffer.from(joinEncoded(packed));
          const generic = Buffer.from(packWithReserve(b, 0));
          expect(hand.equals(generic)).toBe(true);
          // Decoded whole: the fields equal, the output compared as bytes (toEqual walks a Buffer byte by byte).
          const back = decode(hand) as ReturnType<typeof body>;
          expect({ ...back, data: { ...back.data, data: undefined } }).toEqual({ ...b, data: { ...b.data, data: undefined } });
          expect(Buffer.from(back.data.data).equals(b.data.data)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves every other shape to the generic encoder', () => {
    const others = [
      { seq: 1, ts: 2, type: 'message.delta', data: { turnId: 't', text: 'hi' } },
      { seq: 1, ts: 2, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: Buffer.from('x'), extra: 1 } },
      { seq: 1, ts: 2, type: 'command.output', data: { turnId: 'é', stream: 'stdout', data: Buffer.from('x') } },
    ];
    for (const o of others) expect(joinEncoded(packEventBody(o)).equals(Buffer.from(packWithReserve(o, 0)))).toBe(true);
  });
});
