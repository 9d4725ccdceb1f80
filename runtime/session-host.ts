// SessionHost: one loaded session — its state, its journal, its in-memory tail of events, its
// subscribers, and its running turn. The Runtime owns the map of hosts and the public API.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Packr, Unpackr } from 'msgpackr';
import type {
  ApprovalPolicy,
  EventData,
  EventType,
  FinalTurnStatus,
  OnControllerLost,
  Session,
  SessionEvent,
  SessionState,
  TurnStatus,
} from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';
import { writeFileAtomic } from '../durable/index.js';
import { RecordKind, SessionJournal, type ScannedRecord } from './journal.js';
import type { RuntimeLogger } from './logger.js';
import { killOrphanGroup } from './orphans.js';

// Journal bodies are private to the runtime, but plain msgpack keeps them readable by other tools.
const packr = new Packr({ useRecords: false, variableMapSize: true });
// int64AsType 'auto' (missing from msgpackr's typings): event bodies carry ts as a msgpack integer.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' } as unknown as ConstructorParameters<typeof Unpackr>[0]);
// Event bodies are written in the wire's own encoding (plain msgpack, undefined as nil, integers as
// integers) as the map {seq, ts, type, data}, so the daemon sends the journal's bytes as they are:
// a wire event is `{sessionId, ...}` followed by the body's four pairs (StoredEvent.body).
const eventPackr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
/** Past this size msgpackr's shared output buffer is swapped for a small one, so it is not kept alive. */
const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * An event as a session keeps it: its seq, its encoded body — the journal record's bytes, the map
 * {seq, ts, type, data} in the wire's encoding (first byte 0x84) — and the decoded event. Events read
 * back from the journal are decoded on first use only: the daemon forwards bodies as they are, so
 * catching a subscriber up from disk costs it no decoding.
 */
export class StoredEvent {
  // A live event keeps what it was made of and builds its object when someone asks: the daemon
  // never does, so the hot path allocates one object per event, not two.
  private liveTs = 0;
  private liveType: string | undefined = undefined;
  private liveData: unknown = undefined;
  // Views of the bytes, made when first asked for (the daemon asks only for the tail).
  private bodyView: Buffer | undefined = undefined;
  private tailView: Buffer | undefined = undefined;

  /**
   * The body is bytes [start, end) of buf, followed by all of `extra` when that is set (a large
   * output kept by reference rather than copied next to its head).
   */
  constructor(
    readonly sessionId: string,
    readonly seq: number,
    private readonly buf: Buffer,
    private readonly start: number,
    private readonly end: number,
    private decoded: SessionEvent | undefined,
    readonly extra: Buffer | undefined = undefined,
  ) {}

  static live(sessionId: string, seq: number, buf: Buffer, start: number, end: number, ts: number, type: string, data: unknown, extra: Buffer | undefined): StoredEvent {
    const e = new StoredEvent(sessionId, seq, buf, start, end, undefined, extra);
    e.liveTs = ts;
    e.liveType = type;
    e.liveData = data;
    return e;
  }

  /** The encoded body: the map {seq, ts, type, data} (one contiguous copy when the event has an extra part). */
  get body(): Buffer {
    return (this.bodyView ??= this.extra ? Buffer.concat([this.buf.subarray(this.start, this.end), this.extra]) : this.buf.subarray(this.start, this.end));
  }

  /**
   * The body without its map header (0x84): the four pairs, as they follow `sessionId` on the wire —
   * up to where `extra` (when set) continues it.
   */
  get tail(): Buffer {
    return (this.tailView ??= this.buf.subarray(this.start + 1, this.end));
  }

  get bodyLength(): number {
    return this.end - this.start + (this.extra ? this.extra.length : 0);
  }

  /** Bytes the event occupies in the journal (record header included). */
  get size(): number {
    return this.bodyLength + RECORD_OVERHEAD;
  }

  get event(): SessionEvent {
    if (this.decoded) return this.decoded;
    if (this.liveType !== undefined) {
      this.decoded = { sessionId: this.sessionId, seq: this.seq, ts: this.liveTs, type: this.liveType, data: this.liveData } as SessionEvent;
      this.liveData = undefined;
      return this.decoded;
    }
    const e = eventFromBody(this.sessionId, this.body);
    if (!e || e.seq !== this.seq) throw new AstraError('journal_corrupt', `session ${this.sessionId}: the journal record of event ${this.seq} cannot be decoded`);
    return (this.decoded = e);
  }
}

