// Subscriptions and fan-out (docs/protocol.md §7–§8).
//
// Encode once: an event's bytes are the runtime's journal body (StoredEvent.body: the map {seq, ts,
// type, data} in the wire's encoding). A `session/event` frame is a per-session prefix (method, and the
// params map up to its sessionId) followed by the body without its map header; a `session/events`
// frame is a prefix, an array header, and per event a small head plus the same body bytes. Nothing
// is re-packed per subscriber or per batch.
//
// Batching: a connection that set capabilities.batchEvents gets several events per frame whenever
// it is behind — bytes already queued for it in this tick or before — and a lone event on an idle
// connection goes out at once, alone. Events accepted in one tick are sent by a microtask in the
// same tick (no timers); a batch is capped at BATCH_MAX_BYTES.
//
// Slow readers: at the high mark of its connection's queue a subscriber refuses live events; the runtime
// pauses it and feeds it again from its in-memory tail (or the journal) as the connection drains,
// so a reader that is merely behind is never dropped and the daemon holds nothing per subscriber
// but the bounded socket queue. Only a connection that makes no progress gets `session/lagged`:
// when more than maxQueuedBytes of events were published for a paused subscriber since its
// connection last took any data (Connection.progress), it is dropped and resubscribes from
// resumeFromSeq. A reader that is slow but reading is never dropped: it catches up from memory or
// the journal.
//
// Where a subscriber stands (its phase, its last seq) is the runtime feed's alone: the hub asks its
// handle, and keeps only the wire encoding, the batching and the lag budget.
//
// Text sent once (session/subscribe textFromDeltas): a subscription that asked for it gets a live
// message.completed with an empty text and `textFromDeltas: true` when the runtime found its text to
// be exactly what the turn streamed (StoredEvent.textStreamed) and this subscription delivered all of
// that as live message.delta events — counted per turn from a live turn.started, so a stream that
// began mid-turn, or whose turn came partly read back (the backlog, a pause), gets the text whole;
// read-back events are never decoded for it. The compact body is encoded once per event for every
// such subscriber.
//
// Spread: a session's later subscribers get a streaming answer's deltas 1..10 ms apart (spread.ts).
//
// Opting out (capabilities.optOutNotificationMethods): 'session/event' mutes events in either form
// (the subscription still runs, so session/replayed and session/lagged still come unless muted
// too); 'session/events' alone makes the connection get one event per frame, as without batching.
import { AstraError } from '../protocol/index.js';
import { arrayHeader, sessionWire, type SessionWire } from '../ipc/index.js';
import type { FeedNotice, FeedSubscribeOptions, Runtime, ScreenCapture, StoredEvent, SubscriptionHandle } from '../runtime/index.js';
import type { Peer } from './peer.js';
import { EventBodies, countText } from './event-bodies.js';
import { holdsDelta, spreadOffset } from './spread.js';
import { DAEMON_BOUNDS, marks, type Marks } from '../flow/index.js';

export { spreadOffset };

export interface SubscriptionLimits {
  /** Bytes of events a paused subscriber may miss while its connection takes no data before it is dropped as lagged. */
  maxQueuedBytes: number;
  /** Subscriptions one connection may hold. */
  maxSubscriptionsPerConnection: number;
}

/** A batch frame closes once its events reach this many bytes (flow/daemon-bounds.ts hubBatch). */
const BATCH_MAX_BYTES = DAEMON_BOUNDS.hubBatch.value;

interface Subscription {
  peer: Peer;
  sessionId: string;
  wire: SessionWire;
  dropped: boolean;
  /** The runtime feed's handle: its phase, and lastSeq (the last seq accepted for this connection: sent, or in `pending`). */
  handle: SubscriptionHandle | undefined;
  /** The connection opted out of session/event: events are taken and not sent. */
  muted: boolean;
  /** Batch frames (session/events) for this connection. */
  batch: boolean;
  /** While paused: bytes of events it missed since its connection last made progress, counted against the bound. */
  missedSinceDrain: number;
  /** The connection's progress when missedSinceDrain was last reset. */
  progressMark: number;
  /** Events accepted in this tick, waiting to go out as one batch frame: per event its tail (and extra part, when it has one). */
  pending: Buffer[];
  pendingEvents: number;
  pendingBytes: number;
  /**
   * With textFromDeltas: per turn whose turn.started this stream delivered, the characters of
   * message.delta text it delivered since then or since the turn's last message.completed.
   */
  deltaChars: Map<string, number> | undefined;
  /** Spread: this subscriber's offset, ms (0: never held); the timer that sends its held deltas; when its last delta came. */
  spreadMs: number;
  spreadTimer: NodeJS.Timeout | undefined;
  lastDeltaAt: number;
}

