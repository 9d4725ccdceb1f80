// SessionJournal: one append-only file per session.
//
// Layout: a 16-byte header (magic "ASTRAJNL", u16 format version, u16 flags, u32 crc32 of the first
// 12 bytes), then records: u32 BE length N, u32 BE crc32 over the N bytes, then N bytes = one kind
// byte + an opaque body. The journal knows nothing of what the bodies mean (the session layer packs
// them); it guarantees framing, checksums, ordering, batching and durability.
//
// Writes: append() only queues bytes in memory; flush() writes everything queued with ONE writeSync
// (the caller flushes once per tick, so a burst of streamed events costs one syscall); sync() flushes
// and fsyncs, coalescing concurrent callers onto one fsync. A SIGKILL cannot tear a writeSync to a
// regular file, so torn tails come from power loss or outside damage; both are truncated on open.
//
// Large records (format 2): a record over OWN_BUFFER_BYTES that carries a payload is written with
// O_DIRECT (see direct-io.ts), asynchronously, from a page-aligned staging buffer, at a page-aligned
// offset; pad records (kind 4, skipped by every reader) fill the gaps before and after it. Writes stay
// strictly in file order: while a direct write is in flight, what is appended after it waits, and
// `size` (what readers may read) only counts bytes whose write has completed. `onWritten` tells the
// owner when an asynchronous write has completed.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AstraError } from '../protocol/index.js';
import { fsyncDirAsync } from '../durable/index.js';
import { crc32 } from './crc32.js';
import { DIRECT_ALIGN, STAGE_BYTES, directIOUsable, giveStage, openDirect, padTo, refuseDirectIO, takeStage } from './direct-io.js';
import type { RuntimeLogger } from './logger.js';

export const JOURNAL_MAGIC = Buffer.from('ASTRAJNL', 'latin1');
/** 2: may contain pad records (kind 4) around large records written with direct I/O. Format 1 files are read and appended to as format 1. */
export const JOURNAL_FORMAT_VERSION = 2;
export const JOURNAL_HEADER_BYTES = 16;
export const RECORD_HEADER_BYTES = 8;
/** A record longer than this is treated as corruption rather than allocated. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

export const RecordKind = {
  event: 1,
  idempotency: 2,
  settings: 3,
  /** Fills the gap before and after a direct-written record; never handed to readers. */
  pad: 4,
} as const;
export type RecordKindValue = (typeof RecordKind)[keyof typeof RecordKind];

export interface ScannedRecord {
  kind: number;
  body: Buffer;
  /** File offset of the record's length header. */
  offset: number;
  /** Header + payload bytes. */
  size: number;
}

export interface JournalWriteOptions {
  /** Write large records with O_DIRECT where the file system takes it (default true). */
  directIO?: boolean;
}

export interface JournalOpenOptions extends JournalWriteOptions {
  logger: RuntimeLogger;
  /** Called for each valid record in order. Return false to treat this record as the start of a corrupt tail. */
  onRecord(rec: ScannedRecord): boolean | void;
}

const SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

function encodeHeader(version: number): Buffer {
  const h = Buffer.alloc(JOURNAL_HEADER_BYTES);
  JOURNAL_MAGIC.copy(h, 0);
  h.writeUInt16BE(version, 8);
  h.writeUInt16BE(0, 10);
  h.writeUInt32BE(crc32(h.subarray(0, 12)), 12);
  return h;
}

function checkHeader(file: string, h: Buffer): number {
  if (h.length < JOURNAL_HEADER_BYTES || !h.subarray(0, 8).equals(JOURNAL_MAGIC))
    throw new AstraError('journal_corrupt', `${file} is not an Astra journal (bad magic). Move it aside to recover the other sessions.`, { file });
  const version = h.readUInt16BE(8);
  if (h.readUInt32BE(12) !== crc32(h.subarray(0, 12)))
    throw new AstraError('journal_corrupt', `${file} has a damaged header. Move it aside to recover the other sessions.`, { file });
  if (version > JOURNAL_FORMAT_VERSION)
    throw new AstraError(
      'journal_unsupported',
      `${file} has journal format ${version}, but this Astra reads formats up to ${JOURNAL_FORMAT_VERSION}. Upgrade Astra; the file was left untouched.`,
      { file, formatVersion: version, supportedVersion: JOURNAL_FORMAT_VERSION },
    );
  if (version < 1) throw new AstraError('journal_corrupt', `${file} has an invalid format version ${version}.`, { file });
  return version;
}

