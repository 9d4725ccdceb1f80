// The shared feed of a session (docs/http.md §Events, "Many tabs of one session"): one daemon
// subscription per session for the whole gateway, on a connection of its own ("astra web feed"),
// which decodes each event once, frames it once (frame-slab.ts) and hands each tick's frames, as one
// Buffer, to every event stream of that session that has joined. A stream catches up on its own (its
// tab's subscription) and joins once its last seq is within the frames the feed still holds (this
// tick's and the last tick's); a stream that lags, or a feed that ends, goes back to a subscription
// of its own from the stream's last seq, so each stream still gets every event once, in order.
// Leases, approvals and the `reconnecting` frames stay each tab's own (tabs.ts).
import type { AstraClient, ClientEvents, Subscription } from '../../client/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { FrameSlab, type FrameChunk } from './frame-slab.js';
import { GATEWAY_BOUNDS } from '../../flow/index.js';

/** Frames of one tick past this many bytes are handed out at once. */
const MAX_TICK_BYTES = GATEWAY_BOUNDS.feedTick.value;
/**
 * Flow control, for a session with several streams: once one has this many bytes waiting in its
 * socket the feed holds (stops its subscription; the daemon keeps the events) until all have
 * drained, so the session goes at the pace of its browsers instead of piling up bytes until every
 * stream lags and catches up from the journal by itself (N subscriptions again). A stream still
 * behind MAX_HOLD_MS later is left behind: it lags on its own (docs/http.md `lagged`) and the others
 * go on. A session's only stream is never held: it lags at the gateway's bound (sse.ts
 * DEFAULT_MAX_BUFFERED) exactly as its own subscription would.
 */
const HOLD_BYTES = GATEWAY_BOUNDS.feedHighMark.value;
const MAX_HOLD_MS = GATEWAY_BOUNDS.feedMaxHoldMs.value;

/** The daemon's session/notice (a full disk), as AstraClient's 'notice' event gives it. */
export type SessionNotice = ClientEvents['notice'];

/** The connection the feeds subscribe on (tabs.ts feedLink: a read-only client of the gateway's own). */
export interface FeedLink {
  daemon(): Promise<AstraClient>;
  /** Told the daemon's session notices. */
  onNotice: ((n: SessionNotice) => void) | undefined;
  close(): Promise<void>;
}

/** What the feed needs from an event stream (sse.ts EventStream). */
export interface FeedMember {
  readonly sessionId: string;
  /** The last seq the stream has written or queued. */
  readonly position: number;
  /** The tab's connection id at the daemon (for the observers count). */
  readonly connectionId: string | undefined;
  /** Bytes waiting in the stream's socket. */
  readonly buffered: number;
  /** The stream held the feed too long: it leaves and lags on its own. */
  evict(): void;
  /** `feed` takes over from here: the stream stops its own subscription. */
  joined(feed: SessionFeed): void;
  /** The frames of the events after `position`, through `lastSeq`: written as they are. */
  writeShared(bytes: Buffer, lastSeq: number): void;
  /** An approval request among the frames written next (the tab remembers its session). */
  noteApproval(e: SessionEvent): void;
  /** The daemon dropped the feed's subscription: it lagged; the feed resumed it from the journal. */
  feedResynced(throughSeq: number): void;
  /** The feed ended: the stream goes on with its own subscription, from `position`; `closed`: the daemon ended it, so does the stream. */
  feedLost(closed?: string): void;
  /** The daemon's notice about the session (the feed's subscription gets it, not the tabs'). */
  sessionNotice(n: SessionNotice): void;
}

/**
 * Where a feed stands: `open` (subscribed, or subscribing: `sub` is set once the daemon answered),
 * `held` (flow control stopped the subscription until every stream drained, or `timer` ends the
 * hold), `ended` (closed: its subscription is being stopped, nobody joins it any more).
 */
type FeedState = { kind: 'open' } | { kind: 'held'; timer: NodeJS.Timeout } | { kind: 'ended' };

