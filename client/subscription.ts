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
  /**
   * The session's head was behind `lastSeq` when (re)subscribing (`cursor_ahead`: the daemon lost
   * events this subscription had delivered, e.g. a damaged journal). The subscription goes on from
   * `headSeq`; events after it may carry seqs at or below the old `lastSeq`.
   */
  onResync?: (info: { lastSeq: number; headSeq: number }) => void;
  /** The subscription ended: closed by the app (no error) or failed (the client closed, or gave up reconnecting). */
  onEnd?: (error: AstraError | undefined) => void;
  /**
   * `for await` only: once about this many bytes of events wait for the loop, the client stops the
   * stream at the daemon and picks it up again from lastSeq when the loop has taken three quarters
   * of them — a slow loop costs re-reading, never unbounded memory. Default 32 MiB.
   */
  maxQueuedBytes?: number;
}

const DEFAULT_MAX_QUEUED_BYTES = 32 * 1024 * 1024;

/** What an event takes in the queue, roughly: its output or text, and the object around it. */
function queuedSize(event: SessionEvent): number {
  const d = event.data as { data?: Uint8Array; text?: string } | undefined;
  return 64 + (d?.data?.length ?? 0) + (typeof d?.text === 'string' ? d.text.length : 0);
}

/** What a Subscription needs from its client. */
export interface SubscriptionOwner {
  unsubscribe(sub: Subscription): Promise<void>;
  /** The `for await` loop fell behind by maxQueuedBytes: stop the stream at the daemon (the subscription stays). */
  hold(sub: Subscription): void;
  /** The loop caught up: subscribe again from lastSeq. */
  resume(sub: Subscription): void;
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
  private queuedBytes = 0;
  private readonly maxQueuedBytes: number;
  private holding = false;
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
    this.maxQueuedBytes = opts.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  }

  /** Events received and waiting for the `for await` loop, and roughly how many bytes they take. */
  get queued(): { events: number; bytes: number } {
    return { events: this.queue.length, bytes: this.queuedBytes };
  }

  /** Whether the stream is stopped at the daemon until the `for await` loop catches up (see maxQueuedBytes). */
  get held(): boolean {
    return this.holding;
  }

  /**
   * The seq of the last event this subscription received (delivered, queued for the `for await`
   * loop, or skipped as an unknown type): it resumes after this one. To resume after a restart of
   * your process, persist the seq of the last event you handled.
   */
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
    // While held, what still arrives is dropped: it is read again from lastSeq on resume.
    if (this.ending || this.holding || event.seq <= this.seq) return;
    if (!KNOWN_TYPES.has(event.type)) {
      this.seq = event.seq;
      return;
    }
    if (!this.opts.onEvent && !this.waiter && this.queue.length > 0 && this.queuedBytes + queuedSize(event) > this.maxQueuedBytes) {
      this.holding = true;
      this.owner.hold(this);
      return;
    }
    this.seq = event.seq;
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
      this.queuedBytes += queuedSize(event);
    }
  }

  /** @internal */
  replayed(throughSeq: number): void {
    if (this.ending) return;
    this.replayedThrough = throughSeq;
    this.opts.onReplayed?.(throughSeq);
  }

  /** @internal The session's head is behind lastSeq: go on from the head (see onResync). */
  resync(headSeq: number): void {
    const lastSeq = this.seq;
    this.seq = headSeq;
    try {
      this.opts.onResync?.({ lastSeq, headSeq });
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
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
        if (event) {
          this.queuedBytes -= queuedSize(event);
          if (this.holding && !this.ending && this.queuedBytes <= this.maxQueuedBytes / 4) {
            this.holding = false;
            this.owner.resume(this);
          }
          return Promise.resolve({ value: event, done: false });
        }
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
