// The frames a client receives most, decoded without msgpackr: `session/event` and `session/events`
// in the layout the daemon writes (wire-bytes.ts: sessionWire's heads, then each event's stored
// body) — {sessionId, seq, ts, type, data} with short ASCII ids and types and unsigned seq and ts,
// and a `data` that ipc/event-data.ts can read exactly (maps of short ASCII keys, strings, integers,
// booleans, nil, bin: command.output, message.delta, message.completed, usage, turn.*, ...). It
// gives the very value msgpackr gives for those bytes (same keys in the same order, numbers,
// strings, bin as a Buffer view of the frame: test/ipc/event-batch.test.ts), but the strings that
// repeat in every event (session id, type, turn id, the keys) are compared with the last ones seen
// instead of being decoded and allocated again, and there is no generic tokenizer in between:
// msgpackr spent about a sixth of a gateway's busy time on output batches, and about 40% of a chat
// observer's time on its per-event frames. Any other byte layout gives undefined, and the caller
// decodes the frame with msgpackr as before.
import { DataReader, FAIL, sameBytes } from './event-data.js';

/** Keys and the method as their MessagePack bytes (fixstr). */
const fixstr = (s: string): Buffer => Buffer.from([0xa0 | s.length, ...Buffer.from(s, 'latin1')]);
const HEAD = Buffer.concat([Buffer.from([0x82]), fixstr('method'), fixstr('session/events'), fixstr('params'), Buffer.from([0x82]), fixstr('sessionId')]);
const SINGLE_HEAD = Buffer.concat([Buffer.from([0x82]), fixstr('method'), fixstr('session/event'), fixstr('params'), Buffer.from([0x85]), fixstr('sessionId')]);
const EVENTS_KEY = fixstr('events');
const EVENT_HEAD = Buffer.concat([Buffer.from([0x85]), fixstr('sessionId')]);
const SEQ_KEY = fixstr('seq');
const TS_KEY = fixstr('ts');
const TYPE_KEY = fixstr('type');
const DATA_KEY = fixstr('data');
const TURN_KEY = fixstr('turnId');
const STREAM_KEY = fixstr('stream');
/** The two heads agree up to this byte: the method's fixstr length (0xad 'session/event', 0xae 'session/events'). */
const METHOD_AT = 8;

/** The last string read in one role (session id, type): its bytes and its value. */
class StringSlot {
  private bytes = Buffer.alloc(32);
  private length = -1;
  value = '';

  /** Reads the fixstr at `p` (ASCII only); returns the end, or FAIL. */
  read(buf: Buffer, p: number, end: number): number {
    if (p >= end) return FAIL;
    const b = buf[p]!;
    if (b < 0xa0 || b > 0xbf) return FAIL;
    const n = b & 0x1f;
    const start = p + 1;
    const stop = start + n;
    if (stop > end) return FAIL;
    if (n === this.length && sameBytes(buf, start, this.bytes, 0, n)) return stop;
    for (let i = start; i < stop; i++) if (buf[i]! > 0x7f) return FAIL;
    buf.copy(this.bytes, 0, start, stop);
    this.length = n;
    this.value = buf.toString('latin1', start, stop);
    return stop;
  }
}

function matches(buf: Buffer, p: number, end: number, key: Buffer): number {
  const n = key.length;
  return p + n <= end && sameBytes(buf, p, key, 0, n) ? p + n : FAIL;
}

export interface DecodedEvent {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
  data: unknown;
}

export type DecodedEventFrame =
  | { method: 'session/events'; params: { sessionId: string; events: unknown[] } }
  | { method: 'session/event'; params: DecodedEvent };

export class EventBatchDecoder {
  private readonly session = new StringSlot();
  private readonly eventSession = new StringSlot();
  private readonly type = new StringSlot();
  private readonly data = new DataReader();
  private readonly turn = new StringSlot();
  private readonly stream = new StringSlot();
  /** The event read last (readEvent). */
  private event: DecodedEvent | undefined;