/** Records are queued in arenas of this size (a tick's worth of small events in one buffer). */
const ARENA_BYTES = 256 * 1024;
/** An arena started for a record bigger than a quarter of ARENA_BYTES (output chunks) has this size. */
const BIG_ARENA_BYTES = 4 * 1024 * 1024;
/** Records bigger than this get a buffer of their own. */
const OWN_BUFFER_BYTES = 1024 * 1024;

/**
 * Writes all of `bufs` at `position` with one writev (no concatenation: large records are written
 * from their own buffers); a short write continues where it stopped. Synchronous on purpose for
 * writes through the page cache: on the thread pool they were measured slower (the copy into new
 * page-cache memory then competes with the client for the second core). Only direct writes, which
 * cost the CPU almost nothing, go to the thread pool (writeDirect).
 */
export function writeAllSync(fd: number, bufs: readonly Buffer[], position: number): number {
  let list = bufs.filter((b) => b.length > 0);
  let at = position;
  while (list.length > 0) {
    const n = list.length === 1 ? fs.writeSync(fd, list[0]!, 0, list[0]!.length, at) : fs.writevSync(fd, list.slice(0, IOV_MAX), at);
    at += n;
    let k = 0;
    let left = n;
    while (k < list.length && left >= list[k]!.length) left -= list[k++]!.length;
    list = list.slice(k);
    if (left > 0) list[0] = list[0]!.subarray(left);
  }
  return at - position;
}

/** Bytes queued behind a direct write in flight beyond which flush() writes them synchronously. */
const MAX_QUEUED_BEHIND = 32 * 1024 * 1024;

/** writev takes at most this many buffers at once (Linux's IOV_MAX). */
const IOV_MAX = 1024;

const kindCrcs = new Map<number, number>();
function kindCrc(kind: number): number {
  let c = kindCrcs.get(kind);
  if (c === undefined) kindCrcs.set(kind, (c = crc32(Uint8Array.of(kind))));
  return c;
}

/**
 * Writes a record's length (kind + `bodyLength` bytes), kind and `body` at `at`; the checksum
 * (bytes 4–8) is the caller's to write, and any bytes of the body past `body` too.
 */
function writeRecordHead(buf: Buffer, at: number, kind: number, bodyLength: number, body: Uint8Array): void {
  buf.writeUInt32BE(1 + bodyLength, at);
  buf[at + 8] = kind;
  buf.set(body, at + 9);
}

/** Writes a pad record of `size` bytes (≥ RECORD_HEADER_BYTES + 1) at `at`. */
function writePad(buf: Buffer, at: number, size: number): void {
  buf.writeUInt32BE(size - RECORD_HEADER_BYTES, at);
  buf[at + RECORD_HEADER_BYTES] = RecordKind.pad;
  buf.fill(0, at + RECORD_HEADER_BYTES + 1, at + size);
  buf.writeUInt32BE(crc32(buf.subarray(at + RECORD_HEADER_BYTES, at + size)), at + 4);
}

/** The smallest pad record: header and kind byte. */
const MIN_PAD = RECORD_HEADER_BYTES + 1;

/** A large record queued for a direct write: its head (length, checksum, kind, body) and payload, then `bytes - head - payload` of pad. */
interface DirectRecord {
  at: number;
  head: Buffer;
  payload: Buffer;
  bytes: number;
}

/** A queued direct record as plain buffers: head, payload, trailing pad. */
function recordBuffers(d: DirectRecord): Buffer[] {
  const padBytes = d.bytes - d.head.length - d.payload.length;
  if (padBytes === 0) return [d.head, d.payload];
  const pad = Buffer.allocUnsafe(padBytes);
  writePad(pad, 0, padBytes);
  return [d.head, d.payload, pad];
}

export function encodeRecord(kind: number, body: Uint8Array): Buffer {
  const rec = Buffer.allocUnsafe(RECORD_HEADER_BYTES + 1 + body.length);
  writeRecordHead(rec, 0, kind, body.length, body);
  rec.writeUInt32BE(crc32(rec.subarray(8)), 4);
  return rec;
}

/**
 * Parses whole records from buf starting at pos; stops at the first incomplete or bad one.
 * `verify` checks each record's checksum (skipped only for bytes this process has already verified
 * or written itself).
 */
