// SSE frames (docs/http.md §Events): `id:` the seq, `event:` the type, `data:` the event as JSON,
// bytes (command output) as base64 text with `"encoding": "base64"` beside them.
//
// The fast path: command.output is nearly every event of a busy stream, and its shape is fixed, so
// its frame is written as a template around the base64 text instead of copying the event into a new
// object and walking it with JSON.stringify (about a third of the gateway's busy CPU in bench/web).
// It gives the very bytes the generic path gives (test/web/sse-frames.test.ts); anything it does
// not recognise exactly takes the generic path.
import type { SessionEvent } from '../../protocol/index.js';
import type { HttpEvent, StreamEventData, StreamEventName } from './contract.js';

/** An event as JSON: bytes (command output) become base64, with the encoding named beside them. */
export function eventToJson(event: SessionEvent): HttpEvent {
  const data = event.data as Record<string, unknown>;
  let jsonData: Record<string, unknown> = data;
  if (data && data.data instanceof Uint8Array) {
    const bytes = data.data;
    jsonData = { ...data, data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), encoding: 'base64' };
  }
  return { sessionId: event.sessionId, seq: event.seq, ts: event.ts, type: event.type, data: jsonData };
}

/** A frame of the stream's own events (no `id:`, so Last-Event-ID stays the last seq). */
export function streamFrame<N extends StreamEventName>(event: N, data: StreamEventData<N>): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The generic frame of a session event. */
export function genericEventFrame(e: SessionEvent): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(eventToJson(e))}\n\n`;
}

/** Ids and names that JSON writes as they are (no escapes). */
const PLAIN = /^[A-Za-z0-9_.:-]*$/;

/** The frame of a session event (command.output by the template, everything else generic), and whether it is all ASCII. */
export function eventFrame(e: SessionEvent, template: OutputTemplate = shared): { text: string; ascii: boolean } {
  const text = template.frame(e);
  return text === undefined ? { text: genericEventFrame(e), ascii: false } : { text, ascii: true };
}

const TAIL = '","encoding":"base64"}}\n\n';
const TAIL_BYTES = Buffer.from(TAIL, 'latin1');
const ID_BYTES = Buffer.from('id: ', 'latin1');
const TS_KEY = ',"ts":';

/**
 * The command.output template. Its constant parts for the last (sessionId, turnId, stream) are kept
 * (a stream's output is nearly always one turn's stdout), so the ids are checked and written into
 * the template once per turn, not once per event.
 *
 * Two ways out, with the same bytes: `frame` gives the frame as a string (a stream's own
 * subscription, sse.ts), `size` then `write` put it straight into a Buffer (the shared feed's slab,
 * frame-slab.ts) — the constant parts are copied from Buffers kept for the last ids and the last ts,
 * the seq's digits and (up to JS_BASE64_MAX_BYTES of output) the base64 text are written in place:
 * no string per event, no concatenation, no frame string to flatten and copy again.
 */
export class OutputTemplate {
  private sessionId = '';
  private turnId = '';
  private stream = '';
  /** `\nevent: …"sessionId":"…","seq":` and `,"type":…"data":"`, for those three. */
  private head = '';
  private mid = '';
  private headBytes: Buffer = Buffer.alloc(0);
  /** `,"ts":<ts>` and `mid`, for the last ts (events of one tick mostly share their millisecond). */
  private tsMid: Buffer = Buffer.alloc(0);
  private tsOf = -1;
  private tsMidOf = '';
  private view: DataView | undefined;
  private viewOf: Buffer | undefined;

  /** command.output by the template (ASCII only: base64, plain ids); undefined for anything else. */
  frame(e: SessionEvent): string | undefined {
    const bytes = this.check(e);
    if (bytes === undefined) return undefined;
    const b64 = base64Of(bytes);
    return 'id: ' + e.seq + this.head + e.seq + ',"ts":' + e.ts + this.mid + b64 + TAIL;
  }

  /**
   * The size in bytes of `e`'s frame by the template (it is ASCII), or -1 when `e` takes the generic
   * path. Prepares `write`, which must follow for the same event.
   */
  size(e: SessionEvent): number {
    const seq = e.seq;
    const ts = e.ts;
    // Digits written by hand below: non-negative safe integers only (else the string path).
    if (!(seq >= 0) || !Number.isSafeInteger(seq) || !(ts >= 0)) return -1;
    const bytes = this.check(e);
    if (bytes === undefined) return -1;
    if (ts !== this.tsOf || this.tsMidOf !== this.mid) {
      this.tsMid = Buffer.from(TS_KEY + ts + this.mid, 'latin1');
      this.tsOf = ts;
      this.tsMidOf = this.mid;
    }
    return ID_BYTES.length + 2 * digitCount(seq) + this.headBytes.length + this.tsMid.length + 4 * Math.ceil(bytes.length / 3) + TAIL_BYTES.length;
  }

  /** Writes the frame `size` measured into `buf` at `at` (room for it checked by the caller); returns the end. */
  write(e: SessionEvent, buf: Buffer, at: number): number {
    const seq = e.seq;
    const bytes = (e.data as { data: Uint8Array }).data;
    buf.set(ID_BYTES, at);
    at = writeDigits(buf, at + ID_BYTES.length, seq);
    buf.set(this.headBytes, at);
    at = writeDigits(buf, at + this.headBytes.length, seq);
    buf.set(this.tsMid, at);
    at += this.tsMid.length;
    if (bytes.length <= JS_BASE64_MAX_BYTES) {
      // Four characters a store (a DataView writes unaligned); the view is made again only for a new buffer.
      if (buf !== this.viewOf) {
        this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
        this.viewOf = buf;
      }
      at = writeBase64(buf, this.view!, at, bytes);
    } else {
      const b64 = base64Of(bytes);
      at += buf.write(b64, at, 'latin1');
    }
    buf.set(TAIL_BYTES, at);
    return at + TAIL_BYTES.length;
  }

  /** The event's bytes when it fits the template (the ids' parts made for it), else undefined. */
  private check(e: SessionEvent): Uint8Array | undefined {
    if (e.type !== 'command.output') return undefined;
    const d = e.data as { turnId?: unknown; stream?: unknown; data?: unknown };
    const bytes = d.data;
    const turnId = d.turnId;
    const stream = d.stream;
    const sessionId = e.sessionId;
    if (
      !(bytes instanceof Uint8Array) ||
      !Number.isSafeInteger(e.ts) ||
      // Exactly turnId, stream, data, in that order (JSON keeps the key order): else the generic path.
      !sameKeys(d)
    )
      return undefined;
    if (turnId !== this.turnId || stream !== this.stream || sessionId !== this.sessionId) {
      if (typeof turnId !== 'string' || (stream !== 'stdout' && stream !== 'stderr') || !PLAIN.test(turnId) || typeof sessionId !== 'string' || !PLAIN.test(sessionId)) return undefined;
      this.sessionId = sessionId;
      this.turnId = turnId;
      this.stream = stream;
      this.head = `\nevent: command.output\ndata: {"sessionId":"${sessionId}","seq":`;
      this.mid = `,"type":"command.output","data":{"turnId":"${turnId}","stream":"${stream}","data":"`;
      this.headBytes = Buffer.from(this.head, 'latin1');
    }
    return bytes;
  }
}

