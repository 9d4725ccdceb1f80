// Catch-up reads of what a journal has written: how subscribers that fell behind the in-memory
// tail read events back, so they run at full speed — no checksums here: every byte before the
// journal's written size was verified when it was opened or written by this process.
import * as fs from 'node:fs';
import { AstraError } from '../protocol/index.js';
import { MAX_RECORD_BYTES, RECORD_HEADER_BYTES, parseRecords, type ScannedRecord } from './journal-format.js';
import type { JournalDamage } from './journal-scan.js';

/** What a read needs of the journal: its file, and the damaged ranges found at open (in file order). */
export interface WrittenJournal {
  readonly file: string;
  readonly fd: number;
  readonly damage: readonly JournalDamage[];
}

/**
 * Reads whole records from `offset` until `maxBytes` have been read or `limit` (exclusive, at most
 * the journal's written size) is reached, stepping over damaged ranges. Returns the records and the
 * next offset.
 */
export async function readWritten(j: WrittenJournal, offset: number, maxBytes: number, limit: number): Promise<{ records: ScannedRecord[]; nextOffset: number }> {
  let stop = limit;
  // Step over a damaged range, and never read into the next.
  for (const d of j.damage) {
    if (offset >= d.offset + d.bytes) continue;
    if (offset >= d.offset) return readWritten(j, d.offset + d.bytes, maxBytes, limit);
    stop = Math.min(stop, d.offset);
    break;
  }
  if (offset >= stop) return { records: [], nextOffset: offset };
  const want = Math.min(stop - offset, Math.max(maxBytes, RECORD_HEADER_BYTES));
  let buf = Buffer.allocUnsafe(want);
  let n = await readAt(j.fd, buf, offset);
  buf = buf.subarray(0, n);
  // A record larger than the window: grow the read to hold at least that one record.
  if (buf.length >= RECORD_HEADER_BYTES) {
    const first = RECORD_HEADER_BYTES + buf.readUInt32BE(0);
    if (first > buf.length && first <= stop - offset && first <= MAX_RECORD_BYTES + RECORD_HEADER_BYTES) {
      // Keep what was read; read only the rest.
      const whole = Buffer.allocUnsafe(first);
      buf.copy(whole);
      n = buf.length + (await readAt(j.fd, whole.subarray(buf.length), offset + buf.length));
      buf = whole.subarray(0, n);
    }
  }
  const records: ScannedRecord[] = [];
  const r = parseRecords(buf, offset, false, (rec) => {
    records.push(rec);
    return true;
  });
  if (r.bad) throw new AstraError('journal_corrupt', `${j.file}: ${r.bad} at offset ${offset + r.consumed}`, { file: j.file });
  // Only pads so far (the window began at the pad before a large record): read on from the record,
  // so that it, not the pad, decides how much to read.
  if (records.length === 0 && r.consumed > 0) return readWritten(j, offset + r.consumed, maxBytes, limit);
  // Stopped at a damaged range with room left in the window: go on after it, as if it were not there.
  if (offset + r.consumed === stop && stop < limit && r.consumed < maxBytes) {
    const more = await readWritten(j, stop, maxBytes - r.consumed, limit);
    for (const rec of more.records) records.push(rec);
    return { records, nextOffset: more.nextOffset };
  }
  return { records, nextOffset: offset + r.consumed };
}

function readAt(fd: number, buf: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) => fs.read(fd, buf, 0, buf.length, position, (err, bytes) => (err ? reject(err) : resolve(bytes))));
}
