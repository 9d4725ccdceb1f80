// bytes → frames. A state machine over the buffered chunks (after ws's receiver): read the 4-byte
// header, check the length against the limit before buffering any payload, then hand out exactly
// that many bytes — a view when they lie in one chunk, a copy only when they span chunks. With direct
// reads, whole frames in the reused read buffer are lent to the caller without a copy (lend()).
import { AstraError, FRAME_HEADER_BYTES, LIMITS } from '../protocol/index.js';

export interface FrameDecoderOptions {
  /** Largest payload accepted; a bigger header is an error before any payload is buffered. */
  maxPayloadBytes: number;
  /** Once a frame's first byte arrived, the rest must arrive within this many ms (0 = no deadline). */
  frameDeadlineMs?: number;
  /** The deadline's clock, ms (Date.now unless a test drives it). */
  now?: () => number;
  /** Called synchronously with each payload, in order. Must not throw. */
  onFrame: (payload: Buffer) => void;
  /**
   * With direct reads: called instead of onFrame with a frame that lies whole in the reused read
   * buffer. The payload is valid only during the call (the next read overwrites it): whatever is
   * kept of it — the payload, a view into it — must be copied. Without it such frames are copied
   * out of the read buffer first (with the rest of the read) and go to onFrame. Must not throw.
   */
  onBorrowedFrame?: (payload: Buffer) => void;
  /** Called once with frame_too_large or frame_timeout; decoding stops afterwards. */
  onError: (err: AstraError) => void;
}

const State = { Header: 0, Payload: 1 } as const;
type State = (typeof State)[keyof typeof State];
/** A frame with at least this much still to come is read into its own buffer (direct reads). */
const DIRECT_READ_MIN_BYTES = 64 * 1024;
/** Size of the read buffer otherwise (what Node reads a socket into by default). */
const READ_BYTES = 64 * 1024;

export class FrameDecoder {
  private readonly maxPayloadBytes: number;
  private readonly frameDeadlineMs: number;
  private readonly onFrame: (payload: Buffer) => void;
  private readonly onBorrowedFrame: ((payload: Buffer) => void) | undefined;
  private readonly onError: (err: AstraError) => void;

  private chunks: Buffer[] = [];
  /** Bytes of chunks[0] already consumed. */
  private offset = 0;
  private buffered = 0;
  private state: State = State.Header;
  private payloadLength = 0;
  private stopped = false;

  /** Frames completed so far; tells whether a partial frame is the same one as last time. */
  private completed = 0;
  private partialFrame = -1;
  private partialSince = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(opts: FrameDecoderOptions) {
    this.maxPayloadBytes = opts.maxPayloadBytes;
    this.frameDeadlineMs = opts.frameDeadlineMs ?? LIMITS.frameDeadlineMs;
    this.now = opts.now ?? Date.now;
    this.onFrame = opts.onFrame;
    this.onBorrowedFrame = opts.onBorrowedFrame;
    this.onError = opts.onError;
  }

  /** Bytes received but not yet handed out as a frame. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  // Direct reads (a socket with `onread`, see ipc/direct-reads.ts): the rest of a large frame is
  // read by the kernel straight into that frame's own buffer — no 64 KiB buffer per read, no copy
  // to join them. Everything else goes through push().
  private direct: Buffer | undefined;
  /** Reused for every other read; what was read is copied out, at its size (small reads come from Node's pool). */
  private scratch: Buffer | undefined;

  /** Where the socket should read next: the rest of a large frame in progress, else the reused read buffer. */
  readTarget(): Buffer {
    // Once a frame is read directly, it is until its last byte.
    if (this.direct || (!this.stopped && this.state === State.Payload && this.payloadLength - this.buffered >= DIRECT_READ_MIN_BYTES)) {
      if (!this.direct) {
        // The frame's own buffer, holding what already arrived of it.
        const frame = Buffer.allocUnsafe(this.payloadLength);
        const have = this.buffered;
        this.consume(have).copy(frame, 0);
        this.buffered = have;
        this.direct = frame;
      }
      return this.direct.subarray(this.buffered);
    }
    // A fresh 64 KiB buffer per read would stay that size until collected (Node's own reads shrink
    // theirs to what was read): a round trip's every small response would cost 64 KiB of memory.
    return (this.scratch ??= Buffer.allocUnsafeSlow(READ_BYTES));
  }

  /** `n` bytes were read into the buffer readTarget() returned last (`buf`). */
  readDone(n: number, buf: Buffer): void {
    if (this.stopped || n <= 0) return;
    if (!this.direct) {
      if (buf !== this.scratch) this.push(buf.subarray(0, n));
      else if (this.onBorrowedFrame && this.buffered === 0 && this.state === State.Header) this.lend(buf, n);
      // The reused buffer is read into again next time: keep a copy of what came.
      else this.push(Buffer.from(buf.subarray(0, n)));
      return;
    }
    this.buffered += n;
    if (this.buffered === this.payloadLength) {
      const frame = this.direct;
      this.direct = undefined;
      this.buffered = 0;
      this.emitFrame(frame);
    }
    if (!this.stopped) this.watchPartialFrame();
  }