/** Options of the hub's own (the runtime's feed has the rest). */
export interface HubSubscribeOptions {
  textFromDeltas?: boolean;
}

export class SubscriptionHub {
  private readonly byPeer = new Map<string, Map<string, Subscription>>();
  /**
   * Per connection and session, a count of the subscribe and unsubscribe requests received. A
   * subscribe registers only if none came after it while the runtime answered: requests are handled
   * concurrently, so without this a slower earlier subscribe could replace a later one, or outlive
   * the unsubscribe that followed it, and two streams of one session would reach one client.
   */
  private readonly requests = new Map<string, Map<string, number>>();
  private readonly wires = new Map<string, SessionWire>();
  /**
   * A connection's queue: at `high` its subscribers' feeds are held (paused), below `low` they are
   * fed again. `high` is hubHighMark, at most maxQueuedBytes: when the bound is smaller, a reader is
   * dropped as soon as it is paused and falls behind — the socket queue then stays full, so a reader
   * that stopped is still seen as a slow consumer (with a small mark the kernel's own buffer would
   * swallow the whole queue and hide it).
   */
  private readonly queueMarks: Marks;
  private readonly withPending = new Set<Subscription>();
  private batchFlushScheduled = false;
  private readonly flushAllBound = () => this.flushAll();
  private readonly bodies = new EventBodies();

  /** The spread's clock, ms (performance.now unless a test drives it). */
  private readonly now: () => number;

  constructor(
    private readonly runtime: Runtime,
    private readonly limits: SubscriptionLimits,
    opts: { now?: () => number } = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
    const high = Math.max(2, Math.min(DAEMON_BOUNDS.hubHighMark.value, limits.maxQueuedBytes));
    this.queueMarks = marks(high, Math.floor(high / 2));
  }

  /**
   * Nothing is registered until the runtime has accepted the subscription: a refused one
   * (not_found, cursor_ahead) leaves no trace on the connection.
   */
  async subscribe(peer: Peer, sessionId: string, sinceSeq: number, opts: FeedSubscribeOptions = {}, hubOpts: HubSubscribeOptions = {}): Promise<{ sessionId: string; headSeq: number }> {
    this.checkRoom(peer, sessionId);
    const request = this.countRequest(peer, sessionId);
    const muted = peer.mutedNotifications;
    const sub: Subscription = {
      peer,
      sessionId,
      wire: this.wireOf(sessionId),
      dropped: false,
      handle: undefined,
      muted: muted.has('session/event'),
      batch: peer.batchEvents && !muted.has('session/events'),
      missedSinceDrain: 0,
      progressMark: 0,
      pending: [],
      pendingEvents: 0,
      pendingBytes: 0,
      deltaChars: hubOpts.textFromDeltas === true ? new Map() : undefined,
      spreadMs: spreadOffset(this.subscriberCount(sessionId)),
      spreadTimer: undefined,
      lastDeltaAt: -Infinity,
    };
    // The runtime replays the backlog after this resolves, then calls onReplayed, then goes live.
    const handle = await this.runtime.subscribe(sessionId, sinceSeq, {
      onStored: (event: StoredEvent) => this.deliver(sub, event),
      onReplayed: (throughSeq: number, info: { historyFromSeq?: number }) => {
        if (sub.dropped) return;
        this.flushPending(sub);
        peer.notify('session/replayed', info.historyFromSeq !== undefined ? { sessionId, throughSeq, historyFromSeq: info.historyFromSeq } : { sessionId, throughSeq });
      },
      // In the stream's order: what was accepted before it goes out first.
      onScreen: (s: ScreenCapture) => {
        if (sub.dropped || sub.muted) return;
        this.flushPending(sub);
        peer.notify('session/screen', { sessionId, turnId: s.turnId, atSeq: s.atSeq, cols: s.cols, rows: s.rows, data: s.data, scrollback: s.scrollback, alternate: s.alternate });
      },
      onSkipped: (_seq: number, bytes: number) => this.skipped(sub, bytes),
      onNotice: (n: FeedNotice) => {
        if (!sub.dropped) peer.notify('session/notice', n);
      },
      onInvalidated: (reason: string, resyncFrom: number) => {
        if (!sub.dropped && this.byPeer.get(peer.id)?.get(sessionId) === sub) this.unsubscribe(peer, sessionId, { method: 'session/invalidated', params: { sessionId, reason, resyncFrom } });
      },
      waitForCapacity: () => this.waitForCapacity(sub),
    }, opts);
    sub.handle = handle;
    if (this.requests.get(peer.id)?.get(sessionId) !== request) {
      // Superseded while the runtime answered (a later subscribe or an unsubscribe of this session on
      // this connection): this stream never starts. Nothing was delivered yet (the backlog only
      // starts after the runtime's answer).
      sub.dropped = true;
      handle.unsubscribe();
      return { sessionId, headSeq: handle.headSeq };
    }
    if (peer.conn.closed) {
      // The connection went while the runtime answered (dropPeer has run): nothing to keep.
      sub.dropped = true;
      handle.unsubscribe();
      return { sessionId, headSeq: handle.headSeq };
    }
    try {
      this.checkRoom(peer, sessionId);
    } catch (e) {
      sub.dropped = true;
      handle.unsubscribe();
      throw e;
    }
    let subs = this.byPeer.get(peer.id);
    if (!subs) this.byPeer.set(peer.id, (subs = new Map()));
    const existing = subs.get(sessionId);
    if (existing) {
      // Resubscribing replaces the old stream (a client resuming after session/lagged does this).
      this.flushPending(existing);
      existing.dropped = true;
      existing.handle?.unsubscribe();
    }
    subs.set(sessionId, sub);
    return { sessionId, headSeq: handle.headSeq };
  }

