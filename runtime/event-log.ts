// EventLog: a session's append path. append assigns the seq and queues the record (one encoding for
// the journal and the wire); one write per tick flushes the queue; events are published (through
// the onPublish callback, in order) only once their record is in the file; a group commit fsyncs
// at most groupCommitMs later; engines wait in drained() while too much waits for the disk.
//
// A full disk blocks the log instead of breaking it: the error (disk_full, naming the path) is kept
// in `blocked`, mutations are refused with it, what was appended stays queued (nothing acknowledged
// is lost), and a timer retries the write with backoff until space is free.
import type { EventType, EventData } from '../protocol/index.js';
import { AstraError, isAstraError } from '../protocol/index.js';
import { StoredEvent, type EncodedBody, type EventBody } from './event-body.js';
import type { EventTail } from './event-tail.js';
import { RecordKind, type SessionJournal } from '../journal/journal.js';
import type { RuntimeLogger } from './logger.js';
import { Level } from '../flow/index.js';

/** A full disk is retried this often at first, then less often, up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 8000;

/** The disk_full error for `file`, when err says the disk is full (the journal's own, or a raw ENOSPC/EDQUOT); else undefined. */
export function diskFullError(err: unknown, file: string): AstraError | undefined {
  if (isAstraError(err)) return err.reason === 'disk_full' ? err : undefined;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = (err as Error | undefined)?.message ?? '';
  if (code === 'ENOSPC' || code === 'EDQUOT' || /\bENOSPC\b/.test(message))
    return new AstraError('disk_full', `The disk holding ${file} is full; free some space there. Nothing acknowledged was lost: writing resumes by itself.`, { path: file });
  return undefined;
}

export interface EventLogOptions {
  sessionId: string;
  logger: RuntimeLogger;
  /** Encodes an event's body {seq, ts, type, data}; the result may be a view valid until the next call. */
  packEventBody: (body: EventBody) => EncodedBody;
  now: () => number;
  groupCommitMs: number;
  /** Each event, in seq order, once its record is in the journal file. */
  onPublish(e: StoredEvent): void;
  /** After each batch of onPublish calls. */
  onPublished(): void;
  /** The disk filled (err) or has room again (undefined). */
  onBlocked(err: AstraError | undefined): void;
}

/** Reused for every packEventBody call (nothing keeps it). */
const packArg: EventBody = { seq: 0, ts: 0, type: '', data: undefined };

export class EventLog {
  /** Highest seq assigned (maybe not yet written). */
  headSeq: number;
  /** Highest seq written to the journal and handed to onPublish: what anyone may see. */
  publishedSeq: number;
  /** Set while the disk is full (disk_full, naming the path). */
  blocked: AstraError | undefined;
  /** The ts given to the last appended event. */
  lastTs = 0;
  /** Appended events not yet published, and the journal offset each one's record ends at: published once the journal's size reaches it. */
  private unpublished: StoredEvent[] = [];
  private unpublishedEnds: number[] = [];
  /** The level of backlogBytes, for drained(below): engines wait there. */
  private readonly backlog = new Level(() => this.backlogBytes);
  private flushScheduled = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RETRY_FIRST_MS;
  private lastRetryError: string | undefined;
  private closed = false;
  private readonly flushBound = () => {
    this.flushScheduled = false;
    this.tryFlush();
  };

  constructor(
    readonly journal: SessionJournal,
    private readonly tail: EventTail,
    headSeq: number,
    private readonly opts: EventLogOptions,
  ) {
    this.headSeq = headSeq;
    this.publishedSeq = headSeq;
    journal.onWritten = (err) => {
      if (err) this.failed(err);
      this.publishWritten();
    };
  }

  /** Appends an event: seq assigned now, bytes queued for this tick's single write, published after it. */
  append<T extends EventType>(type: T, data: EventData<T>): StoredEvent {
    if (this.closed) throw new AstraError('shutting_down', 'the runtime is closed');
    const seq = this.headSeq + 1;
    const ts = Math.floor(this.opts.now());
    this.lastTs = ts;
    // One encoding serves the journal and every subscriber's wire frames (StoredEvent.body).
    packArg.seq = seq;
    packArg.ts = ts;
    packArg.type = type;
    packArg.data = data;
    const j = this.journal;
    const offset = j.nextOffset;
    const encoded = this.opts.packEventBody(packArg);
    if (Buffer.isBuffer(encoded)) j.append(RecordKind.event, encoded);
    else j.append(RecordKind.event, encoded[0], encoded[1]);
    packArg.data = undefined;
    this.headSeq = seq;
    const stored = StoredEvent.live(this.opts.sessionId, seq, j.lastBuf, j.lastStart, j.lastEnd, ts, type, data, j.lastExtra);
    this.tail.indexEvent(seq, offset);
    this.tail.push(seq, j.lastBuf, j.lastStart, j.lastEnd, j.lastExtra, false);
    this.unpublished.push(stored);
    this.unpublishedEnds.push(j.nextOffset);
    this.scheduleFlush();
    return stored;
  }

