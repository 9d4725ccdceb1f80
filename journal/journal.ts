// SessionJournal: one append-only file per session; the record format is in journal-format.ts.
// The journal knows nothing of what the bodies mean (the session layer packs them); it guarantees
// framing, checksums, ordering, batching and durability.
//
// Queue → flush → sync. append() only queues bytes in memory, in arenas; flush() writes everything
// queued with ONE writeSync (the caller flushes once per tick, so a burst of streamed events costs
// one syscall); sync() flushes and fsyncs, coalescing concurrent callers onto one fsync. A SIGKILL
// cannot tear a writeSync to a regular file, so torn tails come from power loss, and damage from
// outside: open truncates a torn tail and steps over damage in the middle. A full disk blocks the
// journal until retry() (see `blocked`); any other write error poisons it.
//
// Large records (format 2) that carry a payload go to a writer of their own, DirectWriter
// (journal-direct-writer.ts), which writes them with O_DIRECT off the event loop; pad records
// (kind 4, skipped by every reader) fill the gaps before and after them. Writes stay strictly in
// file order, and `size` (what readers may read) only counts bytes whose write has completed.
// `onWritten` tells the owner when such an asynchronous write has completed.
//
// Elsewhere: the bytes (journal-format.ts), what is queued in memory and its arenas
// (journal-queue.ts), the scan at open that tells a torn tail from damage (journal-scan.ts),
// catch-up reads (journal-read.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AstraError } from '../protocol/index.js';
import { fsyncDirAsync } from '../durable/index.js';
import { crc32 } from './crc32.js';
import { directIOUsable, openDirect } from './direct-io.js';
import { DirectWriter, fitsDirect, recordBuffers, type DirectRecord, type Queued } from './journal-direct-writer.js';
import {
  JOURNAL_FORMAT_VERSION,
  JOURNAL_HEADER_BYTES,
  RECORD_HEADER_BYTES,
  encodeHeader,
  encodeRecord,
  kindCrc,
  writeAllSync,
  writeRecordHead,
  type ScannedRecord,
} from './journal-format.js';
import { asDiskFull, diskFull } from './disk-full.js';
import { RecordQueue } from './journal-queue.js';
import { readWritten } from './journal-read.js';
import { openJournalFile, type JournalDamage } from './journal-scan.js';
import type { JournalLogger } from './logger.js';
import { DAEMON_BOUNDS } from '../flow/index.js';

export type { JournalDamage } from './journal-scan.js';

export {
  JOURNAL_MAGIC,
  JOURNAL_FORMAT_VERSION,
  JOURNAL_HEADER_BYTES,
  RECORD_HEADER_BYTES,
  MAX_RECORD_BYTES,
  RecordKind,
  encodeRecord,
  writeAllSync,
  type ScannedRecord,
} from './journal-format.js';

export interface JournalWriteOptions {
  /** Write large records with O_DIRECT where the file system takes it (default true). */
  directIO?: boolean;
}

export interface JournalOpenOptions extends JournalWriteOptions {
  logger: JournalLogger;
  /** Called for each valid record in order. Return false to reject it: it is skipped (never truncated) and readRecords skips it too. */
  onRecord(rec: ScannedRecord): boolean | void;
  /**
   * Called for each damaged range in the middle of the file (bad records with valid ones after them),
   * in file order, before the records after it. The file is not changed: a later open reports the
   * same range again. A torn tail is not damage: it is truncated (and logged).
   */
  onDamage?(d: JournalDamage): void;
}

/** Records bigger than this get a buffer of their own. */
const OWN_BUFFER_BYTES = 1024 * 1024;
/** Bytes queued behind a direct write in flight beyond which flush() writes them synchronously (flow/daemon-bounds.ts journalQueuedBehind). */
const MAX_QUEUED_BEHIND = DAEMON_BOUNDS.journalQueuedBehind.value;