/**
 * Output up to this size is base64-encoded in place by writeBase64 (a little slower than Node's
 * encoder, but no string per event: that string was most of what the feed allocated per event, so
 * most of its young-generation collections); larger output goes through Node's.
 */
const JS_BASE64_MAX_BYTES = 1024;
const BASE64 = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', 'latin1');
/** Two base64 characters (the first in the low byte) for each 12 bits. */
const BASE64_PAIRS = new Uint16Array(4096).map((_, v) => BASE64[v >> 6]! | (BASE64[v & 63]! << 8));

/** Writes `bytes` as base64 (with = padding) at `at` of `buf` (`view` is a DataView of it); returns the end. */
function writeBase64(buf: Buffer, view: DataView, at: number, bytes: Uint8Array): number {
  const n = bytes.length;
  const full = n - (n % 3);
  let i = 0;
  for (; i < full; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    view.setUint32(at, BASE64_PAIRS[v >>> 12]! | (BASE64_PAIRS[v & 4095]! << 16), true);
    at += 4;
  }
  if (i < n) {
    const two = i + 1 < n;
    const v = (bytes[i]! << 16) | (two ? bytes[i + 1]! << 8 : 0);
    buf[at] = BASE64[v >>> 18]!;
    buf[at + 1] = BASE64[(v >>> 12) & 63]!;
    buf[at + 2] = two ? BASE64[(v >>> 6) & 63]! : 0x3d;
    buf[at + 3] = 0x3d;
    at += 4;
  }
  return at;
}

/** Output bytes as base64 by Node's encoder (no copy of the bytes). */
function base64Of(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('base64');
}

/** Decimal digits of a non-negative safe integer. */
function digitCount(n: number): number {
  let len = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    len++;
  }
  return len;
}

/** Writes a non-negative safe integer's decimal digits at `at`; returns the end. */
function writeDigits(buf: Buffer, at: number, n: number): number {
  const end = at + digitCount(n);
  let p = end;
  if (n < 0x8000_0000) {
    do {
      const q = (n / 10) | 0;
      buf[--p] = 48 + n - q * 10;
      n = q;
    } while (n > 0);
  } else {
    // Exact for every safe integer (n - q * 10 would round near 2^53).
    do {
      const r = n % 10;
      buf[--p] = 48 + r;
      n = (n - r) / 10;
    } while (n > 0);
  }
  return end;
}

const shared = new OutputTemplate();

function sameKeys(d: object): boolean {
  let i = 0;
  for (const k in d) {
    if (k !== (i === 0 ? 'turnId' : i === 1 ? 'stream' : i === 2 ? 'data' : '')) return false;
    i++;
  }
  return i === 3;
}