/** The seq of a map-format body without decoding it (its first pair is always seq); undefined otherwise. */
function peekSeq(body: Buffer): number | undefined {
  // 0x84 (map of 4), 0xa3 "seq", then an unsigned integer.
  if (body.length < 6 || body[0] !== 0x84 || body[1] !== 0xa3 || body[2] !== 0x73 || body[3] !== 0x65 || body[4] !== 0x71) return undefined;
  const t = body[5]!;
  if (t < 0x80) return t;
  if (t === 0xcc && body.length >= 7) return body[6];
  if (t === 0xcd && body.length >= 8) return body.readUInt16BE(6);
  if (t === 0xce && body.length >= 10) return body.readUInt32BE(6);
  if ((t === 0xcf || t === 0xd3) && body.length >= 14) {
    const v = Number(body.readBigUInt64BE(6));
    return Number.isSafeInteger(v) ? v : undefined;
  }
  return undefined;
}

/** Reused for every packEventBody call (nothing keeps it). */
const packArg: EventBody = { seq: 0, ts: 0, type: '', data: undefined };

/** Event bodies in plain MessagePack; the daemon passes the wire's packer instead (RuntimeOptions). */
export function defaultPackEventBody(body: EventBody): Buffer {
  const view = eventPackr.pack({ seq: body.seq, ts: body.ts, type: body.type, data: body.data });
  if (view.length >= LARGE_BODY_BYTES) eventPackr.useBuffer(Buffer.allocUnsafeSlow(64 * 1024));
  return view;
}

/** An encoded event body: one buffer, or [head, payload] whose concatenation is the body. */
export type EncodedBody = Buffer | readonly [Buffer, Uint8Array];

export interface EventBody {
  seq: number;
  ts: number;
  type: string;
  data: unknown;
}

/** An event from a journal record body (either format); undefined if it is not one. */
function eventFromBody(sessionId: string, body: Buffer): SessionEvent | undefined {
  const value: unknown = unpackr.unpack(body);
  let seq: unknown, ts: unknown, type: unknown, data: unknown;
  if (Array.isArray(value)) {
    // The first format: [seq, ts, type, data], packed without the wire's settings.
    if (value.length !== 4) return undefined;
    [seq, ts, type, data] = value;
  } else if (typeof value === 'object' && value !== null && body[0] === 0x84) {
    ({ seq, ts, type, data } = value as Record<string, unknown>);
  } else return undefined;
  if (typeof seq !== 'number' || typeof ts !== 'number' || typeof type !== 'string' || typeof data !== 'object' || data === null) return undefined;
  return { sessionId, seq, ts, type, data } as SessionEvent;
}

/** The wire view of a session from its meta (the daemon overlays `controller`). */
export function sessionFromMeta(m: SessionMeta, state: SessionState, headSeq: number, runningTurnId?: string): Session {
  const s: Session = {
    id: m.id,
    title: m.title,
    cwd: m.cwd,
    engine: m.engine,
    approvalPolicy: m.approvalPolicy,
    state,
    createdAt: m.createdAt,
    updatedAt: m.updatedAt,
    headSeq,
    epoch: m.epoch,
  };
  if (m.onControllerLost) s.onControllerLost = m.onControllerLost;
  if (runningTurnId !== undefined) s.runningTurnId = runningTurnId;
  return s;
}

export const META_FORMAT_VERSION = 1;
export const JOURNAL_FILE = 'journal.astra';
export const META_FILE = 'meta.json';

/** Small per-session summary kept beside the journal so start-up does not read journals. */
export interface SessionMeta {
  format: number;
  id: string;
  title: string;
  cwd: string;
  engine: string;
  approvalPolicy: ApprovalPolicy;
  onControllerLost?: OnControllerLost;
  archived: boolean;
  createdAt: number;
  updatedAt: number;
  headSeq: number;
  epoch: number;
  /** Journal size when this meta was written; a mismatch at start-up means "load the journal". */
  journalBytes: number;
  createKey?: string;
  createFingerprint?: string;
}

export interface IdempotencyEntry {
  fingerprint: string;
  state: 'in_progress' | 'done';
  result?: unknown;
  promise?: Promise<unknown>;
}

export interface SubscriptionSink {
  /**
   * Returning false refuses the event (the sink is full): the subscription pauses, and once
   * waitForCapacity resolves it is fed again from this event on, from memory or the journal, then
   * switched back to live without a gap. Nothing is queued per subscriber meanwhile.
   */
  onEvent?(e: SessionEvent): boolean | void;
  /**
   * Instead of onEvent (a sink has one of the two; same contract): the event as stored, with its
   * encoded body; an event read back from the journal is then never decoded unless the sink asks.
   */
  onStored?(e: StoredEvent): boolean | void;
  waitForCapacity?(): Promise<void>;
  /** Called once the backlog has been delivered; live events follow. Not called again after a pause. */
  onReplayed?(throughSeq: number): void;
  /** A published event a paused subscription did not get live (it will be replayed); `bytes` is its encoded size. */
  onSkipped?(seq: number, bytes: number): void;
  /** A paused subscription caught up and is live again (seq throughSeq was the last one fed). */
  onResumed?(throughSeq: number): void;
}

