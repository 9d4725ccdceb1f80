// The bytes of one session's SSE event frames, for the shared feed (session-feed.ts): each event's
// frame is written once into a slab, and each tick's frames are handed out as one Buffer that every
// stream of the session writes to its socket as it is (no copy per stream). A stream that joins in
// the middle of a tick's frames is given the rest from the frame after its last seq (`from`).
import type { SessionEvent } from '../../protocol/index.js';
import { genericEventFrame, OutputTemplate } from './sse-frames.js';
import { GATEWAY_BOUNDS } from '../../flow/index.js';

/** A slab holds many ticks' frames; a handed-out chunk is never written over (the sockets may still hold it). */
const SLAB_BYTES = GATEWAY_BOUNDS.slab.value;
/** Slabs double (up to this) while ticks outgrow them, so a busy session's tick is seldom copied. */
const MAX_SLAB_BYTES = GATEWAY_BOUNDS.maxSlab.value;
const NO_SLAB = Buffer.alloc(0);

/** One tick's frames: events (after `afterSeq`) through `lastSeq`, with where each frame starts. */
export class FrameChunk {
  constructor(
    readonly bytes: Buffer,
    /** The seq before the chunk's first event. */
    readonly afterSeq: number,
    readonly lastSeq: number,
    private readonly seqs: number[],
    private readonly offsets: number[],
  ) {}

  /** The frames of the events after `seq` (the whole chunk when `seq` is before it, empty when at or past its end). */
  from(seq: number): Buffer {
    if (seq <= this.afterSeq) return this.bytes;
    if (seq >= this.lastSeq) return this.bytes.subarray(this.bytes.length);
    // Seqs ascend: the first frame of a seq beyond `seq`.
    let lo = 0;
    let hi = this.seqs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.seqs[mid]! > seq) hi = mid;
      else lo = mid + 1;
    }
    return this.bytes.subarray(this.offsets[lo]!);
  }
}

export class FrameSlab {
  /** Allocated at the first frame, and again when one does not fit. */
  private slab: Buffer = NO_SLAB;
  private slabBytes = SLAB_BYTES;
  /** Where this tick's frames start in the slab, and where the next one goes. */
  private start = 0;
  private at = 0;
  private seqs: number[] = [];
  private offsets: number[] = [];
  private afterSeq: number;
  private last: number;
  private readonly template = new OutputTemplate();

  constructor(sinceSeq: number) {
    this.afterSeq = sinceSeq;
    this.last = sinceSeq;
  }

  /** The last seq appended. */
  get lastSeq(): number {
    return this.last;
  }

  /** The seq through which frames have been handed out (take). */
  get takenSeq(): number {
    return this.afterSeq;
  }

  /** Bytes waiting to be handed out. */
  get pendingBytes(): number {
    return this.at - this.start;
  }

  append(e: SessionEvent): void {
    // command.output by the template: its exact size, then written in place.
    const size = this.template.size(e);
    if (size >= 0) {
      if (this.at + size > this.slab.length) this.grow(size);
      this.seqs.push(e.seq);
      this.offsets.push(this.at - this.start);
      this.at = this.template.write(e, this.slab, this.at);
    } else {
      // Anything else: at most 3 bytes per UTF-16 unit.
      const text = genericEventFrame(e);
      const most = text.length * 3;
      if (this.at + most > this.slab.length) this.grow(most);
      this.seqs.push(e.seq);
      this.offsets.push(this.at - this.start);
      this.at += this.slab.write(text, this.at, 'utf8');
    }
    this.last = e.seq;
  }

  /** A new slab, with this tick's frames so far copied to its start (so a tick stays one chunk). */
  private grow(need: number): void {
    const pending = this.at - this.start;
    if (pending > 0) this.slabBytes = Math.min(MAX_SLAB_BYTES, this.slabBytes * 2);
    const next = Buffer.allocUnsafeSlow(Math.max(this.slabBytes, (pending + need) * 2));
    this.slab.copy(next, 0, this.start, this.at);
    this.slab = next;
    this.start = 0;
    this.at = pending;
  }

  /** This tick's frames as one chunk (undefined when there are none); the next tick starts after them. */
  take(): FrameChunk | undefined {
    if (this.at === this.start) return undefined;
    const chunk = new FrameChunk(this.slab.subarray(this.start, this.at), this.afterSeq, this.last, this.seqs, this.offsets);
    this.start = this.at;
    this.seqs = [];
    this.offsets = [];
    this.afterSeq = this.last;
    // Little room left: the next tick starts a new slab instead of being copied there when it outgrows this one.
    if (this.slab.length - this.at < this.slab.length / 4) {
      this.slab = NO_SLAB;
      this.start = this.at = 0;
    }
    return chunk;
  }
}
