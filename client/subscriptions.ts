// The client's subscriptions, by session (the one owner of that map and of the holds): subscribing,
// holding a stream a slow `for await` loop fell behind on, resubscribing after lag, a hold or a
// reconnect, and resyncing a subscription whose cursor is ahead of the session's head.
import { AstraError, LIMITS, isAstraError, type SessionEvent } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import type { Calls } from './calls.js';
import { checkResult, toAstraError } from './results.js';
import { SubscriptionClosedError } from './errors.js';
import { Subscription, type SubscribeOptions } from './subscription.js';

export interface Resynced {
  sessionId: string;
  /** The seq the subscription had delivered through. */
  lastSeq: number;
  /** The session's head: the subscription goes on from here. */
  headSeq: number;
}

export interface SubscriptionsHost {
  /** The live connection, if the client is connected (holds and resubscriptions use only that). */
  liveConnection(): Connection | undefined;
  whenConnected(): Promise<Connection>;
  noteReceived(): void;
  resynced(event: Resynced): void;
}

export class Subscriptions {
  private readonly subs = new Map<string, Subscription>();
  /** Held subscriptions: the session/unsubscribe that stopped each (see Subscription maxQueuedBytes). */
  private readonly holds = new Map<Subscription, Promise<void>>();

  constructor(
    private readonly host: SubscriptionsHost,
    private readonly calls: Calls,
  ) {}

  get(sessionId: string): Subscription | undefined {
    return this.subs.get(sessionId);
  }

