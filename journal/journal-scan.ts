// Reading a journal once, at open: every valid record to the owner, in file order, and the damage
// told apart from a torn tail.
//
// A torn tail is an incomplete or bad record with no valid record after it (power loss mid-write,
// or damage to the last record): SessionJournal.open cuts it off. A bad record followed by valid
// ones is corruption: the scan resynchronises at the next offset where a whole record of a known
// kind with a matching checksum starts, reports the range between as damaged, and carries on — the
// records after the damage are never dropped, and the file is left as it is, so every later open
// finds the same damage at the same place.
import * as fs from 'node:fs';
import { crc32 } from './crc32.js';
import { JOURNAL_HEADER_BYTES, MAX_KNOWN_KIND, MAX_RECORD_BYTES, RECORD_HEADER_BYTES, RecordKind, checkHeader, type ScannedRecord } from './journal-format.js';
import type { JournalLogger } from './logger.js';

/** A range of a journal file that holds no record a reader may use. */
export interface JournalDamage {
  /** File offset where the damage starts. */
  offset: number;
  bytes: number;
  reason: string;
}

export interface ScanResult {
  /** Where the usable journal ends: the bytes past it (if any) are a torn tail. */
  end: number;
  /** Why the bytes past `end` are a torn tail; undefined when there are none. */
  tornReason: string | undefined;
  /** Every damaged range before `end`, in file order: corruption, and runs of records the reader rejected. */
  damage: JournalDamage[];
}

const REJECTED = 'record rejected by reader';

const SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Opens `file` for SessionJournal.open: checks the header (never touching a newer format), streams
 * every record to onRecord and every damaged range to onDamage (both logged), and truncates a torn
 * tail (the cut bytes are kept beside the journal as `<file>.tail-<ms>` so nothing is destroyed
 * silently). Returns the open descriptor, where the journal now ends, its format version and the
 * damaged ranges.
 */
