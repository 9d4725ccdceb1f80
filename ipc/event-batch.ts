// The busiest frame a client receives, decoded without msgpackr: a `session/events` batch whose
// every event has the layout the daemon writes by hand for output (wire-bytes.ts: sessionWire's
// heads, packEventBody) — {sessionId, seq, ts, type, data: {turnId, stream, data: bin}} with short
// ASCII strings and unsigned integers. It gives the very value msgpackr gives for those bytes (same
// keys in the same order, numbers, strings, bin as a Buffer view of the frame: test/ipc/event-batch
// .test.ts), but the strings that repeat in every event (session id, type, turn id, stream, and the
// keys) are compared with the last ones seen instead of being decoded and allocated again: msgpackr
// spent about a sixth of a gateway's busy time on these frames. Any other byte layout gives
// undefined, and the caller decodes the frame with msgpackr as before.

/** Keys and the method as their MessagePack bytes (fixstr). */
const fixstr = (s: string): Buffer => Buffer.from([0xa0 | s.length, ...Buffer.from(s, 'latin1')]);
const HEAD = Buffer.concat([Buffer.from([0x82]), fixstr('method'), fixstr('session/events'), fixstr('params'), Buffer.from([0x82]), fixstr('sessionId')]);
const EVENTS_KEY = fixstr('events');
const SESSION_KEY = fixstr('sessionId');
const SEQ_KEY = fixstr('seq');
const TS_KEY = fixstr('ts');
const TYPE_KEY = fixstr('type');
const DATA_KEY = fixstr('data');
const TURN_KEY = fixstr('turnId');
const STREAM_KEY = fixstr('stream');

/** Where the cursor is after a failed step: every step returns it and the walk stops there. */
const FAIL = -1;

/** The last string read in one role (session id, type, turn id, stream): its bytes and its value. */
class StringSlot {
  private bytes = Buffer.alloc(32);
  private length = -1;
  value = '';

  /** Reads the fixstr at `p` (ASCII only); returns the end, or FAIL. */
  read(buf: Buffer, p: number, end: number): number {
    const b = buf[p]!;
    if (b < 0xa0 || b > 0xbf) return FAIL;
    const n = b & 0x1f;
    const start = p + 1;
    const stop = start + n;
    if (stop > end) return FAIL;
    if (n === this.length) {
      let i = 0;
      while (i < n && buf[start + i] === this.bytes[i]) i++;
      if (i === n) return stop;
    }
    for (let i = start; i < stop; i++) if (buf[i]! > 0x7f) return FAIL;
    buf.copy(this.bytes, 0, start, stop);
    this.length = n;
    this.value = buf.toString('latin1', start, stop);
    return stop;
  }
}

function matches(buf: Buffer, p: number, end: number, key: Buffer): number {
  const n = key.length;
  if (p + n > end) return FAIL;
  for (let i = 0; i < n; i++) if (buf[p + i] !== key[i]) return FAIL;
  return p + n;
}

export class EventBatchDecoder {
  private readonly session = new StringSlot();
  private readonly eventSession = new StringSlot();
  private readonly type = new StringSlot();
  private readonly turn = new StringSlot();
  private readonly stream = new StringSlot();
  /** The unsigned integer read last (uint). */
  private uint = 0;

  /** The frame's value as msgpackr would give it, when it is such a batch; else undefined. */
  decode(buf: Buffer): { method: 'session/events'; params: { sessionId: string; events: unknown[] } } | undefined {
    const end = buf.length;
    let p = matches(buf, 0, end, HEAD);
    if (p === FAIL || (p = this.session.read(buf, p, end)) === FAIL) return undefined;
    const sessionId = this.session.value;
    if ((p = matches(buf, p, end, EVENTS_KEY)) === FAIL || p >= end) return undefined;
    let count: number;
    const h = buf[p]!;
    if (h >= 0x90 && h <= 0x9f) {
      count = h & 0x0f;
      p += 1;
    } else if (h === 0xdc && p + 3 <= end) {
      count = buf.readUInt16BE(p + 1);
      p += 3;
    } else if (h === 0xdd && p + 5 <= end) {
      count = buf.readUInt32BE(p + 1);
      p += 5;
    } else return undefined;
    // Each event takes well over 40 bytes: a count the frame cannot hold is not this layout.
    if (count * 40 > end - p) return undefined;
    const events = new Array<unknown>(count);
    for (let i = 0; i < count; i++) {
      if (buf[p] !== 0x85) return undefined;
      if ((p = matches(buf, p + 1, end, SESSION_KEY)) === FAIL || (p = this.eventSession.read(buf, p, end)) === FAIL) return undefined;
      if ((p = matches(buf, p, end, SEQ_KEY)) === FAIL || (p = this.readUint(buf, p, end)) === FAIL) return undefined;
      const seq = this.uint;
      if ((p = matches(buf, p, end, TS_KEY)) === FAIL || (p = this.readUint(buf, p, end)) === FAIL) return undefined;
      const ts = this.uint;
      if ((p = matches(buf, p, end, TYPE_KEY)) === FAIL || (p = this.type.read(buf, p, end)) === FAIL) return undefined;
      if ((p = matches(buf, p, end, DATA_KEY)) === FAIL || buf[p] !== 0x83) return undefined;
      if ((p = matches(buf, p + 1, end, TURN_KEY)) === FAIL || (p = this.turn.read(buf, p, end)) === FAIL) return undefined;
      if ((p = matches(buf, p, end, STREAM_KEY)) === FAIL || (p = this.stream.read(buf, p, end)) === FAIL) return undefined;
      if ((p = matches(buf, p, end, DATA_KEY)) === FAIL || p >= end) return undefined;
      let length: number;
      const b = buf[p]!;
      if (b === 0xc4 && p + 2 <= end) {
        length = buf[p + 1]!;
        p += 2;
      } else if (b === 0xc5 && p + 3 <= end) {
        length = buf.readUInt16BE(p + 1);
        p += 3;
      } else if (b === 0xc6 && p + 5 <= end) {
        length = buf.readUInt32BE(p + 1);
        p += 5;
      } else return undefined;
      if (p + length > end) return undefined;
      const data = buf.subarray(p, (p += length));
      events[i] = { sessionId: this.eventSession.value, seq, ts, type: this.type.value, data: { turnId: this.turn.value, stream: this.stream.value, data } };
    }
    if (p !== end) return undefined;
    return { method: 'session/events', params: { sessionId, events } };
  }

  /** An unsigned integer as msgpackr gives it (int64AsType 'auto': a number below 2^53; larger ones are left to it). */
  private readUint(buf: Buffer, p: number, end: number): number {
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
}
