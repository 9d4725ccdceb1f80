// The journal's bytes: the file header, record framing and checksums, and the one synchronous
// write both of the journal's writers use. No state; SessionJournal (journal.ts) owns the file.
//
// Layout: a 16-byte header (magic "ASTRAJNL", u16 format version, u16 flags, u32 crc32 of the first
// 12 bytes), then records: u32 BE length N, u32 BE crc32 over the N bytes, then N bytes = one kind
// byte + an opaque body.
import * as fs from 'node:fs';
import { AstraError } from '../protocol/index.js';
import { crc32 } from './crc32.js';

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

/** The largest kind this build writes: a resynchronising scan only trusts records of a kind it knows. */
export const MAX_KNOWN_KIND = RecordKind.pad;

export interface ScannedRecord {
  kind: number;
  body: Buffer;
  /** File offset of the record's length header. */
  offset: number;
  /** Header + payload bytes. */
  size: number;
}

export function encodeHeader(version: number): Buffer {
  const h = Buffer.alloc(JOURNAL_HEADER_BYTES);
  JOURNAL_MAGIC.copy(h, 0);
  h.writeUInt16BE(version, 8);
  h.writeUInt16BE(0, 10);
  h.writeUInt32BE(crc32(h.subarray(0, 12)), 12);
  return h;
}

/** Checks a journal header; returns its format version. */
export function checkHeader(file: string, h: Buffer): number {
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

/** writev takes at most this many buffers at once (Linux's IOV_MAX). */
const IOV_MAX = 1024;

/**
 * Writes all of `bufs` at `position` with one writev (no concatenation: large records are written
 * from their own buffers); a short write continues where it stopped. Synchronous on purpose for
 * writes through the page cache: on the thread pool they were measured slower (the copy into new
 * page-cache memory then competes with the client for the second core). Only direct writes, which
 * cost the CPU almost nothing, go to the thread pool (journal-direct-writer.ts).
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

const kindCrcs = new Map<number, number>();
/** The CRC of a lone kind byte: a record's checksum is chained from it, so the kind is never sliced in. */
export function kindCrc(kind: number): number {
  let c = kindCrcs.get(kind);
  if (c === undefined) kindCrcs.set(kind, (c = crc32(Uint8Array.of(kind))));
  return c;
}

/**
 * Writes a record's length (kind + `bodyLength` bytes), kind and `body` at `at`; the checksum
 * (bytes 4–8) is the caller's to write, and any bytes of the body past `body` too.
 */
export function writeRecordHead(buf: Buffer, at: number, kind: number, bodyLength: number, body: Uint8Array): void {
  buf.writeUInt32BE(1 + bodyLength, at);
  buf[at + 8] = kind;
  buf.set(body, at + 9);
}

/** The smallest pad record: header and kind byte. */
export const MIN_PAD = RECORD_HEADER_BYTES + 1;

/** Writes a pad record of `size` bytes (≥ MIN_PAD) at `at`. */
export function writePad(buf: Buffer, at: number, size: number): void {
  buf.writeUInt32BE(size - RECORD_HEADER_BYTES, at);
  buf[at + RECORD_HEADER_BYTES] = RecordKind.pad;
  buf.fill(0, at + RECORD_HEADER_BYTES + 1, at + size);
  buf.writeUInt32BE(crc32(buf.subarray(at + RECORD_HEADER_BYTES, at + size)), at + 4);
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
export function parseRecords(
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
