// Event bodies: how a session's events are encoded in its journal and on the wire (one encoding
// serves both), read back lazily, and decoded. Also the packing of the journal's internal records.
import { Packr, Unpackr } from 'msgpackr';
import type { SessionEvent } from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';

/** A journal record's bytes beyond its body: length, checksum, kind. */
export const RECORD_OVERHEAD = 9;

// Journal bodies are private to the runtime, but plain msgpack keeps them readable by other tools.
const packr = new Packr({ useRecords: false, variableMapSize: true });
// int64AsType 'auto' (missing from msgpackr's typings): event bodies carry ts as a msgpack integer.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' } as unknown as ConstructorParameters<typeof Unpackr>[0]);
// Event bodies are written in the wire's own encoding (plain msgpack, undefined as nil, integers as
// integers) as the map {seq, ts, type, data}, so the daemon sends the journal's bytes as they are:
// a wire event is `{sessionId, ...}` followed by the body's four pairs (StoredEvent.body).
const eventPackr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
/** Past this size msgpackr's shared output buffer is swapped for a small one, so it is not kept alive. */
const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * An event as a session keeps it: its seq, its encoded body — the journal record's bytes, the map
 * {seq, ts, type, data} in the wire's encoding (first byte 0x84) — and the decoded event. Events read
 * back from the journal are decoded on first use only: the daemon forwards bodies as they are, so
 * catching a subscriber up from disk costs it no decoding.
 */
export class StoredEvent {
  // A live event keeps what it was made of and builds its object when someone asks: the daemon
  // never does, so the hot path allocates one object per event, not two.
  private liveTs = 0;
  private liveType: string | undefined = undefined;
  private liveData: unknown = undefined;
  // Views of the bytes, made when first asked for (the daemon asks only for the tail).
  private bodyView: Buffer | undefined = undefined;
  private tailView: Buffer | undefined = undefined;
  /**
   * A message.completed appended live whose text is exactly the concatenation of its turn's deltas
   * since the turn's start or previous message.completed (runtime/streamed-text.ts). Not kept in the
   * journal: an event read back is never marked.
   */
  textStreamed = false;

  /**
   * The body is bytes [start, end) of buf, followed by all of `extra` when that is set (a large
   * output kept by reference rather than copied next to its head).
   */
  constructor(
    readonly sessionId: string,
    readonly seq: number,
    private readonly buf: Buffer,
    private readonly start: number,
    private readonly end: number,
    private decoded: SessionEvent | undefined,
    readonly extra: Buffer | undefined = undefined,
  ) {}

  static live(sessionId: string, seq: number, buf: Buffer, start: number, end: number, ts: number, type: string, data: unknown, extra: Buffer | undefined): StoredEvent {
    const e = new StoredEvent(sessionId, seq, buf, start, end, undefined, extra);
    e.liveTs = ts;
    e.liveType = type;
    e.liveData = data;
    return e;
  }

  /** The encoded body: the map {seq, ts, type, data} (one contiguous copy when the event has an extra part). */
  get body(): Buffer {
    return (this.bodyView ??= this.extra ? Buffer.concat([this.buf.subarray(this.start, this.end), this.extra]) : this.buf.subarray(this.start, this.end));
  }

  /**
   * The body without its map header (0x84): the four pairs, as they follow `sessionId` on the wire —
   * up to where `extra` (when set) continues it.
   */
  get tail(): Buffer {
    return (this.tailView ??= this.buf.subarray(this.start + 1, this.end));
  }

  /** Made by the append path (StoredEvent.live), not read back: its data is at hand without decoding. */
  get isLive(): boolean {
    return this.liveType !== undefined;
  }

  get bodyLength(): number {
    return this.end - this.start + (this.extra ? this.extra.length : 0);
  }

  /** Bytes the event occupies in the journal (record header included). */
  get size(): number {
    return this.bodyLength + RECORD_OVERHEAD;
  }

  /** The event's type, without decoding a body read back from the journal where it can be peeked. */
  get type(): string {
    if (this.decoded) return this.decoded.type;
    if (this.liveType !== undefined) return this.liveType;
    return peekType(this.buf.subarray(this.start, this.end)) ?? this.event.type;
  }

  get event(): SessionEvent {
    if (this.decoded) return this.decoded;
    if (this.liveType !== undefined) {
      this.decoded = { sessionId: this.sessionId, seq: this.seq, ts: this.liveTs, type: this.liveType, data: this.liveData } as SessionEvent;
      this.liveData = undefined;
      return this.decoded;
    }
    const e = eventFromBody(this.sessionId, this.body);
    if (!e || e.seq !== this.seq) throw new AstraError('journal_corrupt', `session ${this.sessionId}: the journal record of event ${this.seq} cannot be decoded`);
    return (this.decoded = e);
  }
}

