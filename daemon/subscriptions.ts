// Subscriptions and fan-out (DESIGN.md §7). Each event is encoded once and the same bytes are written
// to every subscriber. The runtime never waits for a client: a subscriber whose connection queue is
// over its bound is dropped with one `session/lagged`, and resubscribes from there.
import { AstraError, LIMITS, type SessionEvent } from '../protocol/index.js';
import { encodeFrame } from '../ipc/index.js';
import type { Runtime } from '../runtime/index.js';
import type { Peer } from './peer.js';

export interface SubscriptionLimits {
  /** Outbound bytes a connection may have queued before its subscriptions are dropped as lagged. */
  maxQueuedBytes: number;
  /** Subscriptions one connection may hold. */
  maxSubscriptionsPerConnection: number;
}

interface Subscription {
  peer: Peer;
  sessionId: string;
  /** Last seq written to the connection. */
  lastSeq: number;
  dropped: boolean;
  unsubscribe: () => void;
}

// The runtime offers each live event to every subscriber in turn, so remembering the last frame is
// enough to encode once per event; a map keyed by event would keep every cached event's frame alive.
let lastEvent: SessionEvent | undefined;
let lastFrame: Buffer | undefined;

/** The `session/event` frame for an event, encoded once however many subscribers there are. */
export function eventFrame(event: SessionEvent): Buffer {
  if (event !== lastEvent || !lastFrame) {
    lastFrame = encodeFrame({ method: 'session/event', params: event }, LIMITS.maxFrameBytes);
    lastEvent = event;
  }
  return lastFrame;
}

export class SubscriptionHub {
  private readonly byPeer = new Map<string, Map<string, Subscription>>();

  constructor(
    private readonly runtime: Runtime,
    private readonly limits: SubscriptionLimits,
  ) {}

  async subscribe(peer: Peer, sessionId: string, sinceSeq: number): Promise<{ sessionId: string; headSeq: number }> {
    let subs = this.byPeer.get(peer.id);
    if (!subs) this.byPeer.set(peer.id, (subs = new Map()));
    const existing = subs.get(sessionId);
    if (existing) {
      // Resubscribing replaces the old stream (a client resuming after session/lagged does this).
      existing.dropped = true;
      existing.unsubscribe();
      subs.delete(sessionId);
    } else if (subs.size >= this.limits.maxSubscriptionsPerConnection) {
      throw new AstraError('overloaded', `this connection already has ${subs.size} subscriptions; unsubscribe from some first`, {
        limit: this.limits.maxSubscriptionsPerConnection,
      });
    }
    const sub: Subscription = { peer, sessionId, lastSeq: sinceSeq, dropped: false, unsubscribe: () => {} };
    subs.set(sessionId, sub);
    // The runtime replays the backlog after this resolves, then calls onReplayed, then goes live.
    const handle = await this.runtime.subscribe(sessionId, sinceSeq, {
      onEvent: (event: SessionEvent) => this.deliver(sub, event),
      onReplayed: (throughSeq: number) => {
        if (!sub.dropped) peer.notify('session/replayed', { sessionId, throughSeq });
      },
      waitForCapacity: () => this.waitForCapacity(peer),
    });
    sub.unsubscribe = handle.unsubscribe;
    if (sub.dropped) handle.unsubscribe();
    return { sessionId, headSeq: handle.headSeq };
  }

  unsubscribe(peer: Peer, sessionId: string): void {
    const subs = this.byPeer.get(peer.id);
    const sub = subs?.get(sessionId);
    if (!sub) return;
    sub.dropped = true;
    sub.unsubscribe();
    subs!.delete(sessionId);
  }

  /** Drops every subscription of a connection that went away. */
  dropPeer(peer: Peer): void {
    const subs = this.byPeer.get(peer.id);
    if (!subs) return;
    for (const sub of subs.values()) {
      sub.dropped = true;
      sub.unsubscribe();
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

  private deliver(sub: Subscription, event: SessionEvent): void {
    if (sub.dropped || event.seq <= sub.lastSeq) return;
    const conn = sub.peer.conn;
    if (conn.closed) return;
    const frame = eventFrame(event);
    if (conn.queuedBytes > 0 && conn.queuedBytes + frame.length > this.limits.maxQueuedBytes) {
      this.lag(sub);
      return;
    }
    conn.sendFrame(frame);
    sub.lastSeq = event.seq;
  }

  private lag(sub: Subscription): void {
    sub.dropped = true;
    sub.unsubscribe();
    this.byPeer.get(sub.peer.id)?.delete(sub.sessionId);
    // One small notification, sent even over the bound: the client resubscribes from resumeFromSeq.
    sub.peer.notify('session/lagged', { sessionId: sub.sessionId, resumeFromSeq: sub.lastSeq });
  }

  private waitForCapacity(peer: Peer): Promise<void> {
    const conn = peer.conn;
    if (conn.closed || conn.queuedBytes < this.limits.maxQueuedBytes / 2) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (conn.closed || conn.queuedBytes < this.limits.maxQueuedBytes / 2) resolve();
        else setTimeout(check, 5);
      };
      setTimeout(check, 5);
    });
  }
}