interface PendingApproval {
  approvalId: string;
  turnId: string;
  command: string;
  cwd: string;
  reason?: string;
  settle?: { resolve(d: 'approve' | 'deny'): void; reject(e: Error): void };
}

export interface RunningTurn {
  turnId: string;
  status: 'running' | 'cancelling';
  abort: AbortController;
  ended: boolean;
  /** Replayed from the journal after a crash: no engine is running it. */
  orphan: boolean;
}

export interface HostOptions {
  logger: RuntimeLogger;
  /** Encodes an event's body {seq, ts, type, data} (it is given the whole event); the result may be a view valid until the next call. */
  packEventBody: (body: EventBody) => EncodedBody;
  now: () => number;
  groupCommitMs: number;
  cacheBytes: number;
  /** Shared by all sessions: the bound on their catch-up surplus and how much of it is in use (RuntimeOptions.catchUpCacheBytes). */
  catchUp: { limit: number; used: number };
  /** Large records are written to the journal with direct I/O where the file system takes it (RuntimeOptions.journalDirectIO). */
  directIO: boolean;
  onPublish(e: StoredEvent): void;
}

/** The sparse index gets an entry every INDEX_EVERY events or INDEX_BYTES of journal, whichever comes first, so a seek reads at most that much before the event it wants (large output included). */
const INDEX_EVERY = 64;
const INDEX_BYTES = 256 * 1024;
/** A subscriber waiting for capacity this long holds no events in the catch-up cache (see waitForCapacity). */
const CATCHUP_STALL_MS = 200;
const SUBSCRIBE_PAGE_EVENTS = 2000;
const SUBSCRIBE_PAGE_BYTES = 1024 * 1024;
/** A journal record's bytes beyond its body: length, checksum, kind. */
const RECORD_OVERHEAD = 9;
/** Envelope overhead beyond the journal record when an event goes on the wire (sessionId, keys). */
const WIRE_OVERHEAD = 64;

class Subscription {
  lastSeq: number;
  live = false;
  closed = false;
  /** Refused a live event: fed from the backlog until it catches up. */
  paused = false;
  /** Waiting for capacity for longer than CATCHUP_STALL_MS: it holds nothing in the catch-up cache. */
  stalled = false;
  constructor(
    readonly sink: SubscriptionSink,
    sinceSeq: number,
  ) {
    this.lastSeq = sinceSeq;
  }
}

export class SessionHost {
  readonly id: string;
  readonly dir: string;
  meta: SessionMeta;
  journal!: SessionJournal;
  /** Highest seq assigned (maybe not yet written). */
  headSeq = 0;
  /** Highest seq written to the journal and handed to listeners: what anyone may see. */
  publishedSeq = 0;
  running: RunningTurn | undefined;
  readonly turns = new Map<string, FinalTurnStatus>();
  lastTurnId: string | undefined;
  readonly idempotency = new Map<string, IdempotencyEntry>();
  readonly approvals = new Map<string, PendingApproval>();
  private readonly subs = new Set<Subscription>();
  /** Appended events not yet published, and the journal offset each one's record ends at: published once the journal's size reaches it. */
  private unpublished: StoredEvent[] = [];
  private unpublishedEnds: number[] = [];
  /** Engines waiting in drained(): each resolves once the backlog is below its limit. */
  private drainWaiters: { limit: number; resolve: () => void }[] = [];
  private flushScheduled = false;
  private syncTimer: NodeJS.Timeout | undefined;
  // The in-memory tail of recent events, as references into the journal's own buffers and no
  // object per event (objects that live this long would each be copied by the garbage collector):
  // entry i (from cacheStart) is event cacheFirstSeq + (i - cacheStart), its body bytes
  // [cacheStarts[i], cacheEnds[i]) of cacheBufs[i], followed by cacheExtras[i] when set (StoredEvent.extra).
  private cacheBufs: (Buffer | undefined)[] = [];
  private cacheStarts: number[] = [];
  private cacheEnds: number[] = [];
  private cacheExtras: (Buffer | undefined)[] = [];
  private cacheStart = 0;
  private cacheFirstSeq = 1;
  private cacheBytes = 0;
  /** The part of cacheBytes that is not published yet (never evicted, not counted against any bound: `unpublished` holds it anyway). */
  private unpublishedCacheBytes = 0;
  /** This session's share of the catch-up surplus (cacheBytes beyond the ordinary tail), as counted in opts.catchUp.used. */
  private catchUpBytes = 0;
  /** Sparse seq → file offset index (see INDEX_EVERY) for reads older than the cache. */
  private index: { seq: number; offset: number }[] = [];
  private closed = false;
  /** Commands started by the running turn and not yet completed (replay only): pid → start ts. */
  private openCommands = new Map<number, number>();