/** The seq of a map-format body without decoding it (its first pair is always seq); undefined otherwise. */
export function peekSeq(body: Buffer): number | undefined {
  // 0x84 (map of 4), 0xa3 "seq", then an unsigned integer.
  if (body.length < 6 || body[0] !== 0x84 || body[1] !== 0xa3 || body[2] !== 0x73 || body[3] !== 0x65 || body[4] !== 0x71) return undefined;
  const t = body[5]!;
  if (t < 0x80) return t;
  if (t === 0xcc && body.length >= 7) return body[6];
  if (t === 0xcd && body.length >= 8) return body.readUInt16BE(6);
  if (t === 0xce && body.length >= 10) return body.readUInt32BE(6);
  if ((t === 0xcf || t === 0xd3) && body.length >= 14) {
    const v = Number(body.readBigUInt64BE(6));
    return Number.isSafeInteger(v) ? v : undefined;
  }
  return undefined;
}

/** Where a msgpack unsigned/signed integer starting at `at` ends; undefined when it is not one. */
function skipInt(body: Buffer, at: number): number | undefined {
  const t = body[at];
  if (t === undefined) return undefined;
  if (t < 0x80 || t >= 0xe0) return at + 1;
  if (t === 0xcc || t === 0xd0) return at + 2;
  if (t === 0xcd || t === 0xd1) return at + 3;
  if (t === 0xce || t === 0xd2 || t === 0xca) return at + 5;
  if (t === 0xcf || t === 0xd3 || t === 0xcb) return at + 9;
  return undefined;
}

const TS_KEY = Buffer.from([0xa2, 0x74, 0x73]);
const TYPE_KEY = Buffer.from([0xa4, 0x74, 0x79, 0x70, 0x65]);

/** The type of a map-format body without decoding it ({seq, ts, type, data} in that order); undefined otherwise. */
export function peekType(body: Buffer): string | undefined {
  if (peekSeq(body) === undefined) return undefined;
  let at = skipInt(body, 5);
  if (at === undefined || !body.subarray(at, at + 3).equals(TS_KEY)) return undefined;
  at = skipInt(body, at + 3);
  if (at === undefined || !body.subarray(at, at + 5).equals(TYPE_KEY)) return undefined;
  at += 5;
  const t = body[at];
  if (t === undefined || t < 0xa0 || t > 0xbf) return undefined; // types are short: a fixstr
  const len = t - 0xa0;
  if (at + 1 + len > body.length) return undefined;
  return body.toString('latin1', at + 1, at + 1 + len);
}

/** Event bodies in plain MessagePack; the daemon passes the wire's packer instead (RuntimeOptions). */
export function defaultPackEventBody(body: EventBody): Buffer {
  const view = eventPackr.pack({ seq: body.seq, ts: body.ts, type: body.type, data: body.data });
  if (view.length >= LARGE_BODY_BYTES) eventPackr.useBuffer(Buffer.allocUnsafeSlow(64 * 1024));
  return view;
}

/** An encoded event body: one buffer, or [head, payload] whose concatenation is the body. */
export type EncodedBody = Buffer | readonly [Buffer, Uint8Array];

export interface EventBody {
  seq: number;
  ts: number;
  type: string;
  data: unknown;
}

/** An event from a journal record body (either format); undefined if it is not one. */
export function eventFromBody(sessionId: string, body: Buffer): SessionEvent | undefined {
  const value: unknown = unpackr.unpack(body);
  let seq: unknown, ts: unknown, type: unknown, data: unknown;
  if (Array.isArray(value)) {
    // The first format: [seq, ts, type, data], packed without the wire's settings.
    if (value.length !== 4) return undefined;
    [seq, ts, type, data] = value;
  } else if (typeof value === 'object' && value !== null && body[0] === 0x84) {
    ({ seq, ts, type, data } = value as Record<string, unknown>);
  } else return undefined;
  if (typeof seq !== 'number' || typeof ts !== 'number' || typeof type !== 'string' || typeof data !== 'object' || data === null) return undefined;
  return { sessionId, seq, ts, type, data } as SessionEvent;
}

/** An internal (non-event) record body: idempotency entries, settings. */
export function packInternal(value: unknown): Buffer {
  return packr.pack(value);
}

export function unpackInternal(body: Buffer): unknown {
  return unpackr.unpack(body);
}

/** A record body in the map format: the record's own, or (from the first, array format) encoded anew. */
export function mapBody(event: SessionEvent, recordBody: Buffer, pack: (body: EventBody) => EncodedBody): Buffer {
  if (recordBody[0] === 0x84) return recordBody;
  const encoded = pack({ seq: event.seq, ts: event.ts, type: event.type, data: event.data });
  return Buffer.isBuffer(encoded) ? Buffer.from(encoded) : Buffer.concat([encoded[0], encoded[1]]);
}

/** An event record read back from the journal: only its seq is read; the event is decoded on demand. */
export function storedFromRecord(sessionId: string, file: string, body: Buffer, offset: number, pack: (body: EventBody) => EncodedBody): StoredEvent {
  const seq = peekSeq(body);
  if (seq !== undefined) return new StoredEvent(sessionId, seq, body, 0, body.length, undefined);
  const event = eventFromBody(sessionId, body);
  if (!event) throw new AstraError('journal_corrupt', `${file}: unreadable event record at offset ${offset}`, { file });
  const mapped = mapBody(event, body, pack);
  return new StoredEvent(sessionId, event.seq, mapped, 0, mapped.length, event);
}
