// One session's event stream as the application sees it: an async iterable (or callbacks) that
// delivers each event exactly once, in seq order, across reconnects, lag and daemon restarts.
import { AstraError, EVENT_DATA, type ServerNotificationParams, type SessionEvent } from '../protocol/index.js';
import { CLIENT_BOUNDS, type Marks } from '../flow/index.js';

/** A running command's screen (session/screen): draw `data` on a cleared terminal of cols × rows. */
export type ScreenSnapshot = ServerNotificationParams<'session/screen'>;

export interface SubscribeOptions {
  /** Deliver events after this seq (a persisted `lastSeq` resumes exactly where the app stopped). Default 0: everything. */
  sinceSeq?: number;
  /** Callback form: each event is handed here instead of being queued for `for await`. */
  onEvent?: (event: SessionEvent) => void;
  /**
   * Only with the first subscribe (a resubscription after a reconnect, lag or hold goes on from
   * lastSeq without it): if a command is running in a pseudo-terminal, its current screen comes to
   * onScreen instead of its output so far — that turn's command.output through the screen's atSeq
   * is never delivered. Without onScreen the screen is dropped (and that output with it).
   */
  screen?: boolean;
  /**
   * Only with the first subscribe and without sinceSeq: the backlog starts at a turn such that
   * finished turns' output in it is about this many lines (1..100000); onReplayed's
   * `historyFromSeq` then says before which seq events were left out.
   */
  historyLines?: number;
  /**
   * The running command's screen (see `screen`): called where the stream reaches its atSeq, after
   * the events before it and before onReplayed. With onEvent the order is exact; a `for await` loop
   * may still hold events from before it.
   */
  onScreen?: (screen: ScreenSnapshot) => void;
  /**
   * The backlog up to `throughSeq` has been delivered; what follows is live. Called again after each
   * resubscription. `info.historyFromSeq` (first subscribe with historyLines): events before it were left out.
   */
  onReplayed?: (throughSeq: number, info: { historyFromSeq?: number }) => void;
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

const DEFAULT_MAX_QUEUED_BYTES = CLIENT_BOUNDS.subscriptionUnread.value;

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

/**
 * Where a subscription stands. 'starting': its first session/subscribe is not accepted yet (the
 * screen and history options go with it); 'streaming': events arrive; 'held': the `for await`
 * loop fell behind by maxQueuedBytes, the stream is stopped at the daemon until the loop has taken
 * three quarters of them; 'ended': closed or ended by the client (`for await` still gets what was
 * queued).
 */
export type SubscriptionState = 'starting' | 'streaming' | 'held' | 'ended';

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
  /** The queue's marks: held at `high` (maxQueuedBytes), streaming again at `low` (a quarter of it). */
  private readonly queueMarks: Marks;
  private stateNow: SubscriptionState = 'starting';
  /** Once 'ended': why (undefined for a clean end). */
  private endError: AstraError | undefined;
  private waiter: { resolve: (r: IteratorResult<SessionEvent>) => void; reject: (e: AstraError) => void } | undefined;
  /** A `for await` loop has the iterator. */
  private iterating = false;
  private closing: Promise<void> | undefined;
  /** The output the last screen stands for: that turn's command.output up to atSeq is dropped (a resubscription from lastSeq sends it again). */
  private cut: { turnId: string; atSeq: number } | undefined;
  /**
   * Per turn whose turn.started was delivered, the message.delta texts delivered since then or
   * since its last message.completed: the text of a message.completed the daemon sent without it
   * (session/subscribe textFromDeltas, which this client always asks for).
   */
  private readonly deltaTexts = new Map<string, string[]>();

  constructor(
    sessionId: string,
    private readonly owner: SubscriptionOwner,
    private readonly opts: SubscribeOptions = {},
  ) {
    this.sessionId = sessionId;
    this.seq = opts.sinceSeq ?? 0;
    const high = opts.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.queueMarks = { high, low: high / 4 };
  }

  get state(): SubscriptionState {
    return this.stateNow;
  }

  /** Events received and waiting for the `for await` loop, and roughly how many bytes they take. */
  get queued(): { events: number; bytes: number } {
    return { events: this.queue.length, bytes: this.queuedBytes };
  }