function parseRecords(
  buf: Buffer,
  baseOffset: number,
  verify: boolean,
  fn: (rec: ScannedRecord) => boolean,
): { consumed: number; bad: string | undefined } {
  let pos = 0;
  while (buf.length - pos >= RECORD_HEADER_BYTES) {
    const len = buf.readUInt32BE(pos);
    if (len < 1 || len > MAX_RECORD_BYTES) return { consumed: pos, bad: `record length ${len} out of range` };
    if (buf.length - pos - RECORD_HEADER_BYTES < len) break;
    const payload = buf.subarray(pos + RECORD_HEADER_BYTES, pos + RECORD_HEADER_BYTES + len);
    if (verify && crc32(payload) !== buf.readUInt32BE(pos + 4)) return { consumed: pos, bad: 'checksum mismatch' };
    const ok = payload[0] === RecordKind.pad || fn({ kind: payload[0]!, body: payload.subarray(1), offset: baseOffset + pos, size: RECORD_HEADER_BYTES + len });
    if (!ok) return { consumed: pos, bad: 'record rejected by reader' };
    pos += RECORD_HEADER_BYTES + len;
  }
  return { consumed: pos, bad: undefined };
}

export class SessionJournal {
  readonly file: string;
  private fd: number;
  /** Bytes on disk (written, maybe not yet fsynced). */
  private written: number;
  private synced: number;
  /** Queued bytes in file order: buffers written through the page cache, and large records written directly. */
  private pending: (Buffer | DirectRecord)[] = [];
  private pendingBytes = 0;
  /** O_DIRECT descriptor for large records; undefined when they go through the page cache. */
  private directFd: number | undefined;
  /** The direct write in flight (resolves when it has completed, failed or not), and its size. */
  private inFlight: Promise<void> | undefined;
  private inFlightBytes = 0;
  /** Bytes written synchronously past the direct write in flight (see flush). */
  private ahead = 0;
  /** Called after an asynchronous write has completed and what was queued behind it was written, with the error if one failed. */
  onWritten: ((err?: Error) => void) | undefined;
  private arena = Buffer.allocUnsafeSlow(ARENA_BYTES);
  private arenaStart = 0;
  private arenaEnd = 0;
  private syncing: Promise<void> | undefined;
  private closed = false;
  private failure: Error | undefined;

  private constructor(file: string, fd: number, size: number, direct: boolean) {
    this.file = file;
    this.fd = fd;
    this.written = size;
    this.synced = size;
    if (direct) this.directFd = openDirect(file);
  }