  constructor(
    dir: string,
    meta: SessionMeta,
    private readonly opts: HostOptions,
  ) {
    this.id = meta.id;
    this.dir = dir;
    this.meta = meta;
  }

  get journalFile(): string {
    return path.join(this.dir, JOURNAL_FILE);
  }

  // ---- creation and loading ----

  static async create(dir: string, meta: SessionMeta, opts: HostOptions, settings: object, createIdem?: { key: string; fingerprint: string }): Promise<SessionHost> {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const host = new SessionHost(dir, meta, opts);
    host.journal = await SessionJournal.create(host.journalFile, { directIO: opts.directIO });
    host.watchJournal();
    host.append('session.created', { title: meta.title, cwd: meta.cwd, engine: meta.engine, approvalPolicy: meta.approvalPolicy });
    host.journal.append(RecordKind.settings, packr.pack(settings));
    if (createIdem)
      host.journal.append(RecordKind.idempotency, packr.pack({ key: createIdem.key, fingerprint: createIdem.fingerprint, result: { sessionId: meta.id } }));
    await host.sync();
    host.writeMeta(true);
    return host;
  }

  /** Reads the whole journal once to rebuild state; a turn left running by a crash becomes 'interrupted'. */
  static async load(dir: string, id: string, fallbackMeta: SessionMeta | undefined, opts: HostOptions): Promise<SessionHost> {
    const meta: SessionMeta = fallbackMeta
      ? { ...fallbackMeta }
      : { format: META_FORMAT_VERSION, id, title: '', cwd: '', engine: 'shell', approvalPolicy: 'ask', archived: false, createdAt: 0, updatedAt: 0, headSeq: 0, epoch: 0, journalBytes: 0 };
    const host = new SessionHost(dir, meta, opts);
    host.journal = await SessionJournal.open(host.journalFile, { logger: opts.logger, directIO: opts.directIO, onRecord: (rec) => host.replayRecord(rec) });
    host.watchJournal();
    host.publishedSeq = host.headSeq;
    host.meta.headSeq = host.headSeq;
    if (host.running) {
      const turnId = host.running.turnId;
      opts.logger.warn({ sessionId: id, turnId }, 'turn was running when the daemon stopped; marking it interrupted');
      for (const a of [...host.approvals.values()]) {
        host.approvals.delete(a.approvalId);
        host.append('approval.resolved', { turnId: a.turnId, approvalId: a.approvalId, decision: 'deny', reason: 'interrupted: the daemon restarted' });
      }
      for (const [pid, ts] of host.openCommands) {
        const outcome = killOrphanGroup(pid, ts);
        opts.logger.warn({ sessionId: id, turnId, pid, outcome }, 'command of the interrupted turn: process group handled');
      }
      host.finishTurnState(turnId, 'interrupted');
      host.append('turn.completed', { turnId, status: 'interrupted', error: 'the daemon stopped while this turn was running' });
      await host.sync();
    }
    return host;
  }

  private replayRecord(rec: ScannedRecord): boolean {
    let value: unknown;
    if (rec.kind === RecordKind.event) {
      let event: SessionEvent | undefined;
      try {
        event = eventFromBody(this.id, rec.body);
      } catch {
        return false;
      }
      if (!event || event.seq !== this.headSeq + 1) return false;
      const seq = event.seq;
      this.headSeq = seq;
      this.indexEvent(seq, rec.offset);
      const body = this.mapBody(event, rec.body);
      this.cachePush(seq, body, 0, body.length, undefined, true);
      this.applyEvent(event);
      return true;
    }
    try {
      value = unpackr.unpack(rec.body);
    } catch {
      return false;
    }
    if (rec.kind === RecordKind.idempotency) {
      const r = value as { key?: unknown; fingerprint?: unknown; result?: unknown };
      if (typeof r?.key !== 'string' || typeof r.fingerprint !== 'string') return false;
      this.idempotency.set(r.key, { fingerprint: r.fingerprint, state: 'done', result: r.result });
      if (typeof (r.result as { sessionId?: unknown })?.sessionId === 'string') {
        this.meta.createKey = r.key;
        this.meta.createFingerprint = r.fingerprint;
      }
    } else if (rec.kind === RecordKind.settings) {
      const s = value as { onControllerLost?: unknown };
      if (s?.onControllerLost === 'cancel' || s?.onControllerLost === 'continue') this.meta.onControllerLost = s.onControllerLost;
    }
    // Unknown kinds inside a supported format are skipped: they carry nothing this build needs.
    return true;
  }

