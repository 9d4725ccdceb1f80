// Every MessagePack byte Astra writes by hand, in one place: the hot paths that skip msgpackr.
// - packEventBody: command.output event bodies (most of any stream), byte for byte what msgpackr
//   writes for the same value, at a fraction of the cost;
// - sessionWire / arrayHeader: the pre-encoded heads of `session/event` and `session/events`
//   frames, so an event's stored body goes to every subscriber without being packed again.
// test/ipc/event-body.test.ts checks the hand-written bytes against msgpackr's.
import { encode, packWithReserve, FRESH_BUFFER_BYTES, LARGE_OUTPUT_BYTES, TWO_32 } from './msgpack.js';


const TYPE_AND_DATA_KEY = Buffer.from([
  0xa4, ...Buffer.from('type'), 0xae, ...Buffer.from('command.output'),
  0xa4, ...Buffer.from('data'), 0x83, 0xa6, ...Buffer.from('turnId'),
]);
let scratch = Buffer.allocUnsafeSlow(FRESH_BUFFER_BYTES + 1024);
const STREAM_KEY = Buffer.from([0xa6, ...Buffer.from('stream')]);
const DATA_KEY = Buffer.from([0xa4, ...Buffer.from('data')]);
const STDOUT = Buffer.from([0xa6, ...Buffer.from('stdout')]);
const STDERR = Buffer.from([0xa6, ...Buffer.from('stderr')]);

// The bytes between ts and the output are the same for every event of a turn's stream: the type,
// the data key, turnId and stream. Built once per (turnId, stream).
let midTurnId = '';
let midStream = '';
let mid = Buffer.alloc(0);
function middleFor(turnId: string, stream: 'stdout' | 'stderr'): Buffer {
  if (turnId !== midTurnId || stream !== midStream) {
    mid = Buffer.concat([
      TYPE_AND_DATA_KEY,
      Buffer.from([0xa0 | turnId.length]),
      Buffer.from(turnId, 'latin1'),
      STREAM_KEY,
      stream === 'stdout' ? STDOUT : STDERR,
      DATA_KEY,
    ]);
    midTurnId = turnId;
    midStream = stream;
  }
  return mid;
}

/** Own enumerable keys, counted without allocating (Object.keys would, per event). */
function hasThreeKeys(o: object): boolean {
  let n = 0;
  for (const k in o) if (Object.prototype.hasOwnProperty.call(o, k) && ++n > 3) return false;
  return n === 3;
}

// A turn's events share one turnId: remember the last one checked.
let lastAscii = '';
/** At most 31 characters, all ASCII (so a fixstr whose byte length is its length). */
function shortAsciiString(s: string): boolean {
  if (s === lastAscii) return true;
  if (s.length > 31) return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  lastAscii = s;
  return true;
}

function uintBytes(n: number): number {
  return n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < TWO_32 ? 5 : 9;
}

function writeUint(buf: Buffer, p: number, n: number): number {
  if (n < 0x80) buf[p++] = n;
  else if (n < 0x100) {
    buf[p++] = 0xcc;
    buf[p++] = n;
  } else if (n < 0x10000) {
    buf[p++] = 0xcd;
    buf.writeUInt16BE(n, p);
    p += 2;
  } else if (n < TWO_32) {
    buf[p++] = 0xce;
    buf.writeUInt32BE(n, p);
    p += 4;
  } else {
    buf[p++] = 0xcf;
    const hi = Math.floor(n / TWO_32);
    buf.writeUInt32BE(hi, p);
    buf.writeUInt32BE(n - hi * TWO_32, p + 4);
    p += 8;
  }
  return p;
}

/**
 * An event body {seq, ts, type, data} in the wire's encoding (a view, valid until the next call).
 * command.output — most of any stream — is written by hand, byte for byte what the generic path
 * writes, at a fraction of the cost; everything else goes through msgpackr. Output of 4 KiB or more
 * comes back as a pair [head, output] whose concatenation is the body, so the journal copies the
 * output once, straight from the engine's buffer (the pair, too, is valid until the next call).
 */