export class SessionJournal {
  readonly file: string;
  private fd: number;
  /** Bytes on disk (written, maybe not yet fsynced). */
  private written: number;
  private synced: number;
  /** What is queued for the file, in order. */
  private readonly queue = new RecordQueue();
  /** Writes large records with O_DIRECT; undefined when they go through the page cache. */
  private directWriter: DirectWriter | undefined;
  /** Called after an asynchronous write has completed and what was queued behind it was written, with the error if one failed. */
  onWritten: ((err?: Error) => void) | undefined;
  private syncing: Promise<void> | undefined;
  private closed = false;
  /** Set when a write failed for a reason waiting will not cure: every later write throws it. */
  private failure: Error | undefined;
  /** Set while the disk is full (see `blocked`). */
  private blockedBy: AstraError | undefined;
  /** Ranges found damaged at open (in file order): readRecords steps over them. */
  private damaged: readonly JournalDamage[] = [];

  private constructor(file: string, fd: number, size: number, direct: boolean) {
    this.file = file;
    this.fd = fd;
    this.written = size;
    this.synced = size;
    const directFd = direct ? openDirect(file) : undefined;
    if (directFd !== undefined) this.directWriter = new DirectWriter(fd, directFd);
  }

  /**
   * Creates a new journal (fails if the file exists), fsyncing the file and its directory. On
   * failure no file is left; a full disk throws disk_full.
   */
  static async create(file: string, opts: JournalWriteOptions = {}): Promise<SessionJournal> {
    let fd: number;
    try {
      fd = fs.openSync(file, 'wx+', 0o600);
    } catch (e) {
      throw asDiskFull(e, file);
    }
    try {
      fs.writeSync(fd, encodeHeader(JOURNAL_FORMAT_VERSION));
      fs.fsyncSync(fd);
      await fsyncDirAsync(path.dirname(file));
    } catch (e) {
      // A create that fails leaves nothing behind: an empty journal would read as corrupt at every start.
      fs.closeSync(fd);
      fs.rmSync(file, { force: true });
      throw asDiskFull(e, file);
    }
    return new SessionJournal(file, fd, JOURNAL_HEADER_BYTES, opts.directIO !== false);
  }

  /**
   * Opens an existing journal: checks the header (never touching a newer format), streams every
   * record to onRecord, reports damage in the middle to onDamage (see journal-scan.ts), and truncates
   * a torn tail (the cut bytes are kept beside the journal as `<file>.tail-<ms>` so nothing is
   * destroyed silently).
   */
  static async open(file: string, opts: JournalOpenOptions): Promise<SessionJournal> {
    const { fd, end, version, damage } = await openJournalFile(file, opts.logger, (rec) => opts.onRecord(rec) !== false, opts.onDamage);
    // A format 1 file stays format 1: no pad records, so no direct writes.
    const j = new SessionJournal(file, fd, end, opts.directIO !== false && version >= 2);
    j.damaged = damage;
    return j;
  }

  /** Bytes durably written to the file (excluding queued bytes). */
  get size(): number {
    return this.written;
  }

  get hasPending(): boolean {
    return this.queue.bytes > 0 || this.directWriter?.busy === true;
  }

  /** The file offset where the next appended record will go (a pad may come first). */
  get nextOffset(): number {
    return this.written + (this.directWriter?.unfinishedBytes ?? 0) + this.queue.bytes;
  }

  /** The damaged ranges found when the journal was opened, in file order (see JournalOpenOptions.onDamage). */
  get damage(): readonly JournalDamage[] {
    return this.damaged;
  }

  /** Whether large records are written with direct I/O. */
  get direct(): boolean {
    return this.directWriter !== undefined && directIOUsable();
  }

  /**
   * Where the last appended record's stored body is: bytes [lastStart, lastEnd) of lastBuf, followed
   * by all of lastExtra when that is set (a large payload kept by reference, see append).
   */
  get lastBuf(): Buffer {
    return this.queue.lastBuf;
  }
  get lastStart(): number {
    return this.queue.lastStart;
  }
  get lastEnd(): number {
    return this.queue.lastEnd;
  }
  get lastExtra(): Buffer | undefined {
    return this.queue.lastExtra;
  }

  // ---- queue ----

