// Reading a session's published events back: from the in-memory tail when it reaches back far enough,
// else from the journal through the tail's sparse seq → offset index (session/read, feeds' backlogs).
import { RecordKind } from '../journal/journal.js';
import { storedFromRecord, type EncodedBody, type EventBody, type StoredEvent } from './event-body.js';
import type { EventLog } from './event-log.js';
import { WIRE_OVERHEAD, type EventTail } from './event-tail.js';

export interface PublishedSource {
  sessionId: string;
  log: EventLog;
  tail: EventTail;
  packEventBody: (body: EventBody) => EncodedBody;
}

/**
 * Published events with seq > afterSeq, at most `limit` of them and about `maxBytes` of encoded
 * size (always at least one).
 */
export async function readPublished(src: PublishedSource, afterSeq: number, limit: number, maxBytes: number): Promise<StoredEvent[]> {
  const end = src.log.publishedSeq;
  if (afterSeq >= end || limit <= 0) return [];
  const cached = src.tail.read(afterSeq, end, limit, maxBytes);
  if (cached) return cached;
  const out: StoredEvent[] = [];
  let bytes = 0;
  const minWindow = Math.max(maxBytes, 64 * 1024);
  let { offset, window } = src.tail.seek(afterSeq + 1, minWindow);
  const journal = src.log.journal;
  for (;;) {
    const { records, nextOffset } = await journal.readRecords(offset, window);
    window = minWindow;
    if (records.length === 0) return out;
    for (const rec of records) {
      if (rec.kind !== RecordKind.event) continue;
      const stored = storedFromRecord(src.sessionId, journal.file, rec.body, rec.offset, src.packEventBody);
      const seq = stored.seq;
      if (seq <= afterSeq) continue;
      if (seq > end || out.length >= limit) return out;
      if (out.length > 0 && bytes + rec.size + WIRE_OVERHEAD > maxBytes) return out;
      out.push(stored);
      bytes += rec.size + WIRE_OVERHEAD;
    }
    offset = nextOffset;
  }
}
