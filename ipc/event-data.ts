// An event's `data` decoded without msgpackr, for ipc/event-batch.ts: the value msgpackr gives for
// the same bytes (our Unpackr's settings: maps as plain objects, int64AsType 'auto', bin as a view
// of the frame), or FAIL when the bytes hold anything this reader does not know to be exact — and
// the caller then decodes the whole frame with msgpackr.
//
// What it reads: maps of up to 15 entries (fixmap) nested at most MAX_DEPTH deep, whose keys are
// short ASCII strings (fixstr, not "__proto__", which msgpackr renames); strings of any head
// (fixstr, str8/16/32) whose bytes are well-formed UTF-8 (no lone surrogates' encodings, no
// overlong or cut sequences — for those msgpackr's several decoders need not agree with
// Buffer#toString, so they are left to it: see string()); integers of every width inside ±2^53 (msgpackr
// gives a bigint past 2^53); float64; nil; booleans; bin. Arrays, float32, ext, map16/32: FAIL.
//
// Short ASCII strings (keys, turn ids, `stream`, `status`, ...) repeat in every event of a turn:
// they come from a small cache of the bytes last seen at each hash slot instead of being decoded
// and allocated again (msgpackr does the same for keys only).
import { isAscii } from 'node:buffer';

/** Where the cursor is after a failed step: every step returns it and the walk stops there. */
export const FAIL = -1;
/** Maps inside maps: an event's data is flat or nearly (turn.started's {input: {text}}). */
const MAX_DEPTH = 3;
const SLOTS = 256;
/** fixstr's longest. */
const SLOT_BYTES = 31;

/**
 * Whether a[ap, ap + n) and b[bp, bp + n) hold the same bytes. One small function for every
 * comparison of the fast path (heads, keys, ids), so V8 optimizes it within an observer's first
 * frames: most of the rest runs only ~15 times an answer and stays in the interpreter.
 */
export function sameBytes(a: Buffer, ap: number, b: Buffer, bp: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (a[ap + i] !== b[bp + i]) return false;
  return true;
}

export class DataReader {
  /** The value read last. */
  value: unknown = undefined;
  /** The unsigned integer read last (readUint). */
  uint = 0;
  /** bin values as copies (Buffer.from) rather than views of the frame: the frame's buffer is about to be reused. */
  copyBins = false;
  private readonly cacheBytes = Buffer.alloc(SLOTS * SLOT_BYTES);
  /** -1: an empty slot. */
  private readonly cacheLength = new Int8Array(SLOTS).fill(-1);
  private readonly cacheString: string[] = new Array<string>(SLOTS).fill('');

  /** Reads one value at `p` into `value`; returns its end, or FAIL. */
  read(buf: Buffer, p: number, end: number, depth: number): number {
    if (p >= end) return FAIL;
    const b = buf[p]!;
    if (b <= 0x7f) {
      this.value = b;
      return p + 1;
    }
    if (b >= 0xe0) {
      this.value = b - 0x100;
      return p + 1;
    }
    if (b >= 0xa0 && b <= 0xbf) {
      const stop = p + 1 + (b & 0x1f);
      return stop > end ? FAIL : this.string(buf, p + 1, stop);
    }
    if (b >= 0x80 && b <= 0x8f) return this.map(buf, p + 1, end, b & 0x0f, depth);
    switch (b) {
      case 0xc0:
        this.value = null;
        return p + 1;
      case 0xc2:
        this.value = false;
        return p + 1;
      case 0xc3:
        this.value = true;
        return p + 1;
      case 0xd9:
      case 0xda:
      case 0xdb:
      case 0xc4:
      case 0xc5:
      case 0xc6: {
        const head = b === 0xd9 || b === 0xc4 ? 2 : b === 0xda || b === 0xc5 ? 3 : 5;
        if (p + head > end) return FAIL;
        const n = head === 2 ? buf[p + 1]! : head === 3 ? buf.readUInt16BE(p + 1) : buf.readUInt32BE(p + 1);
        const start = p + head;
        const stop = start + n;
        if (stop > end) return FAIL;
        if (b >= 0xd9) return this.string(buf, start, stop);
        this.value = this.copyBins ? Buffer.from(buf.subarray(start, stop)) : buf.subarray(start, stop);
        return stop;
      }
      case 0xcb:
        if (p + 9 > end) return FAIL;
        this.value = buf.readDoubleBE(p + 1);
        return p + 9;
      case 0xd0:
        if (p + 2 > end) return FAIL;
        this.value = buf.readInt8(p + 1);
        return p + 2;
      case 0xd1:
        if (p + 3 > end) return FAIL;
        this.value = buf.readInt16BE(p + 1);
        return p + 3;
      case 0xd2:
        if (p + 5 > end) return FAIL;
        this.value = buf.readInt32BE(p + 1);
        return p + 5;
      case 0xd3: {
        if (p + 9 > end) return FAIL;
        const hi = buf.readInt32BE(p + 1);
        // Inside ±2^53 exclusive (msgpackr's bounds are inclusive; the edges are left to it).
        if (hi >= 0x20_0000 || hi < -0x20_0000) return FAIL;
        this.value = hi * 0x1_0000_0000 + buf.readUInt32BE(p + 5);
        return p + 9;
      }
      default: {
        const q = this.readUint(buf, p, end);
        if (q !== FAIL) this.value = this.uint;
        return q;
      }
    }
  }

