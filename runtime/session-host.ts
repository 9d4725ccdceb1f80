// SessionHost: one loaded session, composed of its rooms — its state (session-state.ts, folded
// from every event), its append path (event-log.ts), its in-memory tail (event-tail.ts), its
// subscribers (subscription-feed.ts) and the running command's screen (running-screen.ts, fed here as
// output is appended). The Runtime owns the map of hosts and the public API. Reading the journal at
// load is journal-replay.ts; reading published events back, published-read.ts; ending a turn a stop
// interrupted, interrupted-turn.ts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeDirs } from '../durable/index.js';
import type { EventData, EventType, Session, SessionEvent, SessionState as SessionStatus } from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';
import type { Engine } from './engine.js';
import { packInternal, type EncodedBody, type EventBody, type StoredEvent } from './event-body.js';
import { EventLog } from './event-log.js';
import { EventTail, type CatchUpBudget } from './event-tail.js';
import { endInterruptedTurn } from './interrupted-turn.js';
import { RecordKind, SessionJournal, type JournalOpenOptions } from '../journal/journal.js';
import { JournalReplay } from './journal-replay.js';
import type { RuntimeLogger } from './logger.js';
import { readPublished } from './published-read.js';
import { JOURNAL_FILE, blankMeta, sessionFromMeta, writeMeta, type SessionMeta } from './session-meta.js';
import { RunningScreen, type ScreenCapture } from './running-screen.js';
import { SessionState } from './session-state.js';
import { StreamedText } from './streamed-text.js';
import { maskEvent } from './secrets.js';
import { SubscriptionFeed, type FeedNotice, type FeedSource, type SubscribeOptions, type SubscriptionHandle, type SubscriptionSink } from './feed/subscription-feed.js';

export interface HostOptions {
  logger: RuntimeLogger;
  /** Encodes an event's body {seq, ts, type, data} (it is given the whole event); the result may be a view valid until the next call. */
  packEventBody: (body: EventBody) => EncodedBody;
  now: () => number;
  groupCommitMs: number;
  cacheBytes: number;
  catchUp: CatchUpBudget;
  /** Large records are written to the journal with direct I/O where the file system takes it (RuntimeOptions.journalDirectIO). */
  directIO: boolean;
  /** Keep the screen of a command running in a pseudo-terminal (RuntimeOptions.commandScreens). */
  commandScreens: boolean | 'inline';
  /** The engine registered under a name (undefined for one this runtime does not have). */
  engineOf(name: string): Engine | undefined;
  onPublish(e: StoredEvent): void;
  /** The session's disk filled (err) or has room again (undefined). */
  onBlocked(host: SessionHost, err: AstraError | undefined): void;
}

export class SessionHost implements FeedSource {
  readonly id: string;
  readonly state: SessionState;
  readonly logger: RuntimeLogger;
  private log!: EventLog;
  private readonly tail: EventTail;
  private readonly feeds = new Set<SubscriptionFeed>();
  /** The running command's screen (running-screen.ts is its one owner; the host feeds it as it appends; Turns resizes it). */
  readonly screen: RunningScreen;
  /** Whether a message.completed's text is what its turn streamed (marked on its StoredEvent for the daemon's textFromDeltas). */
  private readonly streamed = new StreamedText();
  /** The controller's terminal size (turn/start, command/resize), which commands start at; not journaled. */
  private terminal = { cols: 80, rows: 24 };
  private closed = false;

  private constructor(
    readonly dir: string,
    meta: SessionMeta,
    private readonly opts: HostOptions,
  ) {
    this.id = meta.id;
    this.logger = opts.logger;
    this.state = new SessionState(meta, opts.engineOf);
    this.tail = new EventTail(meta.id, opts.cacheBytes, opts.catchUp, () => this.neededSeq());
    this.screen = new RunningScreen(meta.id, opts.logger, opts.commandScreens, () => [...this.feeds].some((f) => f.screenSubscriber && !f.closed));
  }