  /**
   * The frame's value as msgpackr would give it, when it is such a frame; else undefined. With
   * `copyBins` its bin values are copies, not views of `buf` (a buffer about to be reused).
   */
  decode(buf: Buffer, copyBins = false): DecodedEventFrame | undefined {
    this.data.copyBins = copyBins;
    const end = buf.length;
    if (end <= SINGLE_HEAD.length) return undefined;
    if (buf[METHOD_AT] === SINGLE_HEAD[METHOD_AT]) {
      let p = matches(buf, 0, end, SINGLE_HEAD);
      if (p === FAIL || (p = this.readEvent(buf, p, end, this.eventSession)) !== end) return undefined;
      return { method: 'session/event', params: this.event! };
    }
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
    // Each event takes well over 30 bytes: a count the frame cannot hold is not this layout.
    if (count * 30 > end - p) return undefined;
    const events = new Array<unknown>(count);
    for (let i = 0; i < count; i++) {
      if ((p = matches(buf, p, end, EVENT_HEAD)) === FAIL || (p = this.readEvent(buf, p, end, this.eventSession)) === FAIL) return undefined;
      events[i] = this.event;
    }
    if (p !== end) return undefined;
    return { method: 'session/events', params: { sessionId, events } };
  }

  /** An event's map after its head (`{sessionId: `): the id, seq, ts, type, data, into `event`; its end, or FAIL. */
  private readEvent(buf: Buffer, p: number, end: number, session: StringSlot): number {
    const d = this.data;
    if ((p = session.read(buf, p, end)) === FAIL) return FAIL;
    if ((p = matches(buf, p, end, SEQ_KEY)) === FAIL || (p = d.readUint(buf, p, end)) === FAIL) return FAIL;
    const seq = d.uint;
    if ((p = matches(buf, p, end, TS_KEY)) === FAIL || (p = d.readUint(buf, p, end)) === FAIL) return FAIL;
    const ts = d.uint;
    if ((p = matches(buf, p, end, TYPE_KEY)) === FAIL || (p = this.type.read(buf, p, end)) === FAIL) return FAIL;
    if ((p = matches(buf, p, end, DATA_KEY)) === FAIL) return FAIL;
    const type = this.type.value;
    // Output, most of any stream, by its exact layout first ({turnId, stream, data: bin}): a third
    // cheaper than the general reader; anything else about it goes to the general reader.
    const q = type === 'command.output' ? this.readOutput(buf, p, end) : FAIL;
    if (q !== FAIL) p = q;
    else if ((p = d.read(buf, p, end, 0)) === FAIL) return FAIL;
    this.event = { sessionId: session.value, seq, ts, type, data: q !== FAIL ? this.output : d.value };
    return p;
  }

  /** The output read last (readOutput). */
  private output: { turnId: string; stream: string; data: Buffer } | undefined;

  /** command.output's data {turnId, stream, data: bin} at `p`, into `output`; its end, or FAIL. */
  private readOutput(buf: Buffer, p: number, end: number): number {
    if (buf[p] !== 0x83) return FAIL;
    if ((p = matches(buf, p + 1, end, TURN_KEY)) === FAIL || (p = this.turn.read(buf, p, end)) === FAIL) return FAIL;
    if ((p = matches(buf, p, end, STREAM_KEY)) === FAIL || (p = this.stream.read(buf, p, end)) === FAIL) return FAIL;
    // The output itself: a bin, by the general reader (a view of `buf`, or a copy with copyBins).
    const d = this.data;
    if ((p = matches(buf, p, end, DATA_KEY)) === FAIL || p >= end || buf[p]! < 0xc4 || buf[p]! > 0xc6 || (p = d.read(buf, p, end, 1)) === FAIL) return FAIL;
    this.output = { turnId: this.turn.value, stream: this.stream.value, data: d.value as Buffer };
    return p;
  }
}
