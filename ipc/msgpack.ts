// The one place that knows msgpackr's settings. The wire must stay plain MessagePack that any
// standard library reads (docs/protocol.md): no records, no structured clone, no extensions, undefined
// as nil, maps as plain objects, and integers as msgpack integers — including those ≥ 2^32.
import { Packr, Unpackr, RESERVE_START_SPACE, type Options } from 'msgpackr';
import { AstraError } from '../protocol/index.js';

const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
// int64AsType 'auto' (numbers inside ±2^53, bigints outside) is missing from msgpackr's typings.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' } as unknown as Options);

/** Past this size msgpackr's shared output buffer is swapped for a small one, so it is not kept alive. */
export const LARGE_OUTPUT_BYTES = 1024 * 1024;
export const FRESH_BUFFER_BYTES = 64 * 1024;

export const TWO_32 = 0x1_0000_0000;
const REWRITE_FLOATS = 0;
const FIND_FOREIGN = 1;

/** Items still to come in each open map or array (a map of n entries counts 2n), and which are maps. */
let openItems = new Float64Array(64);
let openIsMap = new Uint8Array(64);

function isExtensionToken(b: number): boolean {
  return (b >= 0xc7 && b <= 0xc9) || (b >= 0xd4 && b <= 0xd8);
}

function isStringToken(b: number): boolean {
  return (b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb;
}

/** What a MessagePack token's first byte says the value is, for error messages. */
export function tokenTypeName(b: number): string {
  if (b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)) return 'an integer';
  if (b <= 0x8f || b === 0xde || b === 0xdf) return 'a map';
  if (b <= 0x9f || b === 0xdc || b === 0xdd) return 'an array';
  if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) return 'a string';
  if (b === 0xc0) return 'a nil';
  if (b === 0xc2 || b === 0xc3) return 'a boolean';
  if (b === 0xca || b === 0xcb) return 'a float';
  if (b >= 0xc4 && b <= 0xc6) return 'a bin';
  return 'an extension';
}

/**
 * One pass over msgpack tokens (not values: map and array headers are followed by their items as
 * tokens), skipping string, bin and ext payloads. In REWRITE_FLOATS mode it rewrites integral
 * float64s in place; in FIND_FOREIGN mode it returns the offset of the first extension or 0xc1
 * byte, or of the first map key that is not a string (msgpackr would turn an integer key into a
 * string silently and refuse a bin key with a message about its own options). Returns -1 otherwise.
 */
function scanTokens(buf: Buffer, start: number, end: number, mode: typeof REWRITE_FLOATS | typeof FIND_FOREIGN): number {
  let p = start;
  let depth = 0;
  while (p < end) {
    const b = buf[p]!;
    if (mode === FIND_FOREIGN && depth > 0) {
      const top = depth - 1;
      const left = openItems[top]!;
      if (openIsMap[top] === 1 && left % 2 === 0 && !isStringToken(b)) return p;
      openItems[top] = left - 1;
      // Containers this token completes are closed now; one this token opens is pushed below.
      while (depth > 0 && openItems[depth - 1] === 0) depth--;
    }
    if (b <= 0x7f || b >= 0xe0) p += 1; // fixint
    else if (b <= 0x9f) {
      // fixmap / fixarray header
      if (mode === FIND_FOREIGN && (b & 0x0f) > 0) depth = open(depth, b <= 0x8f ? 2 * (b & 0x0f) : b & 0x0f, b <= 0x8f);
      p += 1;
    } else if (b <= 0xbf) p += 1 + (b & 0x1f); // fixstr
    else {
      switch (b) {
        case 0xcb: {
          if (mode === REWRITE_FLOATS) {
            const v = buf.readDoubleBE(p + 1);
            if (Number.isSafeInteger(v)) {
              const hi = Math.floor(v / TWO_32);
              buf[p] = v < 0 ? 0xd3 : 0xcf;
              buf.writeInt32BE(hi, p + 1);
              buf.writeUInt32BE(v - hi * TWO_32, p + 5);
            }
          }
          p += 9;
          break;
        }
        case 0xc0: case 0xc2: case 0xc3: p += 1; break;
        case 0xc4: p += 2 + buf[p + 1]!; break;
        case 0xc5: p += 3 + buf.readUInt16BE(p + 1); break;
        case 0xc6: p += 5 + buf.readUInt32BE(p + 1); break;
        case 0xca: p += 5; break;
        case 0xcc: case 0xd0: p += 2; break;
        case 0xcd: case 0xd1: p += 3; break;
        case 0xce: case 0xd2: p += 5; break;
        case 0xcf: case 0xd3: p += 9; break;
        case 0xd9: p += 2 + buf[p + 1]!; break;
        case 0xda: p += 3 + buf.readUInt16BE(p + 1); break;
        case 0xdb: p += 5 + buf.readUInt32BE(p + 1); break;
        case 0xdc: case 0xde: {
          const n = buf.readUInt16BE(p + 1);
          if (mode === FIND_FOREIGN && n > 0) depth = open(depth, b === 0xde ? 2 * n : n, b === 0xde);
          p += 3;
          break;
        }
        case 0xdd: case 0xdf: {
          const n = buf.readUInt32BE(p + 1);
          if (mode === FIND_FOREIGN && n > 0) depth = open(depth, b === 0xdf ? 2 * n : n, b === 0xdf);
          p += 5;
          break;
        }
        default: {
          // 0xc1 (never used) and the extension family 0xc7-0xc9, 0xd4-0xd8.
          if (mode === FIND_FOREIGN) return p;
          if (b === 0xc7) p += 3 + buf[p + 1]!;
          else if (b === 0xc8) p += 4 + buf.readUInt16BE(p + 1);
          else if (b === 0xc9) p += 6 + buf.readUInt32BE(p + 1);
          else if (b >= 0xd4 && b <= 0xd8) p += 2 + (1 << (b - 0xd4));
          else p += 1;
        }
      }
    }
  }
  return -1;
}