  /** Folds an event into the session's state (used both live and on replay). */
  private applyEvent(e: SessionEvent): void {
    const m = this.meta;
    m.updatedAt = Math.max(m.updatedAt, e.ts);
    switch (e.type) {
      case 'session.created':
        m.title = e.data.title;
        m.cwd = e.data.cwd;
        m.engine = e.data.engine;
        m.approvalPolicy = e.data.approvalPolicy;
        m.createdAt = e.ts;
        break;
      case 'session.updated':
        if (e.data.title !== undefined && e.data.title !== null) m.title = e.data.title;
        if (e.data.state === 'archived') m.archived = true;
        break;
      case 'lease.changed':
        m.epoch = Math.max(m.epoch, e.data.epoch);
        break;
      case 'turn.started':
        this.lastTurnId = e.data.turnId;
        if (!this.running || this.running.turnId !== e.data.turnId)
          this.running = { turnId: e.data.turnId, status: 'running', abort: new AbortController(), ended: false, orphan: true };
        break;
      case 'approval.requested':
        if (!this.approvals.has(e.data.approvalId))
          this.approvals.set(e.data.approvalId, { approvalId: e.data.approvalId, turnId: e.data.turnId, command: e.data.command, cwd: e.data.cwd, ...(e.data.reason !== undefined && e.data.reason !== null ? { reason: e.data.reason } : {}) });
        break;
      case 'approval.resolved':
        this.approvals.delete(e.data.approvalId);
        break;
      case 'turn.completed':
        this.finishTurnState(e.data.turnId, e.data.status);
        this.openCommands.clear();
        break;
      case 'command.started':
        if (e.data.pid !== undefined && e.data.pid !== null) this.openCommands.set(e.data.pid, e.ts);
        break;
      case 'command.completed':
        this.openCommands.clear();
        break;
      default:
        break;
    }
  }

  finishTurnState(turnId: string, status: FinalTurnStatus): void {
    this.turns.set(turnId, status);
    if (this.running?.turnId === turnId) {
      this.running.ended = true;
      this.running = undefined;
    }
  }

  // ---- appending and publishing ----

  /** Appends an event: seq assigned now, bytes queued for this tick's single write, published after it. */
  append<T extends EventType>(type: T, data: EventData<T>): SessionEvent<T> {
    return this.appendStored(type, data).event as SessionEvent<T>;
  }

  /** append, without building the event object (engines' output: nobody in the daemon needs it). */
  appendStored<T extends EventType>(type: T, data: EventData<T>): StoredEvent {
    if (this.closed) throw new AstraError('shutting_down', 'the runtime is closed');
    const seq = this.headSeq + 1;
    const ts = Math.floor(this.opts.now());
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
    const stored = StoredEvent.live(this.id, seq, j.lastBuf, j.lastStart, j.lastEnd, ts, type, data, j.lastExtra);
    this.indexEvent(seq, offset);
    this.cachePush(seq, j.lastBuf, j.lastStart, j.lastEnd, j.lastExtra, false);
    // Streamed output changes nothing but updatedAt (no event object for it); turn.started/completed
    // are folded in by the turn's own code; everything else goes through applyEvent.
    if (type === 'command.output' || type === 'message.delta' || type === 'turn.started' || type === 'turn.completed')
      this.meta.updatedAt = Math.max(this.meta.updatedAt, ts);
    else this.applyEvent(stored.event);
    this.unpublished.push(stored);
    this.unpublishedEnds.push(j.nextOffset);
    this.scheduleFlush();
    return stored;
  }

  /** A record body in the map format: the record's own, or (from the first, array format) encoded anew. */
  private mapBody(event: SessionEvent, recordBody: Buffer): Buffer {
    if (recordBody[0] === 0x84) return recordBody;
    const encoded = this.opts.packEventBody({ seq: event.seq, ts: event.ts, type: event.type, data: event.data });
    return Buffer.isBuffer(encoded) ? Buffer.from(encoded) : Buffer.concat([encoded[0], encoded[1]]);
  }