  /** An unsigned integer into `uint` (below 2^53; larger ones are left to msgpackr); its end, or FAIL. */
  readUint(buf: Buffer, p: number, end: number): number {
    if (p >= end) return FAIL;
    const b = buf[p]!;
    if (b <= 0x7f) {
      this.uint = b;
      return p + 1;
    }
    switch (b) {
      case 0xcc:
        if (p + 2 > end) return FAIL;
        this.uint = buf[p + 1]!;
        return p + 2;
      case 0xcd:
        if (p + 3 > end) return FAIL;
        this.uint = buf.readUInt16BE(p + 1);
        return p + 3;
      case 0xce:
        if (p + 5 > end) return FAIL;
        this.uint = buf.readUInt32BE(p + 1);
        return p + 5;
      case 0xcf: {
        if (p + 9 > end) return FAIL;
        const hi = buf.readUInt32BE(p + 1);
        if (hi >= 0x20_0000) return FAIL;
        this.uint = hi * 0x1_0000_0000 + buf.readUInt32BE(p + 5);
        return p + 9;
      }
      default:
        return FAIL;
    }
  }

  private map(buf: Buffer, p: number, end: number, entries: number, depth: number): number {
    if (depth >= MAX_DEPTH) return FAIL;
    // Keys are assigned one by one, as msgpackr does: the same order, a repeated key's last value.
    const o: Record<string, unknown> = {};
    for (let i = 0; i < entries; i++) {
      if (p >= end) return FAIL;
      const b = buf[p]!;
      if (b < 0xa0 || b > 0xbf) return FAIL;
      const stop = p + 1 + (b & 0x1f);
      if (stop > end || (p = this.shortAscii(buf, p + 1, stop)) === FAIL) return FAIL;
      const key = this.value as string;
      if (key === '__proto__' || (p = this.read(buf, p, end, depth + 1)) === FAIL) return FAIL;
      o[key] = this.value;
    }
    this.value = o;
    return p;
  }

  private string(buf: Buffer, start: number, stop: number): number {
    if (stop - start <= SLOT_BYTES && this.shortAscii(buf, start, stop) !== FAIL) return stop;
    // ASCII (the common case) as latin1: a scan and a copy, as msgpackr's native extractor does
    // (Node's UTF-8 decoder is several times slower on it). Otherwise Node's decoder, which replaces
    // every ill-formed sequence with U+FFFD (as do msgpackr's decoders, but maybe not as many): a
    // text without one came from well-formed UTF-8, which every decoder reads the same; a text with
    // a real U+FFFD is left to msgpackr too.
    if (isAscii(buf.subarray(start, stop))) {
      this.value = buf.toString('latin1', start, stop);
      return stop;
    }
    const s = buf.toString('utf8', start, stop);
    if (s.indexOf('\ufffd') !== -1) return FAIL;
    this.value = s;
    return stop;
  }

  /** The ASCII string in [start, stop) (at most SLOT_BYTES), from the cache when it holds those bytes; its end, or FAIL. */
  shortAscii(buf: Buffer, start: number, stop: number): number {
    const n = stop - start;
    if (n === 0) {
      this.value = '';
      return stop;
    }
    const slot = (n * 7 + buf[start]! * 31 + buf[stop - 1]! * 3 + buf[start + (n >> 1)]!) & (SLOTS - 1);
    const cached = this.cacheBytes;
    const at = slot * SLOT_BYTES;
    if (this.cacheLength[slot] === n && sameBytes(buf, start, cached, at, n)) {
      this.value = this.cacheString[slot];
      return stop;
    }
    for (let i = start; i < stop; i++) if (buf[i]! > 0x7f) return FAIL;
    buf.copy(cached, at, start, stop);
    this.cacheLength[slot] = n;
    const s = buf.toString('latin1', start, stop);
    this.cacheString[slot] = s;
    this.value = s;
    return stop;
  }
}
