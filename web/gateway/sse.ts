// One Server-Sent-Events stream of one session to one tab (docs/http.md §Events): `id:` is the
// event's seq, `event:` its type, `data:` its JSON. The stream catches up with a subscription of
// its tab's AstraClient (each event once, in order, across daemon restarts), then joins the
// session's shared feed (session-feed.ts), which decodes and frames each event once for all the
// session's streams. When the browser reads too slowly the stream leaves the feed (or stops its
// subscription), says `lagged`, and resumes from the journal once the socket drains.
import type { ServerResponse } from 'node:http';
import type { Subscription } from '../../client/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { toEnvelope } from './errors.js';
import type { FeedMember, SessionFeed, SessionFeeds, SessionNotice } from './session-feed.js';
import { eventFrame, streamFrame as frame } from './sse-frames.js';
import type { Tab, TabStream } from './tabs.js';
import { GATEWAY_BOUNDS } from '../../flow/index.js';

export const DEFAULT_HEARTBEAT_MS = 15_000;
/** Bytes waiting in the HTTP socket past which the browser has lagged. */
export const DEFAULT_MAX_BUFFERED = GATEWAY_BOUNDS.sseBuffered.value;

export interface StreamOptions {
  heartbeatMs: number;
  maxBuffered: number;
  /** The gateway's shared feeds; without them each stream keeps its own subscription. */
  feeds?: SessionFeeds;
}

/**
 * Where a stream stands, the one state it has:
 * - `own`: its tab's subscription delivers (the catch-up, or live when there is no feed to join);
 * - `waiting`: live on its own subscription, it asked `feed` to take over (joined once its last seq
 *   is within the feed's frames);
 * - `joined`: `feed` delivers; its own subscription is stopped;
 * - `lagged`: the browser reads too slowly (its socket is past the bound); nothing delivers until it drains;
 * - `awaitingDaemon`: the tab's daemon connection is down; it subscribes once it is back;
 * - `stopped`: ended.
 */
type StreamState =
  | { kind: 'own' }
  | { kind: 'waiting'; feed: SessionFeed }
  | { kind: 'joined'; feed: SessionFeed }
  | { kind: 'lagged' }
  | { kind: 'awaitingDaemon' }
  | { kind: 'stopped' };

export class EventStream implements FeedMember, TabStream {
  private state: StreamState = { kind: 'own' };
  private sub: Subscription | undefined;
  /** Which subscription's callbacks count: a subscription closed or replaced is ignored from then on. */
  private subGen = 0;
  /** The unsubscribe of the last own subscription, which the next one waits for. */
  private closingSub: Promise<void> | undefined;
  private lastSent: number;
  /** The reason of the last `notice` frame written (the tab's and the feed's subscriptions may both pass one on). */
  private lastNotice: string | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private lagCount = 0;
  private daemonLags = 0;
  private subscribing: Promise<void> | undefined;
  /** Frames of this tick, written as one chunk (one write per frame cost ~3× the throughput). */
  private pending: string[] = [];
  /** Their exact UTF-8 size, so that flush copies each once into one buffer (no joined string, no conversion at the socket). */
  private pendingBytes = 0;
  private flushScheduled = false;
  private readonly done: Promise<void>;
  private finish!: () => void;

  constructor(
    private readonly tab: Tab,
    readonly sessionId: string,
    sinceSeq: number,
    private readonly res: ServerResponse,
    private readonly opts: StreamOptions,
  ) {
    this.lastSent = sinceSeq;
    this.done = new Promise((r) => (this.finish = r));
  }

  private get stopped(): boolean {
    return this.state.kind === 'stopped';
  }

  /** Moves to `next`; a stream that was in a feed (`waiting`, `joined`) leaves it. */
  private moveTo(next: StreamState): void {
    const was = this.state;
    this.state = next;
    if (was.kind === 'waiting' || was.kind === 'joined') was.feed.leave(this);
  }

  /** Resolves when the stream has ended and its subscription is closed. */
  get ended(): Promise<void> {
    return this.done;
  }

  /** The last seq written or queued (FeedMember). */
  get position(): number {
    return this.lastSent;
  }

  get connectionId(): string | undefined {
    return this.tab.connected?.connectionId;
  }

  get buffered(): number {
    return this.res.writableLength;
  }

  /** FeedMember: this stream held the feed too long; it leaves it and lags on its own. */
  evict(): void {
    this.lag();
  }