  /** Throws overloaded when the connection holds its limit of subscriptions (replacing one is always allowed). */
  private checkRoom(peer: Peer, sessionId: string): void {
    const subs = this.byPeer.get(peer.id);
    if (!subs || subs.has(sessionId) || subs.size < this.limits.maxSubscriptionsPerConnection) return;
    throw new AstraError('overloaded', `this connection already has ${subs.size} subscriptions; unsubscribe from some first`, {
      limit: this.limits.maxSubscriptionsPerConnection,
    });
  }

  /** Counts a subscribe or unsubscribe of `sessionId` on `peer`; returns the count (see `requests`). */
  private countRequest(peer: Peer, sessionId: string): number {
    let counts = this.requests.get(peer.id);
    if (!counts) this.requests.set(peer.id, (counts = new Map()));
    const n = (counts.get(sessionId) ?? 0) + 1;
    counts.set(sessionId, n);
    return n;
  }

  /** Drops a subscription; `last`: the frame that says why, after what was accepted (session/closed, session/invalidated). */
  unsubscribe(peer: Peer, sessionId: string, last?: { method: 'session/closed' | 'session/invalidated'; params: Record<string, unknown> }): void {
    this.countRequest(peer, sessionId);
    const subs = this.byPeer.get(peer.id);
    const sub = subs?.get(sessionId);
    if (!sub) return;
    this.flushPending(sub);
    sub.dropped = true;
    sub.handle?.unsubscribe();
    subs!.delete(sessionId);
    if (last) peer.notify(last.method, last.params);
  }

  /** Ends a session's subscriptions (every session's without `sessionId`), each with a last `session/closed`. */
  close(sessionId: string | undefined, reason: string): void {
    for (const subs of this.byPeer.values())
      for (const sub of [...subs.values()])
        if (sessionId === undefined || sub.sessionId === sessionId) this.unsubscribe(sub.peer, sub.sessionId, { method: 'session/closed', params: { sessionId: sub.sessionId, reason } });
  }

  /** Drops every subscription of a connection that went away. */
  dropPeer(peer: Peer): void {
    this.requests.delete(peer.id);
    const subs = this.byPeer.get(peer.id);
    if (!subs) return;
    for (const sub of subs.values()) {
      sub.dropped = true;
      this.stopSpread(sub);
      sub.pending = [];
      sub.pendingEvents = 0;
      sub.pendingBytes = 0;
      sub.handle?.unsubscribe();
    }
    this.byPeer.delete(peer.id);
  }

  sessionsOf(peer: Peer): string[] {
    return [...(this.byPeer.get(peer.id)?.keys() ?? [])];
  }

  /** How many connections watch each session. */
  subscriberCount(sessionId: string): number {
    let n = 0;
    for (const subs of this.byPeer.values()) if (subs.has(sessionId)) n++;
    return n;
  }

  private wireOf(sessionId: string): SessionWire {
    let w = this.wires.get(sessionId);
    if (!w) {
      // A few hundred bytes per session; forget them all now and then rather than track liveness.
      if (this.wires.size >= 1024) this.wires.clear();
      this.wires.set(sessionId, (w = sessionWire(sessionId)));
    }
    return w;
  }

