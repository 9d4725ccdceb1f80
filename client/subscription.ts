// One session's event stream as the application sees it: an async iterable (or callbacks) that
// delivers each event exactly once, in seq order, across reconnects, lag and daemon restarts.
import { AstraError, EVENT_DATA, type SessionEvent } from '../protocol/index.js';

export interface SubscribeOptions {
  /** Deliver events after this seq (a persisted `lastSeq` resumes exactly where the app stopped). Default 0: everything. */
  sinceSeq?: number;
  /** Callback form: each event is handed here instead of being queued for `for await`. */
  onEvent?: (event: SessionEvent) => void;
  /** The backlog up to `throughSeq` has been delivered; what follows is live. Called again after each resubscription. */
  onReplayed?: (throughSeq: number) => void;
  /** The subscription ended: closed by the app (no error) or failed (the client closed, or gave up reconnecting). */
  onEnd?: (error: AstraError | undefined) => void;
}

/** What a Subscription needs from its client. */
export interface SubscriptionOwner {
  unsubscribe(sub: Subscription): Promise<void>;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.keys(EVENT_DATA));

export class Subscription implements AsyncIterable<SessionEvent> {
  readonly sessionId: string;
  /** The session's head seq when the daemon (last) accepted the subscription. */
  headSeq = 0;
  /** Through which seq the backlog has been replayed, once `session/replayed` arrived. */
  replayedThrough: number | undefined;
  /** How often the daemon dropped this stream for falling behind (session/lagged); each time it was resumed from lastSeq. */
  lagCount = 0;

  private seq: number;
  private readonly queue: SessionEvent[] = [];
  private waiter: { resolve: (r: IteratorResult<SessionEvent>) => void; reject: (e: AstraError) => void } | undefined;
  private iterating = false;
  private ending: { error: AstraError | undefined } | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    sessionId: string,
    private readonly owner: SubscriptionOwner,
    private readonly opts: SubscribeOptions = {},
  ) {
    this.sessionId = sessionId;
    this.seq = opts.sinceSeq ?? 0;
  }

  /** The seq of the last event this subscription delivered (or skipped as an unknown type). Persist it to resume later. */
  get lastSeq(): number {
    return this.seq;
  }

  get closed(): boolean {
    return this.ending !== undefined;
  }

  /** Stops the stream: sends session/unsubscribe and ends any `for await` loop. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.end(undefined);
    this.closing = this.owner.unsubscribe(this).catch(() => undefined);
    return this.closing;
  }

  /**
   * @internal Called by the client for each `session/event`. Drops what was already delivered, so
   * a resubscription from lastSeq can never duplicate. Unknown event types (a newer daemon) advance
   * lastSeq but are not delivered.
   */
  deliver(event: SessionEvent): void {
    if (this.ending || event.seq <= this.seq) return;
    this.seq = event.seq;
    if (!KNOWN_TYPES.has(event.type)) return;
    if (this.opts.onEvent) {
      try {
        this.opts.onEvent(event);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
      return;
    }
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: event, done: false });
    } else {
      this.queue.push(event);
    }
  }

  /** @internal */
  replayed(throughSeq: number): void {
    if (this.ending) return;
    this.replayedThrough = throughSeq;
    this.opts.onReplayed?.(throughSeq);
  }

  /** @internal Ends the stream; queued events are still handed out, then the loop ends (or throws `error`). */
  end(error: AstraError | undefined): void {
    if (this.ending) return;
    this.ending = { error };
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      if (error) w.reject(error);
      else w.resolve({ value: undefined, done: true });
    }
    try {
      this.opts.onEnd?.(error);
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    if (this.opts.onEvent)
      throw new AstraError('invalid_state', 'this subscription delivers to its onEvent callback; subscribe without onEvent to use for await');
    if (this.iterating) throw new AstraError('invalid_state', 'a subscription can be iterated by one loop at a time; subscribe again for a second view');
    this.iterating = true;
    return {
      next: () => {
        const event = this.queue.shift();
        if (event) return Promise.resolve({ value: event, done: false });
        if (this.ending) {
          return this.ending.error ? Promise.reject(this.ending.error) : Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
      },
      // `break` (or an exception) in the loop lands here: unsubscribe before the loop moves on.
      return: async () => {
        this.iterating = false;
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }
}