  /**
   * A read into the reused buffer with nothing pending before it: its whole frames go to
   * onBorrowedFrame straight from it, and only the rest (a frame begun) is copied — a chat
   * observer's reads are mostly one or a few whole frames of text, decoded into strings.
   */
  private lend(buf: Buffer, n: number): void {
    let p = 0;
    while (!this.stopped && n - p >= FRAME_HEADER_BYTES) {
      const length = buf.readUInt32BE(p);
      // A frame over the limit or not whole: push() reports or buffers it.
      if (length > this.maxPayloadBytes || n - p - FRAME_HEADER_BYTES < length) break;
      const start = p + FRAME_HEADER_BYTES;
      p = start + length;
      this.completed++;
      this.onBorrowedFrame!(buf.subarray(start, p));
    }
    if (this.stopped) return;
    if (p < n) this.push(Buffer.from(buf.subarray(p, n)));
    else this.watchPartialFrame();
  }

  push(chunk: Buffer): void {
    if (this.stopped || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (!this.stopped) {
      if (this.state === State.Header) {
        if (this.buffered < FRAME_HEADER_BYTES) break;
        const length = this.readHeader();
        if (length > this.maxPayloadBytes) {
          this.fail(
            new AstraError('frame_too_large', `an incoming frame announces ${length} bytes; the limit is ${this.maxPayloadBytes}`, {
              size: length,
              limit: this.maxPayloadBytes,
            }),
          );
          return;
        }
        this.payloadLength = length;
        this.state = State.Payload;
      }
      if (this.buffered < this.payloadLength) break;
      this.emitFrame(this.consume(this.payloadLength));
    }
    if (!this.stopped) this.watchPartialFrame();
  }

  private emitFrame(payload: Buffer): void {
    this.state = State.Header;
    this.completed++;
    this.onFrame(payload);
  }

  /** Stops decoding and drops what is buffered. */
  dispose(): void {
    this.stopped = true;
    this.direct = undefined;
    this.scratch = undefined;
    this.chunks = [];
    this.offset = 0;
    this.buffered = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private fail(err: AstraError): void {
    this.dispose();
    this.onError(err);
  }

  private readHeader(): number {
    const first = this.chunks[0]!;
    if (first.length - this.offset >= FRAME_HEADER_BYTES) {
      const length = first.readUInt32BE(this.offset);
      this.advance(first, FRAME_HEADER_BYTES);
      return length;
    }
    return this.consume(FRAME_HEADER_BYTES).readUInt32BE(0);
  }

  /** Moves past n bytes of the first chunk (n ≤ what is left of it). */
  private advance(first: Buffer, n: number): void {
    this.buffered -= n;
    this.offset += n;
    if (this.offset === first.length) {
      this.chunks.shift();
      this.offset = 0;
    }
  }

  // The first chunk is read from `offset` rather than re-sliced after every frame: one Buffer
  // object less per frame on a busy stream.
  private consume(n: number): Buffer {
    const first = this.chunks[0];
    if (n === 0 || first === undefined) return Buffer.alloc(0);
    const left = first.length - this.offset;
    if (left >= n) {
      const out = this.offset === 0 && left === n ? first : first.subarray(this.offset, this.offset + n);
      this.advance(first, n);
      return out;
    }
    // n ≤ maxPayloadBytes here (checked at the header), so this allocation is bounded.
    this.buffered -= n;
    const out = Buffer.allocUnsafe(n);
    let copied = 0;
    while (copied < n) {
      const chunk = this.chunks[0]!;
      const take = Math.min(chunk.length - this.offset, n - copied);
      chunk.copy(out, copied, this.offset, this.offset + take);
      copied += take;
      this.offset += take;
      if (this.offset === chunk.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    return out;
  }

  // One timer per decoder, re-armed lazily: arming a timer per partial frame would cost more than
  // decoding on a busy stream, where most chunks end inside a frame.
  private watchPartialFrame(): void {
    if (this.buffered === 0 && this.state === State.Header) {
      this.partialFrame = -1;
      return;
    }
    if (this.frameDeadlineMs <= 0) return;
    if (this.partialFrame !== this.completed) {
      this.partialFrame = this.completed;
      this.partialSince = this.now();
    }
    if (!this.timer) this.armTimer(this.frameDeadlineMs);
  }

  private armTimer(ms: number): void {
    this.timer = setTimeout(() => this.checkDeadline(), ms);
    this.timer.unref();
  }

  private checkDeadline(): void {
    this.timer = undefined;
    if (this.stopped || this.partialFrame === -1) return;
    const elapsed = this.now() - this.partialSince;
    if (elapsed >= this.frameDeadlineMs) {
      this.fail(
        new AstraError('frame_timeout', `a frame started ${elapsed} ms ago and has not finished (deadline ${this.frameDeadlineMs} ms)`, {
          deadlineMs: this.frameDeadlineMs,
          receivedBytes: this.buffered,
          expectedBytes: this.state === State.Payload ? this.payloadLength : undefined,
        }),
      );
      return;
    }
    this.armTimer(this.frameDeadlineMs - elapsed);
  }
}