  async start(): Promise<void> {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    this.res.socket?.setNoDelay(true);
    this.res.write(`retry: 1000\n\n`);
    this.res.write(frame('open', { sessionId: this.sessionId, sinceSeq: this.lastSent, heartbeatMs: this.opts.heartbeatMs }));
    this.res.on('close', () => this.stop());
    this.res.on('drain', () => this.onDrain());
    this.heartbeat = setInterval(() => this.write(frame('heartbeat', { ts: Date.now(), lastSeq: this.lastSent })), this.opts.heartbeatMs);
    // Opened while the daemon is down: say so now, and subscribe once the tab's client is back.
    const down = this.tab.down;
    if (down) {
      this.state = { kind: 'awaitingDaemon' };
      this.daemonDisconnected(down.reason, down.daemonShuttingDown);
      return;
    }
    await this.subscribe();
  }

  private subscribe(): Promise<void> {
    const p = this.doSubscribe();
    this.subscribing = p.catch(() => undefined);
    return p;
  }

  private async doSubscribe(): Promise<void> {
    const gen = ++this.subGen;
    const client = await this.tab.daemon();
    // A client holds one subscription per session: the previous one must be gone.
    await this.closingSub;
    if (this.stopped || gen !== this.subGen) return;
    const current = (): boolean => gen === this.subGen && !this.stopped;
    const sub = await client.subscribe(this.sessionId, {
      sinceSeq: this.lastSent,
      onEvent: (e) => {
        if (current()) this.onEvent(e);
      },
      onReplayed: (throughSeq) => {
        if (!current()) return;
        if (this.sub && this.sub.lagCount > this.daemonLags) {
          // The daemon dropped the tab's subscription: it lagged; the client resumed it from the journal.
          this.daemonLags = this.sub.lagCount;
          this.resynced(throughSeq);
        }
        this.write(frame('replayed', { throughSeq }));
        // Live now: join the session's shared feed where this stream stands.
        this.joinFeed();
      },
      onEnd: (error) => {
        if (error && current()) this.fail(error);
      },
    });
    if (current()) {
      this.sub = sub;
      this.daemonLags = sub.lagCount;
    } else await sub.close().catch(() => undefined);
  }

  /** Stops the own subscription (its callbacks are ignored from now on). */
  private dropSub(): void {
    this.subGen++;
    const sub = this.sub;
    this.sub = undefined;
    if (sub) this.closingSub = sub.close().catch(() => undefined);
  }

  private joinFeed(): void {
    if (!this.opts.feeds || this.state.kind !== 'own') return;
    // The feed may take the stream at once (joined), before it answers.
    const feed = this.opts.feeds.want(this);
    if (feed && this.state.kind === 'own') this.state = { kind: 'waiting', feed };
  }

  /** FeedMember: the feed delivers this stream's events from here on. */
  joined(feed: SessionFeed): void {
    this.state = { kind: 'joined', feed };
    this.dropSub();
  }

  /** FeedMember: the feed's frames after `position`, through lastSeq, after this stream's own frames so far. */
  writeShared(bytes: Buffer, lastSeq: number): void {
    if (this.stopped) return;
    if (this.pending.length > 0) this.flush();
    this.res.write(bytes);
    this.lastSent = lastSeq;
    this.checkLag();
  }

  noteApproval(e: SessionEvent): void {
    this.tab.noteApproval(String((e.data as { approvalId?: unknown }).approvalId), e.sessionId);
  }

  /** FeedMember: the daemon dropped the feed's subscription: it lagged; it resumed from the journal. */
  feedResynced(throughSeq: number): void {
    this.resynced(throughSeq);
  }

  /** A subscription this stream reads through was resumed from the journal after it lagged at the daemon. */
  private resynced(throughSeq: number): void {
    this.lagCount++;
    this.write(frame('resynced', { throughSeq, lastSeq: this.lastSent, lagCount: this.lagCount }));
  }

  /** More than maxBuffered waits in the socket: the browser reads too slowly. */
  private checkLag(): void {
    if (this.res.writableLength > this.opts.maxBuffered) this.lag();
  }

  /** FeedMember: the feed ended; a joined stream goes on with its own subscription from its last seq. */
  feedLost(closed?: string): void {
    if (closed !== undefined) return this.closed(closed);
    const was = this.state.kind;
    // A waiting stream still reads through its own subscription.
    if (was === 'waiting') this.state = { kind: 'own' };
    if (was !== 'joined') return;
    // The daemon is down (stopped, restarting): subscribe once the tab's client is back.
    if (this.tab.down) this.state = { kind: 'awaitingDaemon' };
    else {
      this.state = { kind: 'own' };
      this.subscribe().catch((e: unknown) => this.fail(e));
    }
  }