  appendInternal(kind: number, body: Buffer): void {
    this.journal.append(kind, body);
    this.scheduleFlush();
  }

  /**
   * Throws disk_full while the disk is full: a mutation is refused rather than acknowledged unwritten.
   * A blocked log first tries the write again: space freed since the last retry serves this request
   * at once, not only after the retry timer (up to RETRY_MAX_MS).
   */
  checkWritable(): void {
    if (this.blocked) this.retry();
    if (this.blocked) throw this.blocked;
  }

  get hasUnwritten(): boolean {
    return this.unpublished.length > 0 || this.journal.hasPending;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.blocked) return;
    this.flushScheduled = true;
    setImmediate(this.flushBound);
  }

  private tryFlush(): void {
    try {
      this.flush();
    } catch (e) {
      this.failed(e);
    }
  }

  /** A write failed: a full disk blocks the log (and is retried); anything else is logged. */
  private failed(e: unknown): void {
    const full = diskFullError(e, this.journal.file);
    if (full) return this.block(full);
    this.opts.logger.error({ sessionId: this.opts.sessionId, err: (e as Error).message }, 'journal write failed; events after this point are not durable');
  }

  private block(err: AstraError): void {
    if (this.closed) return;
    if (!this.blocked) {
      this.blocked = err;
      this.opts.logger.error({ sessionId: this.opts.sessionId, path: this.journal.file, err: err.message }, 'disk full: the session\'s writes are held until there is space again');
      this.opts.onBlocked(err);
    }
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retry();
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
  }

  private retry(): void {
    if (this.closed || !this.blocked) return;
    const j = this.journal;
    let ok: boolean;
    try {
      ok = j.retry();
    } catch (e) {
      ok = false;
      // Logged when it changes, not at every retry (8 s apart for as long as the disk stays full).
      const message = (e as Error).message;
      if (!diskFullError(e, j.file) && message !== this.lastRetryError) this.opts.logger.error({ sessionId: this.opts.sessionId, err: message }, 'journal retry failed; retrying while the disk is full');
      this.lastRetryError = message;
    }
    if (!ok || j.blocked) return this.block(this.blocked);
    this.blocked = undefined;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.retryMs = RETRY_FIRST_MS;
    this.lastRetryError = undefined;
    this.opts.logger.info({ sessionId: this.opts.sessionId, path: j.file }, 'disk has space again: the session\'s held writes are written');
    this.publishWritten();
    this.opts.onBlocked(undefined);
    this.scheduleFlush();
  }

  /** Writes queued records (large ones may complete later: see SessionJournal.flush), then publishes the events written so far. */
  flush(): void {
    if (!this.journal.hasPending && this.unpublished.length === 0) return;
    if (this.blocked) throw this.blocked;
    this.journal.flush();
    this.publishWritten();
  }

  /** Bytes appended but not yet in the journal file: queued, or in a direct write in flight. */
  get backlogBytes(): number {
    return this.journal.nextOffset - this.journal.size;
  }

  /** Resolves once backlogBytes is below `below` (or the session closes). */
  drained(below: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.backlog.wait(below);
  }

  /** Publishes, in order, the appended events whose records are in the journal file. */
  private publishWritten(): void {
    const size = this.journal.size;
    const ends = this.unpublishedEnds;
    let k = 0;
    while (k < ends.length && ends[k]! <= size) k++;
    if (k === 0) return;
    let events = this.unpublished;
    const all = k === events.length;
    if (all) {
      this.unpublished = [];
      this.unpublishedEnds = [];
    } else {
      this.unpublished = events.slice(k);
      this.unpublishedEnds = ends.slice(k);
      events = events.slice(0, k);
    }
    this.tail.published(events[0]!.seq, k, all);
    const onPublish = this.opts.onPublish;
    for (const e of events) {
      this.publishedSeq = e.seq;
      onPublish(e);
    }
    this.opts.onPublished();
    this.backlog.check();
    if (!this.syncTimer && !this.closed) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        this.journal.sync().catch((err: unknown) => this.failed(err));
      }, this.opts.groupCommitMs);
    }
  }

  /** Makes everything appended so far durable (write + fsync); throws disk_full while the disk is full. */
  async sync(): Promise<void> {
    try {
      this.flush();
      await this.journal.sync();
    } catch (e) {
      const full = diskFullError(e, this.journal.file);
      if (!full) throw e;
      this.block(full);
      throw full;
    }
    this.publishWritten();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    // A blocked journal's close would drop what it holds: one last try to write it.
    if (this.blocked && this.journal.retry()) this.blocked = undefined;
    this.closed = true;
    try {
      // journal.close writes and fsyncs what is queued, and closes the file whatever happens.
      await this.journal.close();
      this.publishWritten();
    } finally {
      this.backlog.release();
      this.backlog.check();
    }
  }
}
