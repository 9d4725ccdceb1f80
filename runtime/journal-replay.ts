// A session's journal read once at load: each record folded into the session's state
// (SessionState.applyEvent / applyRecord, as when it was appended) and kept in its tail and index,
// and the seqs lost to damage noted so that the host reports each range once.
import type { SessionEvent } from '../protocol/index.js';
import { RecordKind, type ScannedRecord } from '../journal/journal.js';
import { eventFromBody, mapBody, unpackInternal, type EncodedBody, type EventBody } from './event-body.js';
import type { EventTail } from './event-tail.js';
import type { SessionState } from './session-state.js';

export class JournalReplay {
  /** The highest seq read. */
  headSeq = 0;
  /** Ranges of seqs the journal does not have (a gap, a damaged tail), each to be reported once. */
  readonly lost: { from: number; to: number }[] = [];

  constructor(
    private readonly sessionId: string,
    private readonly tail: EventTail,
    private readonly state: SessionState,
    private readonly packEventBody: (body: EventBody) => EncodedBody,
  ) {}

  /** One journal record; false means it is not readable (the journal treats it as damage). */
  record(rec: ScannedRecord): boolean {
    if (rec.kind === RecordKind.event) {
      let event: SessionEvent | undefined;
      try {
        event = eventFromBody(this.sessionId, rec.body);
      } catch {
        return false;
      }
      if (!event || event.seq <= this.headSeq) return false;
      const seq = event.seq;
      if (seq > this.headSeq + 1) this.lost.push({ from: this.headSeq + 1, to: seq - 1 });
      // A damage report in the journal covers every gap before it: it is made once.
      if (event.type === 'error' && event.data.reason === 'journal_corrupt') this.lost.length = 0;
      this.headSeq = seq;
      this.tail.indexEvent(seq, rec.offset);
      const body = mapBody(event, rec.body, this.packEventBody);
      this.tail.push(seq, body, 0, body.length, undefined, true);
      this.state.applyEvent(event.type, event.data, seq, event.ts);
      return true;
    }
    let value: unknown;
    try {
      value = unpackInternal(rec.body);
    } catch {
      return false;
    }
    return this.state.applyRecord(rec.kind, value);
  }

  /** The meta remembered events up to `remembered` that the journal no longer has. */
  rememberedHead(remembered: number): void {
    if (remembered > this.headSeq) this.lost.push({ from: this.headSeq + 1, to: remembered });
  }
}
