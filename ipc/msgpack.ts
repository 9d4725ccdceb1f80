// The one place that knows msgpackr's settings. The wire must stay plain MessagePack that any
// standard library reads (DESIGN.md §3): no records, no structured clone, no extensions, undefined
// as nil, maps as plain objects, and integers as msgpack integers — including those ≥ 2^32.
import { Packr, Unpackr, RESERVE_START_SPACE, type Options } from 'msgpackr';
import { AstraError } from '../protocol/index.js';

const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
// int64AsType is missing from msgpackr's typings; 'auto' gives numbers inside ±2^53, bigints outside.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' } as unknown as Options);

/** Past this size msgpackr's shared output buffer is swapped for a small one, so it is not kept alive. */
const LARGE_OUTPUT_BYTES = 1024 * 1024;
const FRESH_BUFFER_BYTES = 64 * 1024;

const TWO_32 = 0x1_0000_0000;

/**
 * msgpackr writes every number outside the 32-bit range as float64, so `Date.now()` would reach a
 * Python or Rust peer as a float. float64 (0xcb) and int64/uint64 (0xd3/0xcf) are both 9 bytes, so
 * integral safe-range floats are rewritten in place after packing: no copy, no walk over the value.
 * The walk is over msgpack tokens, skipping string, bin and ext payloads.
 */
export function rewriteIntegralFloats(buf: Buffer, start: number, end: number): void {
  // Fast path: no 0xcb byte anywhere means no float64 was written.
  const first = buf.indexOf(0xcb, start);
  if (first === -1 || first >= end) return;
  let p = start;
  while (p < end) {
    const b = buf[p]!;
    if (b <= 0x7f || b >= 0xe0) p += 1; // fixint
    else if (b <= 0x9f) p += 1; // fixmap / fixarray header: the items follow as tokens
    else if (b <= 0xbf) p += 1 + (b & 0x1f); // fixstr
    else {
      switch (b) {
        case 0xcb: {
          const v = buf.readDoubleBE(p + 1);
          if (Number.isSafeInteger(v)) {
            const hi = Math.floor(v / TWO_32);
            const lo = v - hi * TWO_32;
            buf[p] = v < 0 ? 0xd3 : 0xcf;
            buf.writeInt32BE(hi, p + 1);
            buf.writeUInt32BE(lo, p + 5);
          }
          p += 9;
          break;
        }
        case 0xc0: case 0xc2: case 0xc3: case 0xc1: p += 1; break;
        case 0xc4: p += 2 + buf[p + 1]!; break;
        case 0xc5: p += 3 + buf.readUInt16BE(p + 1); break;
        case 0xc6: p += 5 + buf.readUInt32BE(p + 1); break;
        case 0xc7: p += 3 + buf[p + 1]!; break;
        case 0xc8: p += 4 + buf.readUInt16BE(p + 1); break;
        case 0xc9: p += 6 + buf.readUInt32BE(p + 1); break;
        case 0xca: p += 5; break;
        case 0xcc: case 0xd0: p += 2; break;
        case 0xcd: case 0xd1: p += 3; break;
        case 0xce: case 0xd2: p += 5; break;
        case 0xcf: case 0xd3: p += 9; break;
        case 0xd4: p += 3; break;
        case 0xd5: p += 4; break;
        case 0xd6: p += 6; break;
        case 0xd7: p += 10; break;
        case 0xd8: p += 18; break;
        case 0xd9: p += 2 + buf[p + 1]!; break;
        case 0xda: p += 3 + buf.readUInt16BE(p + 1); break;
        case 0xdb: p += 5 + buf.readUInt32BE(p + 1); break;
        case 0xdc: case 0xde: p += 3; break;
        case 0xdd: case 0xdf: p += 5; break;
        default: p += 1;
      }
    }
  }
}

/**
 * Packs a value leaving `reserve` uninitialised bytes in front (for a frame header). The result is
 * a view into msgpackr's shared output buffer: copy it before keeping it long (see encode()).
 */
export function packWithReserve(value: unknown, reserve: number): Buffer {
  const out = reserve > 0 ? packr.pack(value, RESERVE_START_SPACE | reserve) : packr.pack(value);
  rewriteIntegralFloats(out, reserve, out.length);
  // After a large message msgpackr keeps writing into its (now huge) buffer; every later small
  // view would pin it. Give it a fresh small buffer; the large one lives only as long as `out`.
  if (out.length >= LARGE_OUTPUT_BYTES) packr.useBuffer(Buffer.allocUnsafeSlow(FRESH_BUFFER_BYTES));
  return out;
}

/** Encodes a value as plain MessagePack. The returned Buffer is its own copy. */
export function encode(value: unknown): Buffer {
  const out = packWithReserve(value, 0);
  return out.length >= LARGE_OUTPUT_BYTES ? out : Buffer.from(out);
}

/**
 * Decodes one MessagePack value. Throws AstraError('parse_error') for anything that is not exactly
 * one well-formed value (garbage, truncation, trailing bytes, unknown extensions, nesting so deep
 * it overflows the stack). Extension types msgpackr knows (Date, ...) decode to class instances:
 * parseMessage rejects those.
 */
export function decode(bytes: Uint8Array): unknown {
  try {
    return unpackr.unpack(bytes);
  } catch (e) {
    const why = e instanceof RangeError ? 'it nests too deeply' : e instanceof Error ? e.message : String(e);
    throw new AstraError('parse_error', `the frame is not valid MessagePack: ${why}`);
  }
}