  private onEvent(e: SessionEvent): void {
    if (this.state.kind === 'stopped' || this.state.kind === 'lagged' || e.seq <= this.lastSent) return;
    this.lastSent = e.seq;
    if (e.type === 'approval.requested') this.noteApproval(e);
    // A command.output frame by the template is ASCII: its length is its size.
    const f = eventFrame(e);
    this.write(f.text, f.ascii);
    if (this.pendingBytes > 1024 * 1024) this.flush();
    if (this.state.kind === 'waiting') this.state.feed.tryJoin(this);
  }

  private write(text: string, ascii = false): void {
    if (this.stopped) return;
    this.pending.push(text);
    this.pendingBytes += ascii ? text.length : Buffer.byteLength(text);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.stopped || this.pending.length === 0) return;
    const chunk = Buffer.allocUnsafe(this.pendingBytes);
    let at = 0;
    for (const text of this.pending) at += chunk.write(text, at);
    this.pending = [];
    this.pendingBytes = 0;
    this.res.write(at === chunk.length ? chunk : chunk.subarray(0, at));
    this.checkLag();
  }

  /** The browser reads slower than the session: leave the feed, stop the subscription, until the socket drains. */
  private lag(): void {
    if (this.state.kind === 'lagged' || this.state.kind === 'stopped') return;
    this.moveTo({ kind: 'lagged' });
    this.dropSub();
  }

  private onDrain(): void {
    const s = this.state;
    if (s.kind === 'waiting' || s.kind === 'joined') return s.feed.drained();
    if (s.kind !== 'lagged') return;
    this.state = { kind: 'own' };
    this.lagCount++;
    this.write(frame('lagged', { resumeFromSeq: this.lastSent, lagCount: this.lagCount }));
    this.subscribe()
      .then(() => this.write(frame('resynced', { lastSeq: this.lastSent, lagCount: this.lagCount })))
      .catch((e: unknown) => this.fail(e));
  }

  private fail(e: unknown): void {
    const closed = (e as { reason?: unknown }).reason === 'subscription_closed' ? (e as { data: { closeReason?: unknown } }).data.closeReason : undefined;
    if (closed !== undefined) return this.closed(String(closed));
    this.write(frame('error', toEnvelope(e).body));
    this.stop();
  }

  /** The daemon ended the session's subscription (session/closed): the stream's last frame says why. */
  private closed(reason: string): void {
    this.write(frame('closed', { reason, lastSeq: this.lastSent }));
    this.stop();
  }

  /** The tab's daemon connection dropped (a daemon restart): the page says "reconnecting" until it is back. */
  daemonDisconnected(reason: string, daemonShuttingDown: boolean): void {
    this.write(frame('reconnecting', { reason, daemonShuttingDown, lastSeq: this.lastSent }));
  }

  /** The tab's client reconnected; its subscription (or the feed's) resumes after lastSeq by itself, nothing is skipped. */
  daemonReconnected(daemonRestarted: boolean, attempts: number): void {
    this.write(frame('reconnected', { daemonRestarted, attempts, lastSeq: this.lastSent }));
    if (this.state.kind !== 'awaitingDaemon') return;
    this.state = { kind: 'own' };
    this.subscribe().catch((e: unknown) => this.fail(e));
  }

  /**
   * The daemon's word about the session that no event carries (session/notice: a full disk), from
   * the tab's subscription or the feed's: written at once, a repeat of the last reason dropped.
   */
  sessionNotice(n: SessionNotice): void {
    if (this.stopped || n.sessionId !== this.sessionId || n.reason === this.lastNotice) return;
    this.lastNotice = n.reason;
    this.write(frame('notice', { reason: n.reason, message: n.message, ...(n.path !== undefined ? { path: n.path } : {}), lastSeq: this.lastSent }));
  }

  stop(): void {
    if (this.stopped) return;
    this.flush();
    this.moveTo({ kind: 'stopped' });
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.tab.streams.get(this.sessionId) === this) this.tab.streams.delete(this.sessionId);
    this.tab.streamEnded();
    this.res.end();
    void (async () => {
      await this.subscribing;
      this.dropSub();
      await this.closingSub;
    })().then(() => this.finish());
  }
}
