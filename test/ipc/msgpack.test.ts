import { describe, it, expect } from 'vitest';
import { decode as referenceDecode, Decoder } from '@msgpack/msgpack';
import { Packr } from 'msgpackr';
import { encode, decode, encodeFrame } from '../../ipc/index.js';
import { AstraError } from '../../protocol/index.js';

/** Finds the msgpack type byte in front of a map value by key (keys are short fixstr here). */
function typeByteOf(bytes: Buffer, key: string): number {
  const keyBytes = Buffer.concat([Buffer.from([0xa0 | key.length]), Buffer.from(key)]);
  const at = bytes.indexOf(keyBytes);
  expect(at).toBeGreaterThanOrEqual(0);
  return bytes[at + keyBytes.length]!;
}


/** The AstraError decode throws for these bytes (fails the test if it throws anything else or nothing). */
function decodeError(bytes: number[]): AstraError {
  try {
    decode(Buffer.from(bytes));
  } catch (e) {
    expect(e).toBeInstanceOf(AstraError);
    return e as AstraError;
  }
  throw new Error(`decode accepted ${Buffer.from(bytes).toString('hex')}`);
}

describe('msgpack settings', () => {
  it('writes a 13-digit millisecond timestamp as a msgpack integer that another library reads as an integer', () => {
    const ts = Date.now();
    expect(String(ts)).toHaveLength(13);
    const bytes = encode({ ts, before: -ts });
    expect(typeByteOf(bytes, 'ts')).toBe(0xcf);
    expect(typeByteOf(bytes, 'before')).toBe(0xd3);
    // Reference decoder with useBigInt64 reads int64/uint64 as bigint and floats as number:
    // a bigint proves the wire type is an integer.
    const strict = new Decoder({ useBigInt64: true }).decode(bytes) as { ts: unknown; before: unknown };
    expect(strict.ts).toBe(BigInt(ts));
    expect(strict.before).toBe(BigInt(-ts));
    expect(referenceDecode(bytes)).toEqual({ ts, before: -ts });
    expect(decode(bytes)).toEqual({ ts, before: -ts });
  });

  it('keeps every integer kind an integer and real floats floats', () => {
    const values = [0, 1, 127, 128, 255, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER, -1, -33, -(2 ** 31), -(2 ** 31) - 1, Number.MIN_SAFE_INTEGER];
    const bytes = encode({ values, half: 0.5, huge: 2 ** 60 });
    const strict = new Decoder({ useBigInt64: true }).decode(bytes) as { values: unknown[]; half: unknown; huge: unknown };
    strict.values.forEach((v, i) => expect(Number(v)).toBe(values[i]));
    for (const v of strict.values) expect(['number', 'bigint']).toContain(typeof v);
    expect(strict.half).toBe(0.5);
    // 2^60 is not a safe integer in JavaScript, so it stays a float rather than becoming a bigint here.
    expect(strict.huge).toBe(2 ** 60);
    expect(decode(bytes)).toEqual({ values, half: 0.5, huge: 2 ** 60 });
  });

  it('does not touch 0xcb bytes that sit inside strings or binaries', () => {
    const tricky = { s: '\u02c8'.repeat(20), b: Buffer.alloc(40, 0xcb), ts: 1_700_000_000_000 };
    const bytes = encode(tricky);
    expect(decode(bytes)).toEqual(tricky);
    expect(referenceDecode(bytes)).toEqual({ ...tricky, b: tricky.b });
  });

  it('writes undefined as nil and Buffers as bin, and decodes bin to a Buffer', () => {
    const bytes = encode({ u: undefined, b: Buffer.from([1, 2, 3]) });
    expect(typeByteOf(bytes, 'u')).toBe(0xc0);
    expect(typeByteOf(bytes, 'b')).toBe(0xc4);
    const back = decode(bytes) as { u: unknown; b: unknown };
    expect(back.u).toBeNull();
    expect(Buffer.isBuffer(back.b)).toBe(true);
    expect([...(back.b as Buffer)]).toEqual([1, 2, 3]);
  });

  it('produces frames a default @msgpack/msgpack decoder reads without msgpackr-only encodings', () => {
    const message = {
      method: 'session/event',
      params: {
        sessionId: 's-1',
        seq: 42,
        ts: Date.now(),
        type: 'command.output',
        data: { turnId: 't-1', stream: 'stdout', data: Buffer.from('hello\n'), nothing: undefined },
        nested: [{ a: [1, -2, 3.25, true, false, null, 'ünïcødé 🚀'] }],
      },
    };
    const frame = encodeFrame(message, 1 << 20);
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    const strict = new Decoder({ useBigInt64: true }).decode(frame.subarray(4)) as { params: { ts: unknown } };
    expect(typeof strict.params.ts).toBe('bigint');
    const plain = referenceDecode(frame.subarray(4));
    expect(plain).toEqual({
      ...message,
      params: { ...message.params, data: { ...message.params.data, data: Buffer.from("hello\n"), nothing: null } },
    });
  });

  it('turns garbage, truncated data and trailing bytes into parse_error', () => {
    const cases: [string, number[]][] = [
      ['truncated array', [0x92, 0x01]],
      ['truncated string', [0xa5, 0x41]],
      ['trailing bytes', [0x01, 0x02]],
      ['the never-used byte 0xc1', [0xc1]],
      ['empty payload', []],
      ['string length past the end', [0xdb, 0xff, 0xff, 0xff, 0xff]],
      ['nesting deep enough to overflow the stack', new Array(200_000).fill(0x91)],
    ];
    for (const [name, bytes] of cases) expect(decodeError(bytes), name).toMatchObject({ reason: 'parse_error' });
  });

  it('refuses every MessagePack extension type, including the ones msgpackr would turn into objects', () => {
    const fancy = new Packr({ moreTypes: true, structuredClone: true } as ConstructorParameters<typeof Packr>[0]);
    const cases: [string, Uint8Array][] = [
      ['unknown extension 0x01', Buffer.from([0xd4, 0x01, 0x05])],
      ['ext 0 (msgpackr: undefined)', Buffer.from([0x91, 0xd4, 0x00, 0x00])],
      ['ext8 inside a map', Buffer.from([0x81, 0xa1, 0x61, 0xc7, 0x01, 0x09, 0x00])],
      ['Date', fancy.pack({ d: new Date(0) })],
      ['RegExp', fancy.pack({ r: /x/ })],
      ['Set', fancy.pack({ s: new Set([1]) })],
      ['Error', fancy.pack({ e: new Error('boom') })],
      ['records', new Packr({ useRecords: true }).pack({ a: 1 })],
    ];
    for (const [name, bytes] of cases) {
      let caught: unknown;
      try {
        decode(bytes);
      } catch (e) {
        caught = e;
      }
      expect(caught, name).toBeInstanceOf(AstraError);
      expect((caught as AstraError).reason, name).toBe('invalid_request');
      expect((caught as AstraError).message, name).toMatch(/extension type/);
    }
  });

  it('refuses a map key that is not a string, at any depth, with one invalid_request naming its type and offset', () => {
    const cases: [string, number[], RegExp][] = [
      ['integer key', [0x81, 0x01, 0x02], /found an integer key at offset 1$/],
      ['bin key', [0x81, 0xc4, 0x01, 0x61, 0x02], /found a bin key at offset 1$/],
      ['nil key', [0x81, 0xc0, 0x01], /found a nil key at offset 1$/],
      ['array key', [0x81, 0x90, 0x01], /found an array key at offset 1$/],
      // {a: [{b: 1}], c: {5: 0}}: the bad key sits after a finished array of maps.
      ['integer key, nested', [0x82, 0xa1, 0x61, 0x91, 0x81, 0xa1, 0x62, 0x01, 0xa1, 0x63, 0x81, 0xcc, 0x05, 0x00], /found an integer key at offset 11$/],
      ['integer key in a map16', [0xde, 0x00, 0x01, 0x07, 0x01], /found an integer key at offset 3$/],
    ];
    for (const [name, bytes, message] of cases) {
      const caught = decodeError(bytes);
      expect(caught.reason, name).toBe('invalid_request');
      expect(caught.message, name).toMatch(/^map keys must be strings; /);
      expect(caught.message, name).toMatch(message);
      expect((caught as AstraError).message, name).not.toMatch(/mapsAsObjects/);
    }
    // Integer values (not keys), maps inside arrays and arrays inside maps all still decode.
    expect(decode(Buffer.from([0x82, 0xa1, 0x61, 0x92, 0x81, 0xa1, 0x62, 0x01, 0x05, 0xa1, 0x63, 0x81, 0xa1, 0x64, 0x00]))).toEqual({ a: [{ b: 1 }, 5], c: { d: 0 } });
    expect(decode(Buffer.from([0x93, 0x80, 0x01, 0x02]))).toEqual([{}, 1, 2]);
  });

  it('never emits msgpackr extensions for the values the protocol uses', () => {
    // A Packr with defaults would use records (0xd4 0x72 ...); ours must not.
    const value = { a: { b: 1 }, c: [{ b: 2 }, { b: 3 }] };
    expect(new Packr().pack(value)[0]).not.toBe(0x80 | 2);
    const bytes = encode(value);
    expect(bytes[0]).toBe(0x80 | 2);
    expect(referenceDecode(bytes)).toEqual(value);
  });
});