/** Pushes a container of `items` tokens; returns the new depth. */
function open(depth: number, items: number, isMap: boolean): number {
  if (depth === openItems.length) {
    const items2 = new Float64Array(depth * 2);
    items2.set(openItems);
    openItems = items2;
    const maps2 = new Uint8Array(depth * 2);
    maps2.set(openIsMap);
    openIsMap = maps2;
  }
  openItems[depth] = items;
  openIsMap[depth] = isMap ? 1 : 0;
  return depth + 1;
}

/**
 * msgpackr writes every number outside the 32-bit range as float64, so `Date.now()` would reach a
 * Python or Rust peer as a float. float64 (0xcb) and int64/uint64 (0xd3/0xcf) are both 9 bytes, so
 * integral safe-range floats are rewritten in place after packing: no copy, no walk over the value.
 */
export function rewriteIntegralFloats(buf: Buffer, start: number, end: number): void {
  // Fast path: no 0xcb byte anywhere means no float64 was written.
  const first = buf.indexOf(0xcb, start);
  if (first === -1 || first >= end) return;
  scanTokens(buf, start, end, REWRITE_FLOATS);
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
 * Decodes one plain MessagePack value. Throws AstraError('parse_error') for anything that is not
 * exactly one well-formed value (garbage, truncation, trailing bytes, nesting so deep it overflows
 * the stack) and AstraError('invalid_request') for extension types: msgpackr would otherwise turn
 * them into Date, RegExp, Set or Error objects, or records, which no other language's peer sends.
 * Decoded `bin` values are Buffers that share memory with `bytes`.
 */
export function decode(bytes: Uint8Array): unknown {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let foreign: number;
  try {
    foreign = scanTokens(buf, 0, buf.length, FIND_FOREIGN);
  } catch {
    foreign = -1; // a length past the end: unpack below reports the truncation
  }
  if (foreign !== -1) {
    const b = buf[foreign]!;
    if (b === 0xc1) throw new AstraError('parse_error', `the frame is not valid MessagePack: byte 0xc1 at offset ${foreign}`);
    if (!isExtensionToken(b))
      throw new AstraError('invalid_request', `map keys must be strings; found ${tokenTypeName(b)} key at offset ${foreign}`, {
        offset: foreign,
      });
    const type = buf[foreign + (b >= 0xd4 ? 1 : b === 0xc7 ? 2 : b === 0xc8 ? 3 : 5)];
    throw new AstraError('invalid_request', `MessagePack extension type ${type} at offset ${foreign} is not part of the protocol; send plain values`, {
      extensionType: type,
    });
  }
  try {
    return unpackr.unpack(buf);
  } catch (e) {
    const why = e instanceof RangeError ? 'it nests too deeply' : e instanceof Error ? e.message : String(e);
    throw new AstraError('parse_error', `the frame is not valid MessagePack: ${why}`);
  }
}

/**
 * Decodes one MessagePack value without the extension pre-scan: for frames from an authenticated
 * daemon. With the client's `validate: 'full'` the envelope check next (checkPlainValue) refuses the
 * Date, RegExp, Set and Error objects extensions decode to; with the default `'envelope'` the daemon
 * is trusted for shape and such a value would reach the application (the daemon never sends one).
 * An unknown extension throws. Same errors as decode otherwise.
 */
export function decodeFromTrustedPeer(bytes: Uint8Array): unknown {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return unpackr.unpack(buf);
  } catch (e) {
    // Name the extension when that is what failed.
    decode(buf);
    const why = e instanceof RangeError ? 'it nests too deeply' : e instanceof Error ? e.message : String(e);
    throw new AstraError('parse_error', `the frame is not valid MessagePack: ${why}`);
  }
}