  /** Whether the stream is stopped at the daemon until the `for await` loop catches up (see maxQueuedBytes). */
  get held(): boolean {
    return this.stateNow === 'held';
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
    return this.stateNow === 'ended';
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
    if (this.stateNow === 'ended' || this.stateNow === 'held' || event.seq <= this.seq) return;
    const cut = this.cut;
    if (cut) {
      if (event.seq > cut.atSeq) this.cut = undefined;
      else if (event.type === 'command.output' && event.data.turnId === cut.turnId) {
        this.seq = event.seq;
        return;
      }
    }
    if (!KNOWN_TYPES.has(event.type)) {
      this.seq = event.seq;
      return;
    }
    if (!this.opts.onEvent && !this.waiter && this.queue.length > 0 && this.queuedBytes + queuedSize(event) > this.queueMarks.high) {
      this.stateNow = 'held';
      this.owner.hold(this);
      return;
    }
    this.seq = event.seq;
    if (this.deltaTexts.size > 0 || event.type === 'turn.started' || event.type === 'message.completed') {
      const whole = this.withText(event);
      if (!whole) return;
      event = whole;
    }
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

  /**
   * Keeps the delta texts of the turns whose start was delivered, and gives a message.completed
   * sent without its text (textFromDeltas) its text back: the app always sees the whole event.
   * undefined (the stream ended) when the daemon sent one without the deltas it stands for.
   */
  private withText(event: SessionEvent): SessionEvent | undefined {
    switch (event.type) {
      case 'turn.started':
        this.deltaTexts.set(event.data.turnId, []);
        return event;
      case 'message.delta':
        this.deltaTexts.get(event.data.turnId)?.push(event.data.text);
        return event;
      case 'message.completed': {
        const parts = this.deltaTexts.get(event.data.turnId);
        if (parts) this.deltaTexts.set(event.data.turnId, []);
        if (event.data.textFromDeltas !== true) return event;
        if (!parts) {
          this.end(new AstraError('internal_error', `the daemon sent message.completed (seq ${event.seq}) without its text, but this subscription did not get the deltas it stands for; subscribe again from seq ${event.seq - 1}`));
          return undefined;
        }
        const { textFromDeltas: _, ...data } = event.data;
        // Concatenated, not joined: V8 keeps the pieces until the text is read (a long answer's
        // copy is made only by an app that reads it).
        let text = '';
        for (const p of parts) text += p;
        return { ...event, data: { ...data, text } };
      }
      case 'turn.completed':
        this.deltaTexts.delete(event.data.turnId);
        return event;
      default:
        return event;
    }
  }

  /** @internal What session/subscribe asks for now: the screen and history options only the first time. */
  subscribeParams(): { sessionId: string; sinceSeq: number; screen?: boolean; historyLines?: number; textFromDeltas: true } {
    const p: { sessionId: string; sinceSeq: number; screen?: boolean; historyLines?: number; textFromDeltas: true } = { sessionId: this.sessionId, sinceSeq: this.seq, textFromDeltas: true };
    if (this.stateNow === 'starting') {
      if (this.opts.screen === true) p.screen = true;
      if (this.opts.historyLines !== undefined && this.seq === 0) p.historyLines = this.opts.historyLines;
    }
    return p;
  }

  /** @internal The daemon accepted a subscribe: later ones go on from lastSeq, without screen or history options. */
  subscribed(headSeq: number): void {
    this.headSeq = headSeq;
    if (this.stateNow === 'starting') this.stateNow = 'streaming';
  }

  /** @internal A session/screen for this subscription. */
  screen(s: ScreenSnapshot): void {
    // A screen at the seq already delivered is the same output drawn again (the terminal's size changed).
    if (this.stateNow === 'ended' || s.atSeq < this.seq) return;
    this.cut = { turnId: s.turnId, atSeq: s.atSeq };
    if (!this.opts.onScreen) return;
    try {
      this.opts.onScreen(s);
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
  }

  /** @internal */
  replayed(throughSeq: number, historyFromSeq?: number): void {
    if (this.stateNow === 'ended') return;
    this.replayedThrough = throughSeq;
    this.opts.onReplayed?.(throughSeq, historyFromSeq !== undefined ? { historyFromSeq } : {});
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
    if (this.stateNow === 'ended') return;
    this.stateNow = 'ended';
    this.endError = error;
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
          if (this.stateNow === 'held' && this.queuedBytes <= this.queueMarks.low) {
            this.stateNow = 'streaming';
            this.owner.resume(this);
          }
          return Promise.resolve({ value: event, done: false });
        }
        if (this.stateNow === 'ended') {
          return this.endError ? Promise.reject(this.endError) : Promise.resolve({ value: undefined, done: true });
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