class SessionFeed {
  private state: FeedState = { kind: 'open' };
  private sub: Subscription | undefined;
  private readonly slab: FrameSlab;
  /** The last tick's frames, for a stream that joins a little behind. */
  private prev: FrameChunk | undefined;
  /** Approval requests of this tick (rare), for the tabs of the streams they go to. */
  private approvals: SessionEvent[] = [];
  readonly members = new Set<FeedMember>();
  private readonly waiting = new Set<FeedMember>();
  private flushScheduled = false;
  private daemonLags = 0;
  /** The subscription being made or stopped: the next step waits for it (one subscription per session and connection). */
  private started: Promise<void>;
  private readonly flushNow = (): void => this.flush();

  constructor(
    readonly sessionId: string,
    sinceSeq: number,
    private readonly link: FeedLink,
    after: Promise<void> | undefined,
    private readonly onEnded: (feed: SessionFeed, closing: Promise<void>) => void,
  ) {
    this.slab = new FrameSlab(sinceSeq);
    this.started = this.subscribe(after);
  }

  get subscribed(): boolean {
    return this.sub !== undefined && this.state.kind !== 'ended';
  }

  /** Subscribes from the last seq framed, once `after` (the previous subscription's end) is done. */
  private subscribe(after: Promise<void> | undefined): Promise<void> {
    return (async () => {
      await after;
      if (this.state.kind !== 'open') return;
      const client = await this.link.daemon();
      if (this.state.kind !== 'open') return;
      // Callbacks of a subscription that is no longer the feed's (held, replaced) are ignored.
      let sub: Subscription | undefined;
      sub = await client.subscribe(this.sessionId, {
        sinceSeq: this.slab.lastSeq,
        onEvent: (e) => {
          if (this.sub === sub) this.onEvent(e);
        },
        onReplayed: (throughSeq) => {
          if (this.sub === sub) this.onReplayed(throughSeq);
        },
        onEnd: (error) => {
          if (error && this.sub === sub) this.fail(error.reason === 'subscription_closed' ? String(error.data.closeReason) : undefined);
        },
      });
      this.daemonLags = sub.lagCount;
      if (this.state.kind !== 'open') await sub.close().catch(() => undefined);
      else this.sub = sub;
    })().catch(() => this.fail());
  }

  want(m: FeedMember): void {
    if (this.members.has(m)) return;
    this.waiting.add(m);
    this.tryJoin(m);
  }

  /** Joins a waiting stream when its last seq is within the frames held: the last tick's or this one's. */
  tryJoin(m: FeedMember): boolean {
    if (this.state.kind === 'ended' || !this.waiting.has(m)) return false;
    const p = m.position;
    const oldest = this.prev ? this.prev.afterSeq : this.slab.takenSeq;
    if (p < oldest || p > this.slab.lastSeq) return false;
    this.waiting.delete(m);
    this.members.add(m);
    m.joined(this);
    // Behind by part of the last tick: its rest now; this tick's frames come with everyone's.
    if (this.prev && p < this.prev.lastSeq) m.writeShared(this.prev.from(p), this.prev.lastSeq);
    return true;
  }

  leave(m: FeedMember): void {
    this.members.delete(m);
    this.waiting.delete(m);
    if (this.members.size === 0 && this.waiting.size === 0) this.close();
  }