  /**
   * Queues one record whose body is `body` followed by `payload`, when given; lastBuf, lastStart,
   * lastEnd and lastExtra then say where the stored body is (safe to keep a view of: its bytes are
   * never reused). Records are written straight into an arena (no buffer per record, no
   * concatenation at flush); bytes once written there are never rewritten — a full arena is
   * replaced, not reused. Records past OWN_BUFFER_BYTES get a buffer of their own; their payload is
   * not copied at all: it is kept by the journal until written (directly, where it can) from the
   * caller's buffer, which must not change afterwards, and becomes lastExtra.
   */
  append(kind: number, body: Uint8Array, payload?: Uint8Array): void {
    if (this.closed) throw new AstraError('internal_error', `journal ${this.file} is closed`);
    if (this.failure) throw new AstraError('internal_error', `journal ${this.file} failed earlier: ${this.failure.message}`);
    const len = body.length + (payload ? payload.length : 0);
    const n = RECORD_HEADER_BYTES + 1 + len;
    const q = this.queue;
    if (n <= OWN_BUFFER_BYTES) return q.write(kind, body, payload, len, n);
    if (payload) {
      const head = Buffer.allocUnsafe(RECORD_HEADER_BYTES + 1 + body.length);
      writeRecordHead(head, 0, kind, len, body);
      head.writeUInt32BE(crc32(payload, crc32(body, kindCrc(kind))), 4);
      const extra = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.length);
      if (this.direct && fitsDirect(n)) q.pushDirect(this.nextOffset, head, extra, n);
      else q.push(n, head, extra);
      q.setLast(head, RECORD_HEADER_BYTES + 1, head.length, extra);
      return;
    }
    const rec = encodeRecord(kind, body);
    q.push(n, rec);
    q.setLast(rec, RECORD_HEADER_BYTES + 1, rec.length, undefined);
  }

  // ---- flush ----

  /**
   * Writes what is queued, in order: buffered bytes with one write, up to the first large record,
   * whose direct write is started; what comes after it is written when it completes. While a direct
   * write is in flight, this does nothing — unless more than MAX_QUEUED_BEHIND bytes wait behind it:
   * those are written at once, synchronously, past it (a producer faster than the disk is held back
   * rather than buffered without bound). Throws on I/O failure: disk full blocks the journal (see
   * `blocked`), any other error poisons it.
   */
  flush(): void {
    if (this.blockedBy) throw this.blockedBy;
    if (this.queue.bytes === 0) return;
    if (this.failure) throw this.failure;
    this.queue.seal();
    const dw = this.directWriter;
    if (dw?.busy) {
      if (this.queue.bytes >= MAX_QUEUED_BEHIND) this.writeAhead(dw);
      return;
    }
    // Large records queued before direct I/O was refused go through the page cache with the rest.
    const list = dw && !dw.usable ? this.queue.items.flatMap((x) => (Buffer.isBuffer(x) ? [x] : recordBuffers(x))) : this.queue.items;
    let k = 0;
    let n = 0;
    while (k < list.length && Buffer.isBuffer(list[k])) n += (list[k++] as Buffer).length;
    // Nothing leaves the queue before its write succeeded: a full disk must lose nothing.
    if (n > 0) this.guard(() => writeAllSync(this.fd, k === list.length ? (list as Buffer[]) : (list.slice(0, k) as Buffer[]), this.written), this.written);
    const large = list[k] as DirectRecord | undefined;
    this.queue.items = large ? list.slice(k) : [];
    this.queue.bytes -= n;
    this.written += n;
    if (large) this.startDirect(dw!, large);
  }

  /** Runs a write that starts at `from`; on failure, see writeFailed. */
  private guard(write: () => void, from: number): void {
    try {
      write();
    } catch (e) {
      throw this.writeFailed(e, from);
    }
  }

  /**
   * After a write from `from` failed: a full disk (ENOSPC, EDQUOT) blocks the journal — the bytes
   * it wrote past `from` are cut off (the file ends on a whole record again) and the queue is kept
   * for retry(); any other error poisons it (a partial write then leaves bytes the next open
   * truncates as a torn tail). Returns the error to throw.
   */
  private writeFailed(e: unknown, from: number): Error {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOSPC' && code !== 'EDQUOT') return (this.failure = e as Error);
    try {
      if (fs.fstatSync(this.fd).size > from) fs.ftruncateSync(this.fd, from);
    } catch (t) {
      return (this.failure = t as Error);
    }
    return (this.blockedBy = diskFull(this.file, code, 'what was appended is kept in memory and written once there is room'));
  }

  /** Hands `d` (at `written`, first in the queue) to the direct writer; once it is on disk, writes what was queued behind it. */
  private startDirect(dw: DirectWriter, d: DirectRecord): void {
    if (!dw.start(d, (err, advanced, items) => this.directDone(err, advanced, items))) {
      this.guard(() => writeAllSync(this.fd, recordBuffers(d), d.at), d.at);
      this.written += d.bytes;
    }
    this.queue.items.shift();
    this.queue.bytes -= d.bytes;
    if (!dw.busy) this.flush();
  }

  private directDone(err: Error | undefined, advanced: number, items: readonly Queued[]): void {
    if (err) {
      // Cuts off the record and what was written ahead of it; on a full disk they go back in the queue.
      if (this.writeFailed(err, this.written) === this.blockedBy) {
        this.queue.items = [...items, ...this.queue.items];
        this.queue.bytes += advanced;
      }
    } else if (!this.failure) this.written += advanced;
    let failure = this.failure ?? this.blockedBy;
    if (!failure) {
      try {
        this.flush();
      } catch (e) {
        failure = e as Error;
      }
    }
    this.onWritten?.(failure);
  }

  /** Writes everything queued synchronously, past the direct write in flight and what was written ahead of it before. */
  private writeAhead(dw: DirectWriter): void {
    const list = this.queue.items;
    const at = this.written + dw.unfinishedBytes;
    this.guard(() => dw.writeAhead(list, at), at);
    this.queue.items = [];
    this.queue.bytes = 0;
  }

  /**
   * The disk_full error while the journal is blocked: a write found the disk full. Appends are
   * still queued in memory (the owner holds producers back: see nextOffset − size); flush() and
   * sync() throw this until retry() gets what is queued written.
   */
  get blocked(): AstraError | undefined {
    return this.blockedBy;
  }

  /**
   * Tries again to write what is queued after a full disk. Returns true once the journal is
   * healthy again (it was not blocked, or everything queued has now been written or handed to the
   * direct writer); false while the disk is still full, or if the journal failed or was closed.
   * Everything queued must fit: the bytes of a write that runs out of room are cut off again. A
   * large record handed to the direct writer may still find the disk full later: onWritten then
   * gets the disk_full error and `blocked` is set again. (close() of a blocked journal throws
   * disk_full and what was queued is lost: retry first.)
   */
  retry(): boolean {
    if (this.failure || this.closed) return false;
    if (!this.blockedBy) return true;
    this.blockedBy = undefined;
    try {
      this.flush();
      return true;
    } catch {
      return false;
    }
  }

  // ---- sync ----

  /** Flushes and fsyncs; concurrent callers share one fsync where they can. */
  async sync(): Promise<void> {
    this.flush();
    while (this.directWriter?.busy) {
      await this.directWriter.settled;
      if (this.failure) throw this.failure;
      this.flush();
    }
    if (this.blockedBy) throw this.blockedBy;
    const target = this.written;
    while (this.synced < target) {
      if (this.failure) throw this.failure;
      if (!this.syncing) this.syncing = this.fsyncOnce();
      await this.syncing;
    }
  }

  private async fsyncOnce(): Promise<void> {
    const upTo = this.written;
    try {
      await new Promise<void>((resolve, reject) => fs.fsync(this.fd, (err) => (err ? reject(err) : resolve())));
      if (upTo > this.synced) this.synced = upTo;
    } catch (e) {
      this.failure = e as Error;
      throw e;
    } finally {
      this.syncing = undefined;
    }
  }

  // ---- read ----

  /**
   * Reads whole records from `offset` until `maxBytes` have been read or `end` (exclusive) is
   * reached; only bytes already written are visible, and damaged ranges found at open are stepped
   * over. Returns the records and the next offset.
   */
  readRecords(offset: number, maxBytes: number, end = this.written): Promise<{ records: ScannedRecord[]; nextOffset: number }> {
    return readWritten({ file: this.file, fd: this.fd, damage: this.damaged }, offset, maxBytes, Math.min(end, this.written));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.sync();
    } finally {
      this.closed = true;
      fs.closeSync(this.fd);
      this.directWriter?.close();
    }
  }
}