  /** false refuses the event: the runtime pauses this subscription and feeds it again once the queue drains. */
  private deliver(sub: Subscription, event: StoredEvent): boolean | void {
    if (sub.dropped || sub.muted) return;
    const conn = sub.peer.conn;
    if (conn.closed) return;
    // The body without its map header (one view per event, shared by every subscriber), and a
    // large output's bytes, kept apart from their head.
    const compact = this.bodies.tailFor(event, sub.deltaChars, sub.peer.experimentalApi);
    const tail = compact ?? event.tail;
    const extra = compact ? undefined : event.extra;
    const length = extra ? tail.length + extra.length : tail.length;
    const queued = conn.queuedBytes + sub.pendingBytes;
    // Below the low mark an event is always taken (however big), so a resumed subscriber progresses.
    if (queued >= this.queueMarks.low && queued + length > this.queueMarks.high) {
      // A live event refused: the feed pauses now, and the lag budget starts counting again.
      if (sub.handle?.phase === 'live') {
        sub.missedSinceDrain = 0;
        this.addMissed(sub, length + 1);
      }
      return false;
    }
    if (sub.deltaChars) countText(sub.deltaChars, event);
    const held = sub.spreadMs > 0 && sub.batch && holdsDelta(sub, event, this.now());
    if (!held && (!sub.batch || (queued === 0 && sub.pendingEvents === 0))) {
      // Not behind (or not batching): this event goes alone, now. The batch flush is queued before
      // the connection's own write (both microtasks): events after it in this tick, batched, then go
      // in the same write instead of a second one (a chat answer's last delta and its completion).
      if (sub.batch) this.scheduleFlushAll();
      conn.sendParts(extra ? [sub.wire.single, tail, extra] : [sub.wire.single, tail]);
      return;
    }
    sub.pending.push(sub.wire.eventHead, tail);
    if (extra) sub.pending.push(extra);
    sub.pendingEvents++;
    sub.pendingBytes += length + sub.wire.eventHead.length;
    if (sub.pendingBytes >= BATCH_MAX_BYTES) this.flushPending(sub);
    else if (held) {
      // Sent by its timer, unless this tick's flush already has the batch.
      if (!sub.spreadTimer && !this.withPending.has(sub)) sub.spreadTimer = setTimeout(() => this.flushPending(sub), sub.spreadMs);
    } else if (sub.pendingEvents === 1 || sub.spreadTimer) {
      // Anything not held goes in this tick, with the deltas held before it.
      this.stopSpread(sub);
      this.withPending.add(sub);
      this.scheduleFlushAll();
    }
  }

  private stopSpread(sub: Subscription): void {
    if (sub.spreadTimer === undefined) return;
    clearTimeout(sub.spreadTimer);
    sub.spreadTimer = undefined;
  }

  private scheduleFlushAll(): void {
    if (this.batchFlushScheduled) return;
    this.batchFlushScheduled = true;
    queueMicrotask(this.flushAllBound);
  }

  private flushAll(): void {
    this.batchFlushScheduled = false;
    for (const sub of this.withPending) this.flushPending(sub);
    this.withPending.clear();
  }

  /** Sends the events accepted so far as one frame: `session/event` for one, `session/events` for several. */
  private flushPending(sub: Subscription): void {
    this.stopSpread(sub);
    const pending = sub.pending;
    const events = sub.pendingEvents;
    if (events === 0) return;
    sub.pending = [];
    sub.pendingEvents = 0;
    sub.pendingBytes = 0;
    const conn = sub.peer.conn;
    if (sub.dropped || conn.closed) return;
    if (events === 1) {
      // A lone event is a session/event frame: its parts without the in-batch head.
      pending[0] = sub.wire.single;
      conn.sendParts(pending);
      return;
    }
    pending.unshift(sub.wire.batchHead, arrayHeader(events));
    conn.sendParts(pending);
  }

  private skipped(sub: Subscription, bytes: number): void {
    if (sub.dropped) return;
    this.addMissed(sub, bytes);
  }

  private addMissed(sub: Subscription, bytes: number): void {
    const progress = sub.peer.conn.progress;
    if (progress !== sub.progressMark) {
      // The connection took data since the last count: it is reading, so the count starts again.
      sub.progressMark = progress;
      sub.missedSinceDrain = 0;
    }
    sub.missedSinceDrain += bytes;
    if (sub.peer.conn.queuedBytes + sub.missedSinceDrain > this.limits.maxQueuedBytes) this.lag(sub);
  }

  private lag(sub: Subscription): void {
    // What was accepted goes out first, so resumeFromSeq is exactly what the client will have seen.
    this.flushPending(sub);
    sub.dropped = true;
    const resumeFromSeq = sub.handle!.lastSeq;
    sub.handle!.unsubscribe();
    this.byPeer.get(sub.peer.id)?.delete(sub.sessionId);
    // One small notification, sent even over the bound: the client resubscribes from resumeFromSeq.
    sub.peer.notify('session/lagged', { sessionId: sub.sessionId, resumeFromSeq });
  }

  private waitForCapacity(sub: Subscription): Promise<void> {
    // Resume once the queue is below its low mark (half the high mark): the socket still holds enough to stay busy.
    this.flushPending(sub);
    return sub.peer.conn.drained(this.queueMarks.low).then(() => {
      // The connection drained: progress, so the allowance of missed bytes starts again.
      sub.missedSinceDrain = 0;
    });
  }
}