export function packEventBody(body: { seq: number; ts: number; type: string; data: unknown }): Buffer | readonly [Buffer, Uint8Array] {
  const d = body.data as { turnId?: unknown; stream?: unknown; data?: unknown } | null;
  if (
    body.type !== 'command.output' ||
    d === null ||
    typeof d !== 'object' ||
    typeof d.turnId !== 'string' ||
    (d.stream !== 'stdout' && d.stream !== 'stderr') ||
    !(d.data instanceof Uint8Array) ||
    !hasThreeKeys(d) ||
    !Number.isSafeInteger(body.seq) ||
    body.seq < 0 ||
    !Number.isSafeInteger(body.ts) ||
    body.ts < 0 ||
    !shortAsciiString(d.turnId)
  ) {
    // Only the four keys, whatever else the object carries (the runtime passes the event itself).
    return packWithReserve({ seq: body.seq, ts: body.ts, type: body.type, data: body.data }, 0);
  }
  const bytes = d.data;
  const binHead = bytes.length < 0x100 ? 2 : bytes.length < 0x10000 ? 3 : 5;
  const mid = middleFor(d.turnId, d.stream);
  const size = 5 + uintBytes(body.seq) + 3 + uintBytes(body.ts) + mid.length + binHead + bytes.length;
  // Written into a reused scratch buffer: the caller copies the body into its journal batch.
  if (size > scratch.length) scratch = Buffer.allocUnsafeSlow(Math.max(size, FRESH_BUFFER_BYTES));
  const buf = scratch;
  // Byte stores rather than Buffer#copy: the constant pieces are a few bytes, a call each would cost more.
  buf[0] = 0x84; // map of 4: seq, ts, type, data
  buf[1] = 0xa3;
  buf[2] = 0x73; // s
  buf[3] = 0x65; // e
  buf[4] = 0x71; // q
  let p = writeUint(buf, 5, body.seq);
  buf[p++] = 0xa2;
  buf[p++] = 0x74; // t
  buf[p++] = 0x73; // s
  p = writeUint(buf, p, body.ts);
  buf.set(mid, p);
  p += mid.length;
  if (bytes.length < 0x100) {
    buf[p++] = 0xc4;
    buf[p++] = bytes.length;
  } else if (bytes.length < 0x10000) {
    buf[p++] = 0xc5;
    buf.writeUInt16BE(bytes.length, p);
    p += 2;
  } else {
    buf[p++] = 0xc6;
    buf.writeUInt32BE(bytes.length, p);
    p += 4;
  }
  if (bytes.length >= SPLIT_PAYLOAD_BYTES) {
    // The caller copies the output once, from the engine's own buffer, right after the head.
    split[0] = buf.subarray(0, p);
    split[1] = bytes;
    return split;
  }
  buf.set(bytes, p);
  const view = buf.subarray(0, size);
  if (size >= LARGE_OUTPUT_BYTES) scratch = Buffer.allocUnsafeSlow(FRESH_BUFFER_BYTES);
  return view;
}

/** Output of at least this many bytes comes back from packEventBody as [head, output] (one copy less). */
const SPLIT_PAYLOAD_BYTES = 4096;
const split: [Buffer, Uint8Array] = [Buffer.alloc(0), new Uint8Array(0)];

// ---- frame heads for session events ----

/** Pre-encoded pieces of one session's frames. */
export interface SessionWire {
  /** `{method: 'session/event', params: {sessionId: <id>, ` — then seq, ts, type, data from the body. */
  single: Buffer;
  /** `{method: 'session/events', params: {sessionId: <id>, events: ` — then an array header. */
  batchHead: Buffer;
  /** `{sessionId: <id>, ` — the head of each event inside a batch. */
  eventHead: Buffer;
}

export function sessionWire(sessionId: string): SessionWire {
  const sid = Buffer.concat([Buffer.from([0x85]), encode('sessionId'), encode(sessionId)]);
  return {
    single: Buffer.concat([Buffer.from([0x82]), encode('method'), encode('session/event'), encode('params'), sid]),
    batchHead: Buffer.concat([
      Buffer.from([0x82]),
      encode('method'),
      encode('session/events'),
      encode('params'),
      Buffer.from([0x82]),
      encode('sessionId'),
      encode(sessionId),
      encode('events'),
    ]),
    eventHead: sid,
  };
}

export function arrayHeader(n: number): Buffer {
  if (n < 16) return Buffer.from([0x90 | n]);
  if (n < 0x10000) return Buffer.from([0xdc, n >> 8, n & 0xff]);
  const b = Buffer.allocUnsafe(5);
  b[0] = 0xdd;
  b.writeUInt32BE(n, 1);
  return b;
}