  private attach(journal: SessionJournal, headSeq: number): void {
    this.log = new EventLog(journal, this.tail, headSeq, {
      sessionId: this.id,
      logger: this.opts.logger,
      packEventBody: this.opts.packEventBody,
      now: this.opts.now,
      groupCommitMs: this.opts.groupCommitMs,
      onPublish: (e) => {
        this.opts.onPublish(e);
        for (const f of this.feeds) f.offer(e);
      },
      onPublished: () => this.tail.trim(),
      onBlocked: (err) => {
        const n: FeedNotice = err
          ? { sessionId: this.id, reason: 'disk_full', message: err.message, path: this.journalFile }
          : { sessionId: this.id, reason: 'disk_ok', message: 'The disk has space again; the session\'s events are written and published.', path: this.journalFile };
        for (const f of this.feeds) f.notice(n);
        this.opts.onBlocked(this, err);
      },
    });
  }

  get meta(): SessionMeta {
    return this.state.meta;
  }

  get journalFile(): string {
    return path.join(this.dir, JOURNAL_FILE);
  }

  get publishedSeq(): number {
    return this.log.publishedSeq;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Set while the session's disk is full (disk_full, naming the path). */
  get blocked(): AstraError | undefined {
    return this.log.blocked;
  }

  // ---- creation and loading ----

  /** Creates the session's directory and journal; on failure (a full disk) removes what it made. */
  static async create(dir: string, meta: SessionMeta, opts: HostOptions, settings: object, createIdem?: { key: string; fingerprint: string }): Promise<SessionHost> {
    makeDirs(dir);
    const host = new SessionHost(dir, meta, opts);
    try {
      host.attach(await SessionJournal.create(host.journalFile, { directIO: opts.directIO }), 0);
      host.append('session.created', { title: meta.title, cwd: meta.cwd, engine: meta.engine, approvalPolicy: meta.approvalPolicy });
      host.appendInternal(RecordKind.settings, settings);
      if (createIdem) host.appendInternal(RecordKind.idempotency, { key: createIdem.key, fingerprint: createIdem.fingerprint, result: { sessionId: meta.id } });
      await host.sync();
      host.writeMeta(true);
    } catch (e) {
      await host.close(false).catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return host;
  }

  /**
   * Reads the whole journal once to rebuild state; a turn left running by a crash becomes
   * 'interrupted'. Seqs only grow: a range lost to damage (a gap in the journal, or a tail the meta
   * remembers and the journal no longer has) is reported once, and new events come after it.
   */
  static async load(dir: string, id: string, fallbackMeta: SessionMeta | undefined, opts: HostOptions): Promise<SessionHost> {
    const host = new SessionHost(dir, fallbackMeta ? { ...fallbackMeta } : blankMeta(id), opts);
    const replay = new JournalReplay(id, host.tail, host.state, opts.packEventBody);
    const openOpts: JournalOpenOptions = {
      logger: opts.logger,
      directIO: opts.directIO,
      onRecord: (rec) => replay.record(rec),
      // The journal resyncs past damage and says where; the lost seqs show as a gap.
      onDamage: (d) => opts.logger.error({ sessionId: id, file: host.journalFile, offset: d.offset, bytes: d.bytes, reason: d.reason, afterSeq: replay.headSeq }, `session ${id}: its journal is damaged after event ${replay.headSeq}; the records after the damage are kept`),
    };
    const journal = await SessionJournal.open(host.journalFile, openOpts);
    const remembered = fallbackMeta?.headSeq ?? 0;
    replay.rememberedHead(remembered);
    host.attach(journal, Math.max(replay.headSeq, remembered));
    host.meta.headSeq = host.log.headSeq;
    for (const { from, to } of replay.lost) {
      const what = from === to ? `event ${from} of this session was` : `events ${from}–${to} of this session were`;
      opts.logger.error({ sessionId: id, fromSeq: from, toSeq: to, file: host.journalFile }, `session ${id}: ${what} damaged on disk and ${from === to ? 'is' : 'are'} gone; the rest is intact`);
      host.append('error', { reason: 'journal_corrupt', message: `${what} damaged on disk and ${from === to ? 'is' : 'are'} gone; the rest is intact` });
    }
    const running = host.state.running;
    if (running) endInterruptedTurn(host, running.turnId, opts.engineOf(host.meta.engine), opts.logger);
    if (running || replay.lost.length > 0) {
      try {
        await host.sync();
      } catch (e) {
        // A full disk: the session loads blocked, and writes what it appended once there is space.
        if (!host.blocked) {
          await host.close(false).catch(() => undefined);
          throw e;
        }
      }
    }
    return host;
  }

  // ---- appending ----

  /** Appends an event (see EventLog.append) and folds it into the state. */
  append<T extends EventType>(type: T, data: EventData<T>): SessionEvent<T> {
    return this.appendStored(type, data).event as SessionEvent<T>;
  }

  /** append, without building the event object for streamed output (nobody in the daemon needs it). */
  appendStored<T extends EventType>(type: T, raw: EventData<T>): StoredEvent {
    if (this.closed) throw new AstraError('shutting_down', 'the runtime is closed');
    // Secrets masked before the journal, the state or any subscriber sees the event (secrets.ts).
    const data = maskEvent(type, raw);
    const stored = this.log.append(type, data);
    this.state.applyEvent(type, data, stored.seq, this.log.lastTs);
    // What the host's other owners take from the event: the running command's screen, and whether
    // a message.completed is what its turn streamed.
    if (type === 'command.output') {
      const d = data as EventData<'command.output'>;
      this.screen.output(stored.seq, d.turnId, d.data);
    } else if (type === 'message.delta') {
      const d = data as EventData<'message.delta'>;
      this.streamed.delta(d.turnId, d.text);
    } else {
      if (type === 'message.completed') {
        const d = data as EventData<'message.completed'>;
        stored.textStreamed = this.streamed.completed(d.turnId, d.text);
      } else if (type === 'turn.started') this.streamed.started((data as EventData<'turn.started'>).turnId);
      else if (type === 'turn.completed') this.streamed.ended((data as EventData<'turn.completed'>).turnId);
      this.screen.onEvent(type, stored.seq, data as { turnId?: string; tty?: boolean }, this.terminal);
    }
    return stored;
  }

  /**
   * Folds an event that could not even be queued (the journal failed) without appending it: a
   * turn.completed, so that the turn is over either way and the session does not stay 'running'.
   */
  foldUnrecorded<T extends EventType>(type: T, data: EventData<T>): void {
    this.state.applyEvent(type, data, this.log.headSeq, this.opts.now());
  }

  /** The controller's terminal size, which commands start at (80×24 until one is given). */
  get terminalSize(): { cols: number; rows: number } {
    return { ...this.terminal };
  }

  /** Keeps the controller's terminal size for the session's next commands; true when it changed. */
  setTerminalSize(cols: number, rows: number): boolean {
    const changed = this.terminal.cols !== cols || this.terminal.rows !== rows;
    this.terminal = { cols, rows };
    return changed;
  }

  captureScreen(catchUp = false): Promise<ScreenCapture | undefined> {
    return catchUp ? this.screen.captureCatchUp() : this.screen.capture();
  }

  /** The running command's terminal took a new size: each screen subscriber gets its screen again. */
  refreshScreens(): void {
    if (this.screen.running) for (const f of this.feeds) f.refreshScreen();
  }

  screenRunning(): boolean {
    return this.screen.running;
  }

  appendInternal(kind: number, value: unknown): void {
    this.log.appendInternal(kind, packInternal(value));
    this.state.applyRecord(kind, value);
  }

  /** Throws disk_full while the disk is full: for requests that must write. */
  checkWritable(): void {
    this.log.checkWritable();
  }

  /** Writes what is queued and publishes it (approval requests are seen before anyone is asked). */
  flush(): void {
    this.log.flush();
  }

  /** Makes everything appended so far durable (write + fsync). */
  sync(): Promise<void> {
    return this.log.sync();
  }

  get backlogBytes(): number {
    return this.log.backlogBytes;
  }

  /** Resolves once fewer than `limit` bytes wait for the disk and the running command's screen has caught up. */
  async drained(limit: number): Promise<void> {
    await this.log.drained(limit);
    await this.screen.drained();
  }

  get cachedBytes(): number {
    return this.tail.cachedBytes;
  }

  // ---- reading ----

  /**
   * Published events with seq > afterSeq, at most `limit` of them and about `maxBytes` of encoded
   * size (always at least one). From memory when the tail reaches back far enough, else the journal.
   */
  readPublished(afterSeq: number, limit: number, maxBytes: number): Promise<StoredEvent[]> {
    return readPublished({ sessionId: this.id, log: this.log, tail: this.tail, packEventBody: this.opts.packEventBody }, afterSeq, limit, maxBytes);
  }

  // ---- subscriptions ----

  /**
   * Registers first, then replays asynchronously (starting on a later tick, after the caller has its
   * answer): backlog pages, then live. A sinceSeq beyond what was ever published is refused with
   * cursor_ahead (the client saw events this session no longer has, or none at all).
   */
  subscribe(sinceSeq: number, sink: SubscriptionSink, opts: SubscribeOptions = {}): SubscriptionHandle {
    if (!sink.onEvent === !sink.onStored) throw new TypeError('a subscription sink has exactly one of onEvent and onStored');
    this.checkCursor(sinceSeq);
    let since = Math.max(0, sinceSeq);
    let historyFromSeq: number | undefined;
    if (opts.historyLines !== undefined && since === 0) {
      historyFromSeq = this.state.historyStart(opts.historyLines);
      if (historyFromSeq !== undefined) since = historyFromSeq - 1;
    }
    const feed = new SubscriptionFeed(this, sink, since, { screen: opts.screen === true, historyFromSeq });
    if (opts.screen === true) this.screen.prepare();
    this.feeds.add(feed);
    feed.start();
    const headSeq = this.log.publishedSeq;
    return {
      headSeq,
      get phase() {
        return feed.phase;
      },
      get lastSeq() {
        return feed.lastSeq;
      },
      unsubscribe: () => {
        feed.close();
        this.drop(feed);
      },
    };
  }

  checkCursor(sinceSeq: number): void {
    const head = this.log.publishedSeq;
    if (sinceSeq > head)
      throw new AstraError('cursor_ahead', `sinceSeq ${sinceSeq} is beyond session ${this.id}'s head ${head}; read or subscribe again from ${head} or earlier.`, { sessionId: this.id, headSeq: head, sinceSeq });
  }

  drop(feed: SubscriptionFeed): void {
    this.feeds.delete(feed);
    this.tail.trim();
  }

  trimTail(): void {
    this.tail.trim();
  }

  /** The oldest seq a subscriber that is behind still needs kept in memory. */
  private neededSeq(): number {
    let needed = this.log ? this.log.publishedSeq + 1 : Infinity;
    for (const f of this.feeds) if (f.neededSeq < needed) needed = f.neededSeq;
    return needed;
  }

  // ---- views and persistence of the small files ----

  /** Someone depends on this host staying open: a subscriber, a turn, an approval, unwritten events. */
  get inUse(): boolean {
    return this.feeds.size > 0 || this.state.running !== undefined || this.state.approvals.size > 0 || this.log.hasUnwritten;
  }

  get status(): SessionStatus {
    if (this.meta.archived) return 'archived';
    return this.state.running ? 'running' : 'idle';
  }

  toSession(): Session {
    return sessionFromMeta(this.meta, this.status, this.log.publishedSeq, this.state.running?.turnId);
  }

  writeMeta(durable: boolean): void {
    this.meta.headSeq = this.log.publishedSeq;
    this.meta.journalBytes = this.log.journal.size;
    writeMeta(this.dir, this.meta, durable);
  }

  async close(saveMeta = true): Promise<void> {
    if (this.closed) return;
    // What is queued reaches the subscribers still here (journal.close below writes it too, unpublished to them).
    let flushError: unknown;
    try {
      if (this.log && !this.log.blocked) this.log.flush();
    } catch (e) {
      flushError = e;
    }
    this.closed = true;
    this.screen.dispose();
    for (const f of this.feeds) f.close();
    this.feeds.clear();
    try {
      await this.log?.close();
      if (flushError) throw flushError;
    } finally {
      // After the last publish (which trims the tail): nothing of this session's share may stay counted.
      this.tail.release();
    }
    if (saveMeta) this.writeMeta(true);
  }
}