  async subscribe(sessionId: string, opts: SubscribeOptions): Promise<Subscription> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new AstraError('invalid_params', 'subscribe: sessionId must be a non-empty string');
    if (opts.sinceSeq !== undefined && (!Number.isSafeInteger(opts.sinceSeq) || opts.sinceSeq < 0))
      throw new AstraError('invalid_params', `subscribe: sinceSeq must be an integer ≥ 0, got ${String(opts.sinceSeq)}`);
    if (opts.historyLines !== undefined && (!Number.isSafeInteger(opts.historyLines) || opts.historyLines < 1 || opts.historyLines > LIMITS.maxHistoryLines))
      throw new AstraError('invalid_params', `subscribe: historyLines must be an integer 1..${LIMITS.maxHistoryLines}, got ${String(opts.historyLines)}`);
    if (opts.screen !== undefined && typeof opts.screen !== 'boolean') throw new AstraError('invalid_params', `subscribe: screen must be a boolean, got ${String(opts.screen)}`);
    if (opts.maxQueuedBytes !== undefined && !(typeof opts.maxQueuedBytes === 'number' && opts.maxQueuedBytes > 0))
      throw new AstraError('invalid_params', `subscribe: maxQueuedBytes must be a number > 0, got ${String(opts.maxQueuedBytes)}`);
    const existing = this.subs.get(sessionId);
    if (existing && !existing.closed)
      throw new AstraError('invalid_state', `this client is already subscribed to ${sessionId}; close that subscription first (or share it)`, { sessionId });
    const sub = new Subscription(
      sessionId,
      { unsubscribe: (s) => this.unsubscribe(s), hold: (s) => this.hold(s), resume: (s) => this.resubscribe(s) },
      opts,
    );
    // Registered before the request: the backlog may arrive before the answer.
    this.subs.set(sessionId, sub);
    try {
      // A drop mid-request needs no retry: the reconnect resubscribes every registered subscription
      // before calls resume.
      await this.calls.run(
        { method: 'session/subscribe', readOnly: true, sessionId },
        {},
        (conn) => this.send(conn, sub),
        async () => {
          await this.host.whenConnected();
        },
      );
      return sub;
    } catch (e) {
      if (this.subs.get(sessionId) === sub) this.subs.delete(sessionId);
      sub.end(undefined);
      throw e;
    }
  }

  /**
   * session/subscribe from the subscription's lastSeq. A `cursor_ahead` answer (the session lost
   * events this client already delivered) resyncs once: the subscription goes on from the head.
   */
  private async send(conn: Connection, sub: Subscription): Promise<void> {
    for (let resynced = false; ; resynced = true) {
      try {
        const result = checkResult('session/subscribe', await conn.request('session/subscribe', sub.subscribeParams()));
        this.host.noteReceived();
        sub.subscribed(result.headSeq);
        return;
      } catch (e) {
        const headSeq = isAstraError(e, 'cursor_ahead') ? e.data.headSeq : undefined;
        if (resynced || typeof headSeq !== 'number' || !Number.isSafeInteger(headSeq) || headSeq < 0 || headSeq >= sub.lastSeq) throw e;
        const lastSeq = sub.lastSeq;
        sub.resync(headSeq);
        this.host.resynced({ sessionId: sub.sessionId, lastSeq, headSeq });
      }
    }
  }

  /** Stops a held subscription's stream at the daemon; resubscribe() waits for this before subscribing again. */
  private hold(sub: Subscription): void {
    const conn = this.host.liveConnection();
    if (!conn) return; // a reconnect leaves held ones alone
    const stopped = conn.request('session/unsubscribe', { sessionId: sub.sessionId }).then(
      () => undefined,
      () => undefined,
    );
    this.holds.set(sub, stopped);
  }

  /** Subscribes again from lastSeq on the current connection (after lag or a hold); without one, the reconnect does it. */
  resubscribe(sub: Subscription): void {
    const conn = this.host.liveConnection();
    if (this.subs.get(sub.sessionId) !== sub || sub.held || !conn) return;
    const stopped = this.holds.get(sub);
    this.holds.delete(sub);
    void (async () => {
      // The unsubscribe that held it must be done first, or it could cancel this subscribe.
      if (stopped) await stopped;
      if (this.subs.get(sub.sessionId) !== sub || sub.held || conn !== this.host.liveConnection()) return;
      await this.send(conn, sub);
    })().catch((e: unknown) => {
      const err = toAstraError(e);
      if (err.reason === 'connection_closed') return; // the reconnect resubscribes
      this.endOne(sub, err);
    });
  }

  private async unsubscribe(sub: Subscription): Promise<void> {
    this.holds.delete(sub);
    if (this.subs.get(sub.sessionId) !== sub) return;
    this.subs.delete(sub.sessionId);
    const conn = this.host.liveConnection();
    if (!conn) return;
    try {
      await conn.request('session/unsubscribe', { sessionId: sub.sessionId });
    } catch {
      // The connection went away: its subscriptions went with it.
    }
  }

  /** After a reconnect: resumes every live subscription from its lastSeq. */
  async restore(conn: Connection): Promise<void> {
    for (const sub of [...this.subs.values()]) {
      // A held one subscribes again when its loop catches up (on whatever connection is current then).
      if (sub.closed || sub.held) continue;
      try {
        await this.send(conn, sub);
      } catch (e) {
        const err = toAstraError(e);
        if (err.reason === 'connection_closed' || err.reason === 'request_timeout' || err.reason === 'overloaded') throw err;
        this.endOne(sub, err);
      }
    }
  }

  deliver(event: SessionEvent): void {
    this.subs.get(event.sessionId)?.deliver(event);
  }

  /**
   * session/closed, session/invalidated (with resyncFrom): the daemon ended the stream. 'daemon_shutdown' leaves it to the reconnect (it
   * resumes from lastSeq, or ends as the connection does); any other reason ends it, typed.
   */
  closed(sessionId: string, reason: string, resyncFrom?: number): void {
    const sub = this.subs.get(sessionId);
    if (sub && reason !== 'daemon_shutdown') this.endOne(sub, new SubscriptionClosedError(sessionId, reason, resyncFrom));
  }

  /** Ends every subscription (the client closed or gave up). */
  endAll(err: AstraError | undefined): void {
    const subs = [...this.subs.values()];
    this.subs.clear();
    this.holds.clear();
    for (const sub of subs) sub.end(err);
  }

  private endOne(sub: Subscription, err: AstraError): void {
    if (this.subs.get(sub.sessionId) === sub) this.subs.delete(sub.sessionId);
    sub.end(err);
  }
}