export async function openJournalFile(
  file: string,
  logger: JournalLogger,
  onRecord: (rec: ScannedRecord) => boolean,
  onDamage: ((d: JournalDamage) => void) | undefined,
): Promise<{ fd: number; end: number; version: number; damage: JournalDamage[] }> {
  const fd = fs.openSync(file, 'r+');
  try {
    const size = fs.fstatSync(fd).size;
    const header = Buffer.alloc(JOURNAL_HEADER_BYTES);
    const got = fs.readSync(fd, header, 0, JOURNAL_HEADER_BYTES, 0);
    const version = checkHeader(file, header.subarray(0, got));
    const scan = await scanRecords(fd, JOURNAL_HEADER_BYTES, size, onRecord, (d) => {
      logger.warn(
        { file, offset: d.offset, bytes: d.bytes, reason: d.reason },
        `journal ${file} is damaged at bytes ${d.offset}–${d.offset + d.bytes}: skipped that range, kept every record after it (the file is left as it is)`,
      );
      onDamage?.(d);
    });
    for (const d of scan.damage)
      if (d.reason === REJECTED)
        logger.warn({ file, offset: d.offset, bytes: d.bytes, reason: d.reason }, `journal ${file}: records at bytes ${d.offset}–${d.offset + d.bytes} were rejected by the session and are skipped`);
    if (scan.end < size) {
      const tailFile = `${file}.tail-${Date.now()}`;
      try {
        const tail = Buffer.alloc(size - scan.end);
        fs.readSync(fd, tail, 0, tail.length, scan.end);
        fs.writeFileSync(tailFile, tail, { mode: 0o600 });
      } catch {
        // Keeping the cut bytes is a courtesy; truncating is what makes the journal usable.
      }
      logger.warn(
        { file, offset: scan.end, droppedBytes: size - scan.end, reason: scan.tornReason, savedTo: tailFile },
        'journal tail was torn or corrupt; truncated to the last good record',
      );
      fs.ftruncateSync(fd, scan.end);
      fs.fsyncSync(fd);
    }
    return { fd, end: scan.end, version, damage: scan.damage };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/**
 * A window on the file, read in chunks. Each load reads into a new buffer (the records handed to
 * the owner are views of it and must never be overwritten); bytes already held are copied over.
 */
class FileWindow {
  buf = Buffer.alloc(0);
  start = 0;

  constructor(
    private readonly fd: number,
    readonly size: number,
  ) {}

  covers(off: number, n: number): boolean {
    return off >= this.start && off + n <= this.start + this.buf.length;
  }

  /** Whether a record header could start at `off`: the file ends there or too close to hold one, or a sane length and a known kind are there. */
  headerLikeAt(off: number): boolean {
    if (this.size - off < RECORD_HEADER_BYTES + 1) return true;
    let h: Buffer;
    if (this.covers(off, RECORD_HEADER_BYTES + 1)) h = this.buf.subarray(off - this.start);
    else {
      h = this.probe;
      if (fs.readSync(this.fd, h, 0, h.length, off) < h.length) return true;
    }
    const len = h.readUInt32BE(0);
    const kind = h[RECORD_HEADER_BYTES]!;
    return len >= 1 && len <= MAX_RECORD_BYTES && kind >= 1 && kind <= MAX_KNOWN_KIND;
  }

  private readonly probe = Buffer.alloc(RECORD_HEADER_BYTES + 1);

  /** Makes bytes [off, off + n) available in buf; false when the file ends before. */
  async load(off: number, n: number): Promise<boolean> {
    if (off + n > this.size) return false;
    const len = Math.min(Math.max(SCAN_CHUNK_BYTES, n), this.size - off);
    const next = Buffer.allocUnsafe(len);
    const end = this.start + this.buf.length;
    let have = off >= this.start && off < end ? this.buf.copy(next, 0, off - this.start) : 0;
    while (have < len) {
      const got = await new Promise<number>((resolve, reject) =>
        fs.read(this.fd, next, have, len - have, off + have, (err, bytes) => (err ? reject(err) : resolve(bytes))),
      );
      if (got === 0) break;
      have += got;
    }
    this.buf = next.subarray(0, have);
    this.start = off;
    return have >= n;
  }
}

/**
 * Streams the records of the file behind `fd` (from `from` to `size`) to onRecord, and each damaged
 * range to onDamage before the records after it. A record onRecord rejects (returns false) is
 * skipped, and a run of them is remembered as one damaged range (the reader already knows; the
 * journal only needs to keep readers away from it).
 */
export async function scanRecords(
  fd: number,
  from: number,
  size: number,
  onRecord: (rec: ScannedRecord) => boolean,
  onDamage: (d: JournalDamage) => void,
): Promise<ScanResult> {
  const w = new FileWindow(fd, size);
  const damage: JournalDamage[] = [];
  let rejected: JournalDamage | undefined;
  const endRejectedRun = () => {
    if (rejected) damage.push(rejected);
    rejected = undefined;
  };
  let pos = from;
  while (pos < size) {
    let bad: string | undefined;
    let total = 0;
    if (!w.covers(pos, RECORD_HEADER_BYTES) && !(await w.load(pos, RECORD_HEADER_BYTES))) bad = `torn record (${size - pos} bytes at the end)`;
    else {
      const len = w.buf.readUInt32BE(pos - w.start);
      total = RECORD_HEADER_BYTES + len;
      if (len < 1 || len > MAX_RECORD_BYTES) bad = `record length ${len} out of range`;
      else if (!w.covers(pos, total) && !(await w.load(pos, total))) bad = `record of ${total} bytes runs past the end of the file (${size - pos} bytes left)`;
      else {
        const i = pos - w.start;
        if (crc32(w.buf.subarray(i + RECORD_HEADER_BYTES, i + total)) !== w.buf.readUInt32BE(i + 4)) bad = 'checksum mismatch';
      }
    }
    if (bad !== undefined) {
      const next = await resync(w, pos + 1);
      endRejectedRun();
      if (next === undefined) return { end: pos, tornReason: bad, damage };
      const d = { offset: pos, bytes: next - pos, reason: bad };
      damage.push(d);
      onDamage(d);
      pos = next;
      continue;
    }
    const i = pos - w.start;
    const kind = w.buf[i + RECORD_HEADER_BYTES]!;
    if (kind !== RecordKind.pad && !onRecord({ kind, body: w.buf.subarray(i + RECORD_HEADER_BYTES + 1, i + total), offset: pos, size: total })) {
      if (rejected && rejected.offset + rejected.bytes === pos) rejected.bytes += total;
      else {
        endRejectedRun();
        rejected = { offset: pos, bytes: total, reason: REJECTED };
      }
    } else endRejectedRun();
    pos += total;
  }
  endRejectedRun();
  return { end: pos, tornReason: undefined, damage };
}

/** Candidates up to this size are checksummed whatever follows them (see resync). */
const SMALL_CANDIDATE_BYTES = 64 * 1024;

/**
 * The first offset at or after `from` where a whole record starts: a sane length that fits in the
 * file, a kind this build knows, and a matching checksum. Undefined when there is none.
 *
 * Random bytes (damage inside binary output) look like a sane header about once in 4,000 offsets,
 * and checksumming each such candidate's claimed megabytes took half a minute per 4 MiB of damage.
 * So a candidate larger than SMALL_CANDIDATE_BYTES is checksummed only where what follows it looks
 * like a record header too (or the file ends, or a torn header follows). The price: a large record
 * followed directly by more damage is counted into the damaged range.
 */
async function resync(w: FileWindow, from: number): Promise<number | undefined> {
  for (let at = from; at + RECORD_HEADER_BYTES + 1 <= w.size; at++) {
    if (!w.covers(at, RECORD_HEADER_BYTES + 1) && !(await w.load(at, RECORD_HEADER_BYTES + 1))) return undefined;
    let i = at - w.start;
    const len = w.buf.readUInt32BE(i);
    if (len < 1 || len > MAX_RECORD_BYTES || at + RECORD_HEADER_BYTES + len > w.size) continue;
    const kind = w.buf[i + RECORD_HEADER_BYTES]!;
    if (kind < 1 || kind > MAX_KNOWN_KIND) continue;
    if (len > SMALL_CANDIDATE_BYTES && !w.headerLikeAt(at + RECORD_HEADER_BYTES + len)) continue;
    if (!w.covers(at, RECORD_HEADER_BYTES + len) && !(await w.load(at, RECORD_HEADER_BYTES + len))) return undefined;
    i = at - w.start;
    if (crc32(w.buf.subarray(i + RECORD_HEADER_BYTES, i + RECORD_HEADER_BYTES + len)) === w.buf.readUInt32BE(i + 4)) return at;
  }
  return undefined;
}
