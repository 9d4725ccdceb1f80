// frames → the socket: batching, the outbox, the pump, queued bytes and progress. Apart from
// Connection (which correlates and dispatches) the way ws keeps its Sender apart: a change to
// backpressure or write batching happens here and nowhere else.
import type net from 'node:net';
import { AstraError, FRAME_HEADER_BYTES } from '../protocol/index.js';
import { Level, WIRE_BOUNDS } from '../flow/index.js';

// The bounds and their reasons: flow/wire-bounds.ts.
/** A socket's write high mark (Node's writable highWaterMark). */
export const SOCKET_HIGH_MARK = WIRE_BOUNDS.socketHighMark.value;
/** Frames queued in one tick are copied into batches of this size and written once. */
const BATCH_BYTES = WIRE_BOUNDS.batch.value;
/** A connection's first batch; once a batch fills, the next ones are BATCH_BYTES. */
const FIRST_BATCH_BYTES = WIRE_BOUNDS.firstBatch.value;
/** At most this much is handed to the socket at a time (see pump). */
const SOCKET_INFLIGHT_BYTES = WIRE_BOUNDS.socketInFlight.value;
/** writeParts queues parts at least this big by reference instead of copying them. */
const ZERO_COPY_PART_BYTES = WIRE_BOUNDS.zeroCopyPart.value;

/**
 * The one frame-size check of the outgoing side: throws frame_too_large (with size and limit) when
 * a payload of `size` bytes is over `limit`, so nothing is sent.
 */
export function checkOutgoingSize(size: number, limit: number): void {
  if (size > limit)
    throw new AstraError('frame_too_large', `the frame is ${size} bytes; the limit for this direction is ${limit}`, { size, limit });
}

function raiseHighWaterMark(socket: net.Socket): void {
  // Accepted sockets are created by net.Server, so the option cannot be passed to them (unless the
  // server was created with `highWaterMark`); the writable state's field is what write() consults.
  const state = (socket as unknown as { _writableState?: { highWaterMark?: number } })._writableState;
  if (state && typeof state.highWaterMark === 'number' && state.highWaterMark < SOCKET_HIGH_MARK)
    state.highWaterMark = SOCKET_HIGH_MARK;
}

export class FrameWriter {
  private readonly socket: net.Socket;
  private readonly maxPayloadBytes: number;
  private readonly onDrained: () => void;

  // Frames are copied into `batch` from `batchEnd`; [batchStart, batchEnd) is not yet flushed.
  // Flushed regions stay untouched (the socket may still hold them) until a new batch.
  private batch: Buffer | undefined;
  private batchStart = 0;
  private batchEnd = 0;
  /** A batch filled up: this connection writes enough for full-size batches. */
  private busy = false;
  private outbox: Buffer[] = [];
  private unflushed = 0;
  private flushScheduled = false;
  private readonly flushBound = () => this.flush(false);

  private writesDone = 0;
  private readonly afterWriteBound = () => {
    this.writesDone++;
    this.pump(false);
    this.queue.check();
  };
  /** The level of queuedBytes, for drained(below). */
  private readonly queue = new Level(() => this.queuedBytes);
  /** Set by discard(): nothing more reaches the socket. */
  private discarded = false;

  /** `onDrained`: the socket drained and nothing is waiting in the outbox. */
  constructor(socket: net.Socket, maxPayloadBytes: number, onDrained: () => void) {
    this.socket = socket;
    this.maxPayloadBytes = maxPayloadBytes;
    this.onDrained = onDrained;
    raiseHighWaterMark(socket);
    socket.on('drain', () => this.handleDrain());
  }

  /** Socket writes completed so far: it changes whenever the peer is taking data (progress, however slow). */
  get progress(): number {
    return this.writesDone;
  }

  /** Bytes accepted but not yet handed to the kernel: our unflushed batch plus the socket's buffer. */
  get queuedBytes(): number {
    return this.unflushed + (this.socket.writableLength ?? 0);
  }

  /** Queues a frame already checked against the limit (packFrame checks as it packs). */
  write(frame: Buffer): void {
    const n = frame.length;
    if (n >= BATCH_BYTES) {
      this.sealBatch();
      this.outbox.push(frame);
    } else {
      if (!this.batch || this.batchEnd + n > this.batch.length) this.newBatch(n);
      // TypedArray set: half the cost of Buffer#copy for a small frame (one per request and response).
      this.batch!.set(frame, this.batchEnd);
      this.batchEnd += n;
    }
    this.unflushed += n;
    this.scheduleFlush();
  }

  /** Queues a whole frame made elsewhere (encodeFrame): its header must match, its size the limit. */
  writeWhole(frame: Buffer): void {
    const size = frame.length - FRAME_HEADER_BYTES;
    if (size < 0 || frame.readUInt32BE(0) !== size) throw new AstraError('internal_error', 'sendFrame needs a whole frame from encodeFrame');
    checkOutgoingSize(size, this.maxPayloadBytes);
    this.write(frame);
  }