  private onEvent(e: SessionEvent): void {
    if (this.state.kind === 'ended' || e.seq <= this.slab.lastSeq) return;
    this.slab.append(e);
    if (e.type === 'approval.requested') this.approvals.push(e);
    if (this.slab.pendingBytes > MAX_TICK_BYTES) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.state.kind === 'ended') return;
    const chunk = this.slab.take();
    if (chunk) {
      const approvals = this.approvals;
      if (approvals.length > 0) this.approvals = [];
      for (const m of this.members) {
        const from = m.position;
        if (from >= chunk.lastSeq) continue;
        for (const e of approvals) if (e.seq > from) m.noteApproval(e);
        m.writeShared(chunk.from(from), chunk.lastSeq);
      }
      this.prev = chunk;
      if (this.state.kind === 'open' && this.members.size > 1 && this.over(HOLD_BYTES).length > 0) this.hold();
    }
    for (const m of this.waiting) this.tryJoin(m);
  }

  /** Streams with more than `bytes` waiting in their socket. */
  private over(bytes: number): FeedMember[] {
    return [...this.members].filter((m) => m.buffered > bytes);
  }

  /** A stream's level is past the high mark: stop the subscription until every stream has drained (or MAX_HOLD_MS). */
  private hold(): void {
    this.state = { kind: 'held', timer: setTimeout(() => this.resume(true), MAX_HOLD_MS) };
    this.started = this.dropSub();
  }

  /** Stops the subscription (its callbacks are ignored from now on), once the step before is done; resolves when it is closed. */
  private async dropSub(): Promise<void> {
    const previous = this.started;
    const sub = this.sub;
    this.sub = undefined;
    await previous;
    await sub?.close().catch(() => undefined);
  }

  /** A stream's socket drained: go on once all have. */
  drained(): void {
    if (this.state.kind === 'held' && this.over(HOLD_BYTES / 4).length === 0) this.resume(false);
  }

  private resume(evict: boolean): void {
    if (this.state.kind !== 'held') return;
    clearTimeout(this.state.timer);
    this.state = { kind: 'open' };
    if (evict) for (const m of this.over(HOLD_BYTES / 4)) m.evict();
    if (this.members.size === 0 && this.waiting.size === 0) return this.close();
    this.started = this.subscribe(this.started);
  }

  private onReplayed(throughSeq: number): void {
    const sub = this.sub;
    if (!sub || sub.lagCount <= this.daemonLags) return;
    this.daemonLags = sub.lagCount;
    this.flush();
    for (const m of this.members) m.feedResynced(throughSeq);
  }

  /**
   * The subscription failed (or could not be made): every stream goes on with a subscription of its
   * own — or, when the daemon ended it (`closed`: the session was deleted or archived), ends saying so.
   */
  private fail(closed?: string): void {
    if (this.state.kind === 'ended') return;
    const all = [...this.members, ...this.waiting];
    this.close();
    for (const m of all) m.feedLost(closed);
  }

  close(): void {
    if (this.state.kind === 'ended') return;
    if (this.state.kind === 'held') clearTimeout(this.state.timer);
    this.state = { kind: 'ended' };
    this.members.clear();
    this.waiting.clear();
    this.onEnded(this, this.dropSub());
  }
}

/** The gateway's shared feeds, one per session some stream has asked for, and their connection. */
export class SessionFeeds {
  private readonly feeds = new Map<string, SessionFeed>();
  /** Feeds that ended and are unsubscribing: a new feed of the session waits for it. */
  private readonly closing = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly link: FeedLink) {
    // A full disk is told to the feed's subscription: every stream that joined it passes it on.
    this.link.onNotice = (n) => {
      for (const m of this.feeds.get(n.sessionId)?.members ?? []) m.sessionNotice(n);
    };
  }

  /** Asks for the session's feed (made on first use, from the stream's last seq); the stream joins when it can. */
  want(m: FeedMember): SessionFeed | undefined {
    if (this.closed) return undefined;
    let feed = this.feeds.get(m.sessionId);
    if (!feed) {
      feed = new SessionFeed(m.sessionId, m.position, this.link, this.closing.get(m.sessionId), (f, closing) => this.ended(f, closing));
      this.feeds.set(m.sessionId, feed);
    }
    feed.want(m);
    return feed;
  }

  private ended(feed: SessionFeed, closing: Promise<void>): void {
    if (this.feeds.get(feed.sessionId) === feed) this.feeds.delete(feed.sessionId);
    const done = closing.finally(() => {
      if (this.closing.get(feed.sessionId) === done) this.closing.delete(feed.sessionId);
    });
    this.closing.set(feed.sessionId, done);
  }

  /**
   * How many tabs watch the session through its feed, beside the daemon's count: the daemon sees
   * one subscriber (the feed) for all of them. `controllerConnectionId`'s tab is not an observer.
   */
  observers(sessionId: string, daemonObservers: number, controllerConnectionId: string | undefined): number {
    const feed = this.feeds.get(sessionId);
    if (!feed) return daemonObservers;
    let tabs = 0;
    for (const m of feed.members) if (m.connectionId !== controllerConnectionId) tabs++;
    return Math.max(0, daemonObservers - (feed.subscribed ? 1 : 0)) + tabs;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const f of [...this.feeds.values()]) f.close();
    await Promise.all([...this.closing.values()]);
    await this.link.close();
  }
}

export type { SessionFeed };