  /** Creates a new journal (fails if the file exists), fsyncing the file and its directory. */
  static async create(file: string, opts: JournalWriteOptions = {}): Promise<SessionJournal> {
    const fd = fs.openSync(file, 'wx+', 0o600);
    try {
      fs.writeSync(fd, encodeHeader(JOURNAL_FORMAT_VERSION));
      fs.fsyncSync(fd);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    await fsyncDirAsync(path.dirname(file));
    return new SessionJournal(file, fd, JOURNAL_HEADER_BYTES, opts.directIO !== false);
  }

  /**
   * Opens an existing journal: checks the header (never touching a newer format), streams every
   * record to onRecord, and truncates a torn or corrupt tail (the cut bytes are kept beside the
   * journal as `<file>.tail-<ms>` so nothing is destroyed silently).
   */
  static async open(file: string, opts: JournalOpenOptions): Promise<SessionJournal> {
    const fd = fs.openSync(file, 'r+');
    try {
      const size = fs.fstatSync(fd).size;
      const header = Buffer.alloc(JOURNAL_HEADER_BYTES);
      const got = fs.readSync(fd, header, 0, JOURNAL_HEADER_BYTES, 0);
      const version = checkHeader(file, header.subarray(0, got));

      let offset = JOURNAL_HEADER_BYTES;
      let carry: Buffer = Buffer.alloc(0);
      let bad: string | undefined;
      let goodEnd = JOURNAL_HEADER_BYTES;
      const chunk = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
      while (offset < size && bad === undefined) {
        const n = await new Promise<number>((resolve, reject) =>
          fs.read(fd, chunk, 0, Math.min(SCAN_CHUNK_BYTES, size - offset), offset, (err, bytes) => (err ? reject(err) : resolve(bytes))),
        );
        if (n === 0) break;
        const base = goodEnd;
        // Copy: records handed to onRecord must not alias the reusable chunk buffer.
        const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, n)]) : Buffer.from(chunk.subarray(0, n));
        offset += n;
        const r = parseRecords(buf, base, true, (rec) => opts.onRecord(rec) !== false);
        goodEnd = base + r.consumed;
        bad = r.bad;
        carry = buf.subarray(r.consumed);
        if (carry.length >= RECORD_HEADER_BYTES && carry.readUInt32BE(0) > MAX_RECORD_BYTES) bad = 'record length out of range';
      }
      if (bad === undefined && goodEnd < size) bad = `torn record (${size - goodEnd} bytes at the end)`;
      if (goodEnd < size) {
        const tailFile = `${file}.tail-${Date.now()}`;
        try {
          const tail = Buffer.alloc(size - goodEnd);
          fs.readSync(fd, tail, 0, tail.length, goodEnd);
          fs.writeFileSync(tailFile, tail, { mode: 0o600 });
        } catch {
          // Keeping the cut bytes is a courtesy; truncating is what makes the journal usable.
        }
        opts.logger.warn(
          { file, offset: goodEnd, droppedBytes: size - goodEnd, reason: bad, savedTo: tailFile },
          'journal tail was torn or corrupt; truncated to the last good record',
        );
        fs.ftruncateSync(fd, goodEnd);
        fs.fsyncSync(fd);
      }
      // A format 1 file stays format 1: no pad records, so no direct writes.
      return new SessionJournal(file, fd, goodEnd, opts.directIO !== false && version >= 2);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
  }

  /** Bytes durably written to the file (excluding queued bytes). */
  get size(): number {
    return this.written;
  }

  get hasPending(): boolean {
    return this.pendingBytes > 0 || this.inFlight !== undefined;
  }

  /** The file offset where the next appended record will go (a pad may come first). */
  get nextOffset(): number {
    return this.written + this.inFlightBytes + this.ahead + this.pendingBytes;
  }

  /** Whether large records are written with direct I/O. */
  get direct(): boolean {
    return this.directFd !== undefined && directIOUsable();
  }

  /**
   * Where the last appended record's stored body is: bytes [lastStart, lastEnd) of lastBuf, followed
   * by all of lastExtra when that is set (a large payload kept by reference, see append).
   */
  lastBuf: Buffer = Buffer.alloc(0);
  lastStart = 0;
  lastEnd = 0;
  lastExtra: Buffer | undefined = undefined;

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
    this.lastExtra = undefined;
    if (n > OWN_BUFFER_BYTES) {
      if (payload) {
        const head = Buffer.allocUnsafe(RECORD_HEADER_BYTES + 1 + body.length);
        writeRecordHead(head, 0, kind, len, body);
        head.writeUInt32BE(crc32(payload, crc32(body, kindCrc(kind))), 4);
        const extra = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.length);
        if (this.direct && n + 2 * DIRECT_ALIGN <= STAGE_BYTES) this.queueDirect(head, extra, n);
        else {
          this.sealArena();
          this.pending.push(head, extra);
          this.pendingBytes += n;
        }
        this.lastBuf = head;
        this.lastStart = RECORD_HEADER_BYTES + 1;
        this.lastEnd = head.length;
        this.lastExtra = extra;
        return;
      }
      const rec = encodeRecord(kind, body);
      this.sealArena();
      this.pending.push(rec);
      this.pendingBytes += n;
      this.lastBuf = rec;
      this.lastStart = RECORD_HEADER_BYTES + 1;
      this.lastEnd = rec.length;
      return;
    }
    this.pendingBytes += n;
    if (this.arenaEnd + n > this.arena.length) {
      this.sealArena();
      // Output chunks of 64 KiB share 4 MiB arenas: one allocation per 64 of them, not one each.
      this.arena = Buffer.allocUnsafeSlow(n > ARENA_BYTES / 4 ? BIG_ARENA_BYTES : ARENA_BYTES);
      this.arenaStart = this.arenaEnd = 0;
    }
    const a = this.arena;
    const at = this.arenaEnd;
    writeRecordHead(a, at, kind, len, body);
    // The checksum covers kind + body (+ payload): chained from the kind byte's CRC, no slicing.
    let crc = crc32(body, kindCrc(kind));
    if (payload) {
      a.set(payload, at + 9 + body.length);
      crc = crc32(payload, crc);
    }
    a.writeUInt32BE(crc, at + 4);
    this.arenaEnd = at + n;
    this.lastBuf = a;
    this.lastStart = at + 9;
    this.lastEnd = at + n;
  }

  /** Queues a large record for a direct write at the next aligned offset, with pad records before (in the arena) and after it (in the staging buffer). */
  private queueDirect(head: Buffer, payload: Buffer, n: number): void {
    const before = padTo(this.nextOffset, MIN_PAD);
    if (before > 0) {
      this.pendingBytes += before;
      if (this.arenaEnd + before > this.arena.length) {
        this.sealArena();
        this.arena = Buffer.allocUnsafeSlow(ARENA_BYTES);
        this.arenaStart = this.arenaEnd = 0;
      }
      writePad(this.arena, this.arenaEnd, before);
      this.arenaEnd += before;
    }
    this.sealArena();
    const at = this.nextOffset;
    const bytes = n + padTo(at + n, MIN_PAD);
    this.pending.push({ at, head, payload, bytes });
    this.pendingBytes += bytes;
  }

  private sealArena(): void {
    if (this.arenaEnd > this.arenaStart) {
      this.pending.push(this.arena.subarray(this.arenaStart, this.arenaEnd));
      this.arenaStart = this.arenaEnd;
    }
  }

  /**
   * Writes what is queued, in order: buffered bytes with one write, up to the first large record,
   * whose direct write is started; what comes after it is written when it completes. While a direct
   * write is in flight, this does nothing — unless more than MAX_QUEUED_BEHIND bytes wait behind it:
   * those are written at once, synchronously, past it (a producer faster than the disk is held back
   * rather than buffered without bound). Throws (and poisons the journal) on I/O failure.
   */
  flush(): void {
    if (this.pendingBytes === 0) return;
    if (this.failure) throw this.failure;
    this.sealArena();
    if (this.inFlight) {
      if (this.pendingBytes >= MAX_QUEUED_BEHIND) this.writeAhead();
      return;
    }
    // Large records queued before direct I/O was refused go through the page cache with the rest.
    const list = directIOUsable() ? this.pending : this.pending.flatMap((x) => (Buffer.isBuffer(x) ? [x] : recordBuffers(x)));
    let k = 0;
    let n = 0;
    while (k < list.length && Buffer.isBuffer(list[k])) n += (list[k++] as Buffer).length;
    const direct = list[k] as DirectRecord | undefined;
    this.pending = direct ? list.slice(k + 1) : [];
    this.pendingBytes -= n + (direct ? direct.bytes : 0);
    this.guard(() => {
      if (n > 0) writeAllSync(this.fd, k === list.length ? (list as Buffer[]) : (list.slice(0, k) as Buffer[]), this.written);
    });
    this.written += n;
    if (direct) this.writeDirect(direct);
  }

  /** Runs a write; a failure poisons the journal (a partial write leaves bytes the next open truncates as a torn tail). */
  private guard(write: () => void): void {
    try {
      write();
    } catch (e) {
      this.failure = e as Error;
      throw e;
    }
  }

  /** Writes everything queued synchronously, past the direct write in flight and what was written ahead of it before. */
  private writeAhead(): void {
    const list = this.pending;
    let at = this.written + this.inFlightBytes + this.ahead;
    this.pending = [];
    this.pendingBytes = 0;
    this.guard(() => {
      for (let k = 0; k < list.length; ) {
        const bufs: Buffer[] = [];
        while (k < list.length && Buffer.isBuffer(list[k])) bufs.push(list[k++] as Buffer);
        if (bufs.length > 0) at += writeAllSync(this.fd, bufs, at);
        const d = list[k++] as DirectRecord | undefined;
        if (!d) break;
        this.writeDirectSync(d);
        at += d.bytes;
      }
    });
    this.ahead = at - (this.written + this.inFlightBytes);
  }

  /** Writes `d` directly and synchronously (through the page cache where no staging buffer can be had). */
  private writeDirectSync(d: DirectRecord): void {
    const stage = this.stage(d);
    if (!stage) {
      writeAllSync(this.fd, recordBuffers(d), d.at);
      return;
    }
    try {
      let done = 0;
      let err: NodeJS.ErrnoException | null = null;
      try {
        done = fs.writeSync(this.directFd!, stage, 0, d.bytes, d.at);
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      this.finishDirect(stage, d, err, done);
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
  private finishDirect(stage: Buffer, d: DirectRecord, err: NodeJS.ErrnoException | null, done: number): void {
    if (err) {
      if (err.code !== 'EINVAL') throw err;
      refuseDirectIO();
      done = 0;
    }
    if (done < d.bytes) writeAllSync(this.fd, [stage.subarray(done, d.bytes)], d.at + done);
  }

  /** Starts the direct write of `d` (at `written`) on the thread pool; on completion, writes what was queued behind it. */
  private writeDirect(d: DirectRecord): void {
    const stage = this.stage(d);
    if (!stage) {
      this.guard(() => writeAllSync(this.fd, recordBuffers(d), d.at));
      this.written += d.bytes;
      this.flush();
      return;
    }
    this.inFlightBytes = d.bytes;
    this.inFlight = new Promise<void>((resolve) => {
      fs.write(this.directFd!, stage, 0, d.bytes, d.at, (err, done) => {
        try {
          this.finishDirect(stage, d, err, done);
        } catch (e) {
          this.failure = e as Error;
        }
        giveStage(stage);
        if (!this.failure) this.written += d.bytes + this.ahead;
        this.inFlight = undefined;
        this.inFlightBytes = 0;
        this.ahead = 0;
        resolve();
        let failure = this.failure;
        if (!failure) {
          try {
            this.flush();
          } catch (e) {
            failure = e as Error;
          }
        }
        this.onWritten?.(failure);
      });
    });
  }

  /** Flushes and fsyncs; concurrent callers share one fsync where they can. */
  async sync(): Promise<void> {
    this.flush();
    while (this.inFlight) {
      await this.inFlight;
      if (this.failure) throw this.failure;
      this.flush();
    }
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

  /**
   * Reads whole records from `offset` until `maxBytes` have been read or `end` (exclusive) is
   * reached; only bytes already written are visible. Returns the records and the next offset.
   */
  async readRecords(offset: number, maxBytes: number, end = this.written): Promise<{ records: ScannedRecord[]; nextOffset: number }> {
    const limit = Math.min(end, this.written);
    if (offset >= limit) return { records: [], nextOffset: offset };
    const want = Math.min(limit - offset, Math.max(maxBytes, RECORD_HEADER_BYTES));
    let buf = Buffer.allocUnsafe(want);
    let n = await this.readAt(buf, offset);
    buf = buf.subarray(0, n);
    // A record larger than the window: grow the read to hold at least that one record.
    if (buf.length >= RECORD_HEADER_BYTES) {
      const first = RECORD_HEADER_BYTES + buf.readUInt32BE(0);
      if (first > buf.length && first <= limit - offset && first <= MAX_RECORD_BYTES + RECORD_HEADER_BYTES) {
        // Keep what was read; read only the rest.
        const whole = Buffer.allocUnsafe(first);
        buf.copy(whole);
        n = buf.length + (await this.readAt(whole.subarray(buf.length), offset + buf.length));
        buf = whole.subarray(0, n);
      }
    }
    const records: ScannedRecord[] = [];
    // No checksums here: every byte before `written` was verified when the journal was opened or
    // written by this process, and reading it back is how subscribers catch up — at full speed.
    const r = parseRecords(buf, offset, false, (rec) => {
      records.push(rec);
      return true;
    });
    if (r.bad) throw new AstraError('journal_corrupt', `${this.file}: ${r.bad} at offset ${offset + r.consumed}`, { file: this.file });
    // Only pads so far (the window began at the pad before a large record): read on from the record,
    // so that it, not the pad, decides how much to read.
    if (records.length === 0 && r.consumed > 0) return this.readRecords(offset + r.consumed, maxBytes, end);
    return { records, nextOffset: offset + r.consumed };
  }

  private readAt(buf: Buffer, position: number): Promise<number> {
    return new Promise((resolve, reject) =>
      fs.read(this.fd, buf, 0, buf.length, position, (err, bytes) => (err ? reject(err) : resolve(bytes))),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.sync();
    } finally {
      this.closed = true;
      fs.closeSync(this.fd);
      if (this.directFd !== undefined) fs.closeSync(this.directFd);
    }
  }
}
