// EventTail: a session's recent events in memory, and the sparse index that finds older ones in the
// journal. Entries are references into the journal's own buffers and no object per event (objects
// that live this long would each be copied by the garbage collector): one ring, four slots per
// event — buffer, start, end, extra part.
import { RECORD_OVERHEAD, StoredEvent } from './event-body.js';

/** The sparse index gets an entry every INDEX_EVERY events or INDEX_BYTES of journal, whichever comes first, so a seek reads at most that much before the event it wants (large output included). */
const INDEX_EVERY = 64;
const INDEX_BYTES = 256 * 1024;
/** Envelope overhead beyond the journal record when an event goes on the wire (sessionId, keys). */
export const WIRE_OVERHEAD = 64;
const SLOTS = 4;

/** Shared by all sessions: the bound on their catch-up surplus and how much of it is in use (RuntimeOptions.catchUpCacheBytes). */
export interface CatchUpBudget {
  limit: number;
  used: number;
}

export class EventTail {
  /** Slot k*4 of event k (from `head`, wrapping): its buffer, start, end, extra part (StoredEvent's fields). */
  private ring: (Buffer | number | undefined)[] = new Array<undefined>(64 * SLOTS);
  private mask = 63;
  private head = 0;
  private count = 0;
  /** Seq of the oldest entry (seqs in the ring are consecutive). */
  private firstSeq = 1;
  private bytes = 0;
  /** The part of `bytes` not published yet (never evicted, not counted against any bound: the log holds those events anyway). */
  private unpublishedBytes = 0;
  /** This session's share of the catch-up surplus (bytes beyond the ordinary tail), as counted in budget.used. */
  private catchUpBytes = 0;
  /** Sparse seq → file offset index (see INDEX_EVERY) for reads older than the ring. */
  private index: { seq: number; offset: number }[] = [];

  /**
   * `neededSeq` is asked only when the tail is over its bound: the oldest seq a subscriber that is
   * behind still needs (publishedSeq + 1 when none is).
   */
  constructor(
    private readonly sessionId: string,
    private readonly limitBytes: number,
    private readonly budget: CatchUpBudget,
    private readonly neededSeq: () => number,
  ) {}

  /** Bytes of recent events held in memory (the tail, with what behind subscribers still need). */
  get cachedBytes(): number {
    return this.bytes;
  }

  /** Records where event `seq`'s record starts in the journal (every event passes here, in seq order). */
  indexEvent(seq: number, offset: number): void {
    const last = this.index[this.index.length - 1];
    if (!last || seq - last.seq >= INDEX_EVERY || offset - last.offset >= INDEX_BYTES) this.index.push({ seq, offset });
  }

  /**
   * Remembers event `seq` as bytes [start, end) of buf, then extra. A seq that does not follow the
   * last one (a range lost to journal damage) restarts the ring: it only ever holds consecutive seqs.
   */
  push(seq: number, buf: Buffer, start: number, end: number, extra: Buffer | undefined, published: boolean): void {
    if (this.count > 0 && seq !== this.firstSeq + this.count) this.evict(this.count);
    if (this.count === 0) this.firstSeq = seq;
    if (this.count === this.mask + 1) this.grow();
    const k = ((this.head + this.count) & this.mask) * SLOTS;
    const ring = this.ring;
    ring[k] = buf;
    ring[k + 1] = start;
    ring[k + 2] = end;
    ring[k + 3] = extra;
    this.count++;
    const size = end - start + (extra ? extra.length : 0) + RECORD_OVERHEAD;
    this.bytes += size;
    if (!published) this.unpublishedBytes += size;
    this.trim();
  }

  /** Events [fromSeq, fromSeq + n) are published now: they count as the tail (or catch-up surplus) from here on. */
  published(fromSeq: number, n: number, all: boolean): void {
    if (all) this.unpublishedBytes = 0;
    else for (let seq = fromSeq; seq < fromSeq + n; seq++) if (seq >= this.firstSeq) this.unpublishedBytes -= this.sizeAt(seq - this.firstSeq);
  }

