// The journal's second writer: large records (format 2) written with O_DIRECT (see direct-io.ts),
// asynchronously, from a page-aligned staging buffer, at a page-aligned offset. SessionJournal
// (journal.ts) queues everything in file order and hands this writer one large record at a time;
// while its write is in flight, what was appended after it waits — unless so much waits that the
// journal has it written synchronously past the write in flight (writeAhead). The journal's `size`
// only counts bytes whose write has completed, so a reader never sees a hole.
import * as fs from 'node:fs';
import { DIRECT_ALIGN, STAGE_BYTES, directIOUsable, giveStage, padTo, refuseDirectIO, takeStage } from './direct-io.js';
import { MIN_PAD, writeAllSync, writePad } from './journal-format.js';

/** A large record queued for a direct write: its head (length, checksum, kind, body) and payload, then `bytes - head - payload` of pad. */
export interface DirectRecord {
  at: number;
  head: Buffer;
  payload: Buffer;
  bytes: number;
}

/** What the journal queues, in file order: bytes for the page cache, and large records for this writer. */
export type Queued = Buffer | DirectRecord;

/** Whether a record of `n` bytes fits one staging buffer with the pads around it (larger ones go through the page cache). */
export function fitsDirect(n: number): boolean {
  return n + 2 * DIRECT_ALIGN <= STAGE_BYTES;
}

/** Where a record of `n` bytes goes when appended at `offset`: the pad before it (0 when aligned), and its size with the pad after it. */
export function placeDirect(offset: number, n: number): { before: number; bytes: number } {
  const before = padTo(offset, MIN_PAD);
  return { before, bytes: n + padTo(offset + before + n, MIN_PAD) };
}

/** A queued direct record as plain buffers: head, payload, trailing pad. */
export function recordBuffers(d: DirectRecord): Buffer[] {
  const padBytes = d.bytes - d.head.length - d.payload.length;
  if (padBytes === 0) return [d.head, d.payload];
  const pad = Buffer.allocUnsafe(padBytes);
  writePad(pad, 0, padBytes);
  return [d.head, d.payload, pad];
}

/**
 * Called once a write started by DirectWriter.start has ended: `err` if it failed, else the bytes
 * now on disk past the journal's written size (the record, and what was written ahead of it), and
 * what those bytes were (in file order), so a failed write can be queued again.
 */
export type DirectDone = (err: Error | undefined, advanced: number, items: readonly Queued[]) => void;

export class DirectWriter {
  /** The write in flight (resolves when it has ended, failed or not) and its size. */
  private inFlight: Promise<void> | undefined;
  private inFlightBytes = 0;
  /** Bytes written synchronously past the write in flight (writeAhead), and what they were. */
  private ahead = 0;
  private aheadItems: Queued[] = [];

  /** `fd`: the journal's ordinary descriptor, for the parts a direct write cannot take; `directFd`: its O_DIRECT one. */
  constructor(
    private readonly fd: number,
    private readonly directFd: number,
  ) {}

  /** Whether large records still go direct (false once the kernel refused one or no staging buffer could be had). */
  get usable(): boolean {
    return directIOUsable();
  }

  get busy(): boolean {
    return this.inFlight !== undefined;
  }

  /** Resolves when the write in flight has ended; undefined when none is. */
  get settled(): Promise<void> | undefined {
    return this.inFlight;
  }

  /** Bytes past the journal's written size that are being written or were written ahead. */
  get unfinishedBytes(): number {
    return this.inFlightBytes + this.ahead;
  }

  /**
   * Starts the direct write of `d` on the thread pool; `done` is called when it has ended. Returns
   * false, having written nothing, where no staging buffer can be had: the caller then writes `d`
   * through the page cache itself.
   */
  start(d: DirectRecord, done: DirectDone): boolean {
    const stage = this.stage(d);
    if (!stage) return false;
    this.inFlightBytes = d.bytes;
    this.inFlight = new Promise<void>((resolve) => {
      fs.write(this.directFd, stage, 0, d.bytes, d.at, (err, n) => {
        let failure: Error | undefined;
        try {
          this.finish(stage, d, err, n);
        } catch (e) {
          failure = e as Error;
        }
        giveStage(stage);
        const advanced = d.bytes + this.ahead;
        const items = [d, ...this.aheadItems];
        this.inFlight = undefined;
        this.inFlightBytes = 0;
        this.ahead = 0;
        this.aheadItems = [];
        resolve();
        done(failure, advanced, items);
      });
    });
    return true;
  }

  /**
   * Writes `list` synchronously at `at` (the end of what is in flight and was written ahead
   * before), large records directly where a staging buffer can be had. Throws on I/O failure;
   * then none of `list` counts as written.
   */
  writeAhead(list: readonly Queued[], at: number): void {
    const start = at;
    for (let k = 0; k < list.length; ) {
      const bufs: Buffer[] = [];
      while (k < list.length && Buffer.isBuffer(list[k])) bufs.push(list[k++] as Buffer);
      if (bufs.length > 0) at += writeAllSync(this.fd, bufs, at);
      const d = list[k++] as DirectRecord | undefined;
      if (!d) break;
      this.writeSync(d);
      at += d.bytes;
    }
    this.ahead += at - start;
    for (const x of list) this.aheadItems.push(x);
  }

  close(): void {
    fs.closeSync(this.directFd);
  }

  /** Writes `d` directly and synchronously (through the page cache where no staging buffer can be had). */
  private writeSync(d: DirectRecord): void {
    const stage = this.stage(d);
    if (!stage) {
      writeAllSync(this.fd, recordBuffers(d), d.at);
      return;
    }
    try {
      let done = 0;
      let err: NodeJS.ErrnoException | null = null;
      try {
        done = fs.writeSync(this.directFd, stage, 0, d.bytes, d.at);
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      this.finish(stage, d, err, done);
    } finally {
      giveStage(stage);
    }
  }

  /** A staging buffer holding `d` as it goes to disk: head, payload, trailing pad (undefined: none to be had, direct I/O is off). */
  private stage(d: DirectRecord): Buffer | undefined {
    const stage = takeStage();
    if (!stage) return undefined;
    const payloadEnd = d.head.length + d.payload.length;
    stage.set(d.head, 0);
    stage.set(d.payload, d.head.length);
    if (d.bytes > payloadEnd) writePad(stage, payloadEnd, d.bytes - payloadEnd);
    return stage;
  }

  /**
   * After a direct write of `d` returned `done` bytes or `err`: finishes it through the page cache
   * where it was short or refused (EINVAL: the kernel will not take the alignment, so no more direct
   * writes in this process); throws any other error.
   */
  private finish(stage: Buffer, d: DirectRecord, err: NodeJS.ErrnoException | null, done: number): void {
    if (err) {
      if (err.code !== 'EINVAL') throw err;
      refuseDirectIO();
      done = 0;
    }
    if (done < d.bytes) writeAllSync(this.fd, [stage.subarray(done, d.bytes)], d.at + done);
  }
}