  appendInternal(kind: number, value: unknown): void {
    this.journal.append(kind, packr.pack(value));
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      try {
        this.flush();
      } catch (e) {
        this.opts.logger.error({ sessionId: this.id, err: (e as Error).message }, 'journal write failed; events after this point are not durable');
      }
    });
  }

  /** The journal finished an asynchronous (direct) write: publish what it made durable. */
  private watchJournal(): void {
    this.journal.onWritten = (err) => {
      if (err) this.opts.logger.error({ sessionId: this.id, err: err.message }, 'journal write failed; events after this point are not durable');
      this.publishWritten();
    };
  }

  /** Writes queued records (large ones may complete later: see SessionJournal.flush), then publishes the events written so far. */
  flush(): void {
    if (!this.journal.hasPending && this.unpublished.length === 0) return;
    this.journal.flush();
    this.publishWritten();
  }

  /** Bytes appended but not yet in the journal file: queued, or in a direct write in flight. */
  get backlogBytes(): number {
    return this.journal.nextOffset - this.journal.size;
  }

  /** Resolves once backlogBytes is below `limit` (or the session closes). */
  drained(limit: number): Promise<void> {
    if (this.backlogBytes < limit || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push({ limit, resolve }));
  }

  private wakeDrainWaiters(all: boolean): void {
    if (this.drainWaiters.length === 0) return;
    const backlog = this.backlogBytes;
    const waiting = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiting) {
      if (all || backlog < w.limit) w.resolve();
      else this.drainWaiters.push(w);
    }
  }

  /** Publishes, in order, the appended events whose records are in the journal file. */
  private publishWritten(): void {
    const size = this.journal.size;
    const ends = this.unpublishedEnds;
    let k = 0;
    while (k < ends.length && ends[k]! <= size) k++;
    if (k === 0) return;
    let events = this.unpublished;
    // Published now: their cache entries count as the tail (or catch-up surplus) from here on.
    if (k === events.length) {
      this.unpublished = [];
      this.unpublishedEnds = [];
      this.unpublishedCacheBytes = 0;
    } else {
      this.unpublished = events.slice(k);
      this.unpublishedEnds = ends.slice(k);
      events = events.slice(0, k);
      for (let i = this.cacheStart + (this.publishedSeq + 1 - this.cacheFirstSeq), n = 0; n < k; i++, n++) this.unpublishedCacheBytes -= this.cachedSize(i);
    }
    for (const e of events) {
      this.publishedSeq = e.seq;
      this.opts.onPublish(e);
      for (const s of this.subs) this.offer(s, e);
    }
    this.trimCache();
    this.wakeDrainWaiters(false);
    if (!this.syncTimer && !this.closed) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        this.journal.sync().catch((err: Error) => this.opts.logger.error({ sessionId: this.id, err: err.message }, 'journal fsync failed'));
      }, this.opts.groupCommitMs);
    }
  }

  /** Makes everything appended so far durable (write + fsync). */
  async sync(): Promise<void> {
    this.flush();
    await this.journal.sync();
    this.publishWritten();
  }

  // ---- in-memory tail ----

  private indexEvent(seq: number, offset: number): void {
    const last = this.index[this.index.length - 1];
    if (!last || seq - last.seq >= INDEX_EVERY || offset - last.offset >= INDEX_BYTES) this.index.push({ seq, offset });
  }

  /** Remembers event `seq` (the next one: seqs are consecutive) as bytes [start, end) of buf, then extra. */
  private cachePush(seq: number, buf: Buffer, start: number, end: number, extra: Buffer | undefined, published: boolean): void {
    if (this.cacheBufs.length === this.cacheStart) this.cacheFirstSeq = seq;
    this.cacheBufs.push(buf);
    this.cacheStarts.push(start);
    this.cacheEnds.push(end);
    this.cacheExtras.push(extra);
    const size = this.cachedSize(this.cacheBufs.length - 1);
    this.cacheBytes += size;
    if (!published) this.unpublishedCacheBytes += size;
    this.trimCache();
  }

  /**
   * Evicts the oldest entries down to cacheBytes — except those a subscriber that is behind still
   * needs, while all sessions' surplus fits in the shared catch-up bound, and those not published
   * yet (every subscriber still needs them, and `unpublished` holds them anyway). A no-op within
   * cacheBytes.
   */
  private trimCache(): void {
    let published = this.cacheBytes - this.unpublishedCacheBytes;
    if (published <= this.opts.cacheBytes) return;
    let needed = this.publishedSeq + 1;
    for (const sub of this.subs) if (!sub.live && !sub.closed && !sub.stalled && sub.lastSeq + 1 < needed) needed = sub.lastSeq + 1;
    const base = this.opts.cacheBytes;
    const shared = this.opts.catchUp;
    const others = shared.used - this.catchUpBytes;
    while (published > base && this.cacheBufs.length - this.cacheStart > 1) {
      if (this.cacheFirstSeq >= needed && others + published - base <= shared.limit) break;
      const i = this.cacheStart;
      const size = this.cachedSize(i);
      this.cacheBytes -= size;
      published -= size;
      this.cacheBufs[i] = undefined;
      this.cacheExtras[i] = undefined;
      this.cacheStart++;
      this.cacheFirstSeq++;
    }
    if (this.cacheStart > 4096 && this.cacheStart * 2 > this.cacheBufs.length) {
      this.cacheBufs = this.cacheBufs.slice(this.cacheStart);
      this.cacheStarts = this.cacheStarts.slice(this.cacheStart);
      this.cacheEnds = this.cacheEnds.slice(this.cacheStart);
      this.cacheExtras = this.cacheExtras.slice(this.cacheStart);
      this.cacheStart = 0;
    }
    this.catchUpBytes = Math.max(0, published - base);
    shared.used = others + this.catchUpBytes;
  }

  /** Bytes of recent events held in memory (the in-memory tail, with what behind subscribers still need). */
  get cachedBytes(): number {
    return this.cacheBytes;
  }

  /** Journal bytes of cache entry i (record header included). */
  private cachedSize(i: number): number {
    const extra = this.cacheExtras[i];
    return this.cacheEnds[i]! - this.cacheStarts[i]! + (extra ? extra.length : 0) + RECORD_OVERHEAD;
  }

  /**
   * Published events with seq > afterSeq, at most `limit` of them and about `maxBytes` of encoded
   * size (always at least one). From memory when the cache reaches back far enough, else the journal.
   */
  async readPublished(afterSeq: number, limit: number, maxBytes: number): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    let bytes = 0;
    const end = this.publishedSeq;
    if (afterSeq >= end || limit <= 0) return out;
    if (this.cacheBufs.length > this.cacheStart && afterSeq + 1 >= this.cacheFirstSeq) {
      let i = this.cacheStart + (afterSeq + 1 - this.cacheFirstSeq);
      let seq = afterSeq + 1;
      while (i < this.cacheBufs.length && out.length < limit && seq <= end) {
        const size = this.cachedSize(i);
        if (out.length > 0 && bytes + size + WIRE_OVERHEAD > maxBytes) break;
        out.push(new StoredEvent(this.id, seq, this.cacheBufs[i]!, this.cacheStarts[i]!, this.cacheEnds[i]!, undefined, this.cacheExtras[i]));
        bytes += size + WIRE_OVERHEAD;
        i++;
        seq++;
      }
      return out;
    }
    // Find the last index entry at or before afterSeq + 1.
    let lo = 0;
    let hi = this.index.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.index[mid]!.seq <= afterSeq + 1) lo = mid;
      else hi = mid - 1;
    }
    let offset = this.index[lo]!.offset;
    const minWindow = Math.max(maxBytes, 64 * 1024);
    // A large record has index entries on both sides (INDEX_BYTES): the first read takes it whole.
    let window = Math.max(minWindow, (this.index[lo + 1]?.offset ?? offset) - offset);
    for (;;) {
      const { records, nextOffset } = await this.journal.readRecords(offset, window);
      window = minWindow;
      if (records.length === 0) return out;
      for (const rec of records) {
        if (rec.kind !== RecordKind.event) continue;
        const stored = this.storedFromRecord(rec);
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

  /** An event record read back from the journal: only its seq is read; the event is decoded on demand. */
  private storedFromRecord(rec: ScannedRecord): StoredEvent {
    const seq = peekSeq(rec.body);
    if (seq !== undefined) return new StoredEvent(this.id, seq, rec.body, 0, rec.body.length, undefined);
    const event = eventFromBody(this.id, rec.body);
    if (!event) throw new AstraError('journal_corrupt', `${this.journal.file}: unreadable event record at offset ${rec.offset}`, { file: this.journal.file });
    const body = this.mapBody(event, rec.body);
    return new StoredEvent(this.id, event.seq, body, 0, body.length, event);
  }

  // ---- subscriptions ----

  /**
   * Registers first, then replays asynchronously (starting on a later tick, after the caller has its
   * answer): backlog pages, then live. A subscriber is switched to live only at a moment when it has
   * seen everything published, so the seam has no gap and no duplicate, and nothing is queued per
   * subscriber while it replays.
   */
  subscribe(sinceSeq: number, sink: SubscriptionSink): { headSeq: number; unsubscribe(): void } {
    if (!sink.onEvent === !sink.onStored) throw new TypeError('a subscription sink has exactly one of onEvent and onStored');
    const sub = new Subscription(sink, Math.max(0, Math.min(sinceSeq, this.publishedSeq)));
    this.subs.add(sub);
    const headSeq = this.publishedSeq;
    setImmediate(() => this.startReplay(sub, true, false));
    return {
      headSeq,
      unsubscribe: () => {
        sub.closed = true;
        this.subs.delete(sub);
        this.trimCache();
      },
    };
  }

  private startReplay(sub: Subscription, announce: boolean, waitFirst: boolean): void {
    this.replay(sub, announce, waitFirst).catch((err: Error) => {
      if (this.closed) return; // the runtime closed under a replay: nothing to report
      this.opts.logger.error({ sessionId: this.id, err: err.message }, 'subscription replay failed; subscriber dropped');
      sub.closed = true;
      this.subs.delete(sub);
    });
  }

  /**
   * Feeds the backlog page by page, pausing for capacity, then switches to live (announcing it
   * once). The page after the current one is read while the sink drains, so a subscriber catching
   * up from the journal does not wait for the disk between pages.
   */
  private async replay(sub: Subscription, announce: boolean, waitFirst: boolean): Promise<void> {
    if (waitFirst) await this.waitForCapacity(sub);
    let page: StoredEvent[] = [];
    let at = 0;
    let ahead: Promise<StoredEvent[]> | undefined;
    const readPage = (afterSeq: number): Promise<StoredEvent[]> => this.readPublished(afterSeq, SUBSCRIBE_PAGE_EVENTS, SUBSCRIBE_PAGE_BYTES);
    /** Skips what the subscriber has; true when page[at] is the very next event it needs. */
    const positioned = (): boolean => {
      while (at < page.length && page[at]!.seq <= sub.lastSeq) at++;
      return at < page.length && page[at]!.seq === sub.lastSeq + 1;
    };
    for (;;) {
      if (sub.closed || this.closed) return;
      if (sub.lastSeq >= this.publishedSeq) {
        sub.live = true;
        sub.paused = false;
        // What was kept in memory for it may go now.
        this.trimCache();
        if (announce) sub.sink.onReplayed?.(sub.lastSeq);
        else sub.sink.onResumed?.(sub.lastSeq);
        return;
      }
      if (!positioned()) {
        const next = ahead;
        ahead = undefined;
        page = next ? await next : [];
        at = 0;
        if (!positioned()) {
          page = await readPage(sub.lastSeq);
          at = 0;
        }
        if (sub.closed || this.closed) return;
      }
      while (at < page.length && page[at]!.seq === sub.lastSeq + 1 && this.deliver(sub, page[at]!)) at++;
      if (sub.closed) return;
      if (!ahead && page.length > 0 && page[page.length - 1]!.seq < this.publishedSeq) {
        ahead = readPage(page[page.length - 1]!.seq);
        // Awaited later (or dropped with the subscription): a failure surfaces there, not as unhandled.
        ahead.catch(() => {});
      }
      await this.waitForCapacity(sub);
    }
  }

  /**
   * Waits until the sink can take more. One that takes nothing for CATCHUP_STALL_MS (a stopped or
   * hung reader) stops holding events in the catch-up cache until it moves again.
   */
  private async waitForCapacity(sub: Subscription): Promise<void> {
    if (!sub.sink.waitForCapacity) return;
    const timer = setTimeout(() => {
      sub.stalled = true;
      this.trimCache();
    }, CATCHUP_STALL_MS);
    timer.unref();
    try {
      await sub.sink.waitForCapacity();
    } finally {
      clearTimeout(timer);
      sub.stalled = false;
    }
  }

  private offer(sub: Subscription, e: StoredEvent): void {
    if (sub.closed) return;
    if (!sub.live) {
      if (sub.paused && sub.sink.onSkipped) sub.sink.onSkipped(e.seq, e.bodyLength);
      return;
    }
    if (e.seq !== sub.lastSeq + 1) return;
    if (this.deliver(sub, e) || sub.closed) return;
    sub.live = false;
    sub.paused = true;
    this.startReplay(sub, false, true);
  }

  /** True when the sink took the event (lastSeq advances); false when it refused it or threw. */
  private deliver(sub: Subscription, e: StoredEvent): boolean {
    try {
      const sink = sub.sink;
      if ((sink.onStored ? sink.onStored(e) : sink.onEvent!(e.event)) === false) return false;
    } catch (err) {
      this.opts.logger.error({ sessionId: this.id, err: (err as Error).message }, 'subscriber threw; unsubscribing it');
      sub.closed = true;
      this.subs.delete(sub);
      return false;
    }
    sub.lastSeq = e.seq;
    return true;
  }

  // ---- views and persistence of the small files ----

  /** Someone depends on this host staying open: a subscriber, a turn, an approval, unwritten events. */
  get inUse(): boolean {
    return this.subs.size > 0 || this.running !== undefined || this.approvals.size > 0 || this.unpublished.length > 0 || this.journal.hasPending;
  }

  get state(): SessionState {
    if (this.meta.archived) return 'archived';
    return this.running ? 'running' : 'idle';
  }

  toSession(): Session {
    return sessionFromMeta(this.meta, this.state, this.publishedSeq, this.running?.turnId);
  }

  writeMeta(durable: boolean): void {
    this.meta.headSeq = this.publishedSeq;
    this.meta.journalBytes = this.journal.size;
    writeFileAtomic(path.join(this.dir, META_FILE), JSON.stringify(this.meta), { durable });
  }

  turnStatus(turnId: string): TurnStatus | undefined {
    if (this.running?.turnId === turnId) return this.running.status;
    return this.turns.get(turnId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.flush();
    this.closed = true;
    for (const s of this.subs) s.closed = true;
    this.subs.clear();
    try {
      await this.journal.close();
      this.publishWritten();
    } finally {
      this.wakeDrainWaiters(true);
      // After the last publish (which trims the cache): nothing of this session's share may stay counted.
      this.opts.catchUp.used -= this.catchUpBytes;
      this.catchUpBytes = 0;
    }
    this.writeMeta(true);
  }
}