  /**
   * Queues one frame whose payload is the concatenation of `parts`. Small parts are copied into the
   * batch; large ones are queued by reference, so they must not change afterwards.
   */
  writeParts(parts: readonly Uint8Array[]): void {
    let size = 0;
    for (let i = 0; i < parts.length; i++) size += parts[i]!.length;
    checkOutgoingSize(size, this.maxPayloadBytes);
    // The header goes straight into the batch: no 4-byte Buffer per frame (one per event streamed).
    if (!this.batch || this.batchEnd + FRAME_HEADER_BYTES > this.batch.length) this.newBatch(size + FRAME_HEADER_BYTES < BATCH_BYTES ? size + FRAME_HEADER_BYTES : FRAME_HEADER_BYTES);
    this.batch!.writeUInt32BE(size, this.batchEnd);
    this.batchEnd += FRAME_HEADER_BYTES;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (part.length >= ZERO_COPY_PART_BYTES) {
        this.sealBatch();
        this.outbox.push(Buffer.isBuffer(part) ? part : Buffer.from(part.buffer, part.byteOffset, part.length));
      } else this.appendBytes(part);
    }
    this.unflushed += size + FRAME_HEADER_BYTES;
    this.scheduleFlush();
  }

  /** Resolves once queuedBytes is below `below` (checked as the socket hands writes to the kernel), or after release(). */
  drained(below: number): Promise<void> {
    return this.queue.wait(below);
  }

  /** Hands what is queued to the socket: in slices (see pump), or all of it (`all`, before ending). */
  flush(all: boolean): void {
    this.flushScheduled = false;
    this.sealBatch();
    this.pump(all);
  }

  /** The connection is closing: every drained() wait is let go at the next check. */
  release(): void {
    this.queue.release();
  }

  /** Drops everything queued; with `forever`, nothing written later reaches the socket either. */
  discard(forever: boolean): void {
    if (forever) {
      this.discarded = true;
      // A closed connection may be kept a while (a timer's closure); its batch need not be.
      this.batch = undefined;
      this.batchStart = this.batchEnd = 0;
    }
    this.outbox = [];
    this.unflushed = 0;
  }

  /** Lets go of every drained() wait whose mark is met (all of them after release()). */
  checkDrained(): void {
    this.queue.check();
  }

  /** A new batch with room for at least `need` bytes (need < BATCH_BYTES). */
  private newBatch(need: number): void {
    this.sealBatch();
    if (this.batch) this.busy = true;
    this.batch = Buffer.allocUnsafeSlow(this.busy || need > FIRST_BATCH_BYTES ? BATCH_BYTES : FIRST_BATCH_BYTES);
    this.batchStart = this.batchEnd = 0;
  }

  /** Copies bytes into the current write batch, starting new batches as they fill. */
  private appendBytes(src: Uint8Array): void {
    const batch = this.batch;
    if (batch && this.batchEnd + src.length <= batch.length) {
      batch.set(src, this.batchEnd);
      this.batchEnd += src.length;
      return;
    }
    let off = 0;
    while (off < src.length) {
      if (!this.batch || this.batchEnd === this.batch.length) this.newBatch(1);
      const batch = this.batch!;
      const n = Math.min(src.length - off, batch.length - this.batchEnd);
      batch.set(off === 0 && n === src.length ? src : src.subarray(off, off + n), this.batchEnd);
      this.batchEnd += n;
      off += n;
    }
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(this.flushBound);
    }
  }

  private sealBatch(): void {
    if (this.batch && this.batchEnd > this.batchStart) {
      this.outbox.push(this.batch.subarray(this.batchStart, this.batchEnd));
      this.batchStart = this.batchEnd;
    }
  }

  /**
   * Hands queued buffers to the socket while it holds less than SOCKET_INFLIGHT_BYTES (all of them
   * when `all`); each write's callback hands over more. Node passes everything buffered behind a
   * write to the kernel as one writev and completes it at once, so handing over a megabyte would
   * make the queue drop from a megabyte to nothing in one step; in slices, drained() waits
   * (a paused subscriber) hear of progress while the socket still has data in flight.
   */
  private pump(all: boolean): void {
    const out = this.outbox;
    if (out.length === 0) return;
    if (this.socket.destroyed || this.discarded) {
      this.discard(false);
      return;
    }
    let i = 0;
    // Corked, the buffers handed over together go to the kernel as one writev, not a write each
    // (a large event is a small head and its body, which stays where it is: zero-copy).
    const cork = out.length > 1;
    if (cork) this.socket.cork();
    while (i < out.length && (all || this.socket.writableLength < SOCKET_INFLIGHT_BYTES)) {
      const b = out[i++]!;
      this.unflushed -= b.length;
      this.socket.write(b, this.afterWriteBound);
    }
    if (cork) this.socket.uncork();
    this.outbox = i === out.length ? [] : out.slice(i);
  }

  private handleDrain(): void {
    this.pump(false);
    this.queue.check();
    // Drained means all of it: not while buffers are still waiting for their turn (see pump).
    if (this.outbox.length === 0) this.onDrained();
  }
}