  /**
   * Evicts the oldest entries down to the bound — except those a subscriber that is behind still
   * needs, while all sessions' surplus fits in the shared catch-up budget, and those not published
   * yet. A no-op within the bound.
   */
  trim(): void {
    let published = this.bytes - this.unpublishedBytes;
    if (published <= this.limitBytes) return;
    const needed = this.neededSeq();
    const base = this.limitBytes;
    const others = this.budget.used - this.catchUpBytes;
    let n = 0;
    while (published > base && this.count - n > 1) {
      if (this.firstSeq + n >= needed && others + published - base <= this.budget.limit) break;
      published -= this.sizeAt(n);
      n++;
    }
    this.evict(n);
    this.catchUpBytes = Math.max(0, published - base);
    this.budget.used = others + this.catchUpBytes;
  }

  /** Gives back this session's share of the catch-up budget (the session closes). */
  release(): void {
    this.budget.used -= this.catchUpBytes;
    this.catchUpBytes = 0;
  }

  /**
   * Events with afterSeq < seq <= endSeq from memory, at most `limit` and about `maxBytes` (always at
   * least one); undefined when the ring does not reach back to afterSeq + 1.
   */
  read(afterSeq: number, endSeq: number, limit: number, maxBytes: number): StoredEvent[] | undefined {
    if (this.count === 0 || afterSeq + 1 < this.firstSeq) return undefined;
    const out: StoredEvent[] = [];
    let bytes = 0;
    const ring = this.ring;
    for (let seq = afterSeq + 1, i = seq - this.firstSeq; i < this.count && out.length < limit && seq <= endSeq; seq++, i++) {
      const size = this.sizeAt(i);
      if (out.length > 0 && bytes + size + WIRE_OVERHEAD > maxBytes) break;
      const k = ((this.head + i) & this.mask) * SLOTS;
      out.push(new StoredEvent(this.sessionId, seq, ring[k] as Buffer, ring[k + 1] as number, ring[k + 2] as number, undefined, ring[k + 3] as Buffer | undefined));
      bytes += size + WIRE_OVERHEAD;
    }
    return out;
  }

  /** Where to start reading the journal for event `seq`, and how much to read first (a large record whole). */
  seek(seq: number, minWindow: number): { offset: number; window: number } {
    let lo = 0;
    let hi = this.index.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.index[mid]!.seq <= seq) lo = mid;
      else hi = mid - 1;
    }
    const offset = this.index[lo]?.offset ?? 0;
    // A large record has index entries on both sides (INDEX_BYTES): the first read takes it whole.
    return { offset, window: Math.max(minWindow, (this.index[lo + 1]?.offset ?? offset) - offset) };
  }

  /** Journal bytes of entry i (from the oldest; record header included). */
  private sizeAt(i: number): number {
    const k = ((this.head + i) & this.mask) * SLOTS;
    const extra = this.ring[k + 3] as Buffer | undefined;
    return (this.ring[k + 2] as number) - (this.ring[k + 1] as number) + (extra ? extra.length : 0) + RECORD_OVERHEAD;
  }

  private evict(n: number): void {
    for (let i = 0; i < n; i++) {
      this.bytes -= this.sizeAt(0);
      const k = this.head * SLOTS;
      this.ring[k] = undefined;
      this.ring[k + 3] = undefined;
      this.head = (this.head + 1) & this.mask;
      this.count--;
      this.firstSeq++;
    }
  }

  private grow(): void {
    const cap = this.mask + 1;
    const ring = new Array<Buffer | number | undefined>(cap * 2 * SLOTS);
    for (let i = 0; i < this.count; i++) {
      const from = ((this.head + i) & this.mask) * SLOTS;
      for (let s = 0; s < SLOTS; s++) ring[i * SLOTS + s] = this.ring[from + s];
    }
    this.ring = ring;
    this.mask = cap * 2 - 1;
    this.head = 0;
  }
}
