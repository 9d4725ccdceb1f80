// SubscriptionFeed: one subscriber of one session, and the one owner of where it stands — its
// `state` and `lastSeq`. It replays the backlog page by page (from the session's in-memory tail, or
// the journal), switches to live at a moment when the subscriber has seen everything published (no
// gap, no duplicate), and when the sink refuses a live event it pauses, waits for capacity, replays
// from memory or the journal, and goes live again. Nothing is queued per subscriber meanwhile.
import type { StoredEvent } from '../event-body.js';
import type { RuntimeLogger } from '../logger.js';
import type { ScreenCapture } from '../running-screen.js';
import type { FeedPhase, FeedNotice, SubscriptionSink } from './subscription-sink.js';
import { FLOOD_BYTES, FloodWatch } from './flood-watch.js';
import { DAEMON_BOUNDS } from '../../flow/index.js';

export type { ScreenCapture };
export type { FeedNotice, FeedPhase, SubscribeOptions, SubscriptionHandle, SubscriptionSink } from './subscription-sink.js';

/** What a feed reads from: its session. */
export interface FeedSource {
  readonly id: string;
  readonly logger: RuntimeLogger;
  readonly publishedSeq: number;
  readonly isClosed: boolean;
  readPublished(afterSeq: number, limit: number, maxBytes: number): Promise<StoredEvent[]>;
  /**
   * The running command's screen through the output appended so far (undefined without one).
   * `catchUp`: for a subscriber that fell behind — the screen the last command left if it ended since.
   */
  captureScreen(catchUp?: boolean): Promise<ScreenCapture | undefined>;
  /** A command with a screen is running (absent: never). */
  screenRunning?(): boolean;
  /** The feed moved or stopped needing old events: the tail may evict them. */
  trimTail(): void;
  drop(feed: SubscriptionFeed): void;
}

// The bounds and their reasons: flow/daemon-bounds.ts.
/** A subscriber waiting for capacity this long (and a turn of the event loop) holds no events in the catch-up cache (see waitForCapacity). */
const CATCHUP_STALL_MS = DAEMON_BOUNDS.feedStallMs.value;
const SUBSCRIBE_PAGE_EVENTS = DAEMON_BOUNDS.feedPageEvents.value;
const SUBSCRIBE_PAGE_BYTES = DAEMON_BOUNDS.feedPageBytes.value;
/**
 * A screen subscriber fed a flood of a command's output (flood-watch.ts) gets frames instead: the
 * output is left out and the command's screen comes every FRAME_MS, for as long as the output keeps
 * coming that fast (as tmux redraws its clients at a bounded rate).
 */
const FRAME_MS = DAEMON_BOUNDS.frameMs.value;

/**
 * Where a feed stands. 'replaying': the first backlog; 'live': fed as events are published;
 * 'paused': it refused one (or its screen is due again), re-fed from the backlog until caught up;
 * 'framing': a screen subscriber flooded with output, paused between frames of the screen;
 * 'stalled': waiting for capacity for longer than CATCHUP_STALL_MS in one of the three before
 * (`stalledFrom`), holding nothing in the catch-up cache; 'closed': unsubscribed or dropped.
 */
export type FeedState = 'replaying' | 'live' | 'paused' | 'framing' | 'stalled' | 'closed';
type Replaying = 'replaying' | 'paused' | 'framing';

export class SubscriptionFeed {
  state: FeedState = 'replaying';
  /** While 'stalled': the state it stalled in, and goes back to once the sink takes more. */
  private stalledFrom: Replaying = 'replaying';
  /** The last seq the sink took. */
  lastSeq: number;
  /** A screen to capture before the backlog (screen: true), then to send where the stream reaches its atSeq. */
  private wantScreen: boolean;
  /**
   * Subscribed with screen: true. Such a subscriber that falls behind while a command runs in a
   * pseudo-terminal catches up with the command's current screen instead of every byte it missed
   * (as tmux redraws a slow client): the output in between is left out, the screen comes instead.
   */
  readonly screenSubscriber: boolean;
  /** The screen being captured is a catch-up: its scrollback is not sent again. */
  private catchUp = false;
  /** The screen asked for is sent even if it stands for no output the subscriber lacks (refreshScreen). */
  private forceScreen = false;
  /** Output delivered live, watched for a flood (then it gets frames). */
  private readonly flood: FloodWatch;
  /** While framing: output left out since the last frame (the flood goes on while it is large). */
  private cutBytes = 0;
  /** The replay reached output past the frame's screen while the flood goes on: the next frame is due. */
  private frameDue = false;
  private screen: ScreenCapture | undefined;
  /** While waiting out a frame's time: ends the wait at once (the command ended, its last screen is due). */
  private wakeFrame: (() => void) | undefined;
  /** The running command's output the screen stands for: command.output in (fromSeq, atSeq] is taken without delivering it. */
  private cut: { fromSeq: number; atSeq: number } | undefined;
  private readonly historyFromSeq: number | undefined;

  constructor(
    private readonly source: FeedSource,
    readonly sink: SubscriptionSink,
    sinceSeq: number,
    opts: { screen?: boolean; historyFromSeq?: number | undefined; now?: () => number } = {},
  ) {
    // The flood detector's clock, ms (Date.now unless a test drives it).
    this.flood = new FloodWatch(opts.now ?? Date.now);
    this.lastSeq = sinceSeq;
    this.wantScreen = opts.screen === true;
    this.screenSubscriber = this.wantScreen;
    this.historyFromSeq = opts.historyFromSeq;
  }

  /** Where the feed stands as its handle tells it: 'framing' is 'paused', 'stalled' what it stalled in. */
  get phase(): FeedPhase {
    const s = this.state === 'stalled' ? this.stalledFrom : this.state;
    return s === 'framing' ? 'paused' : s === 'closed' ? 'paused' : s;
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  get stalled(): boolean {
    return this.state === 'stalled';
  }

  /** The oldest seq this feed still needs kept in memory (Infinity when it needs none). */
  get neededSeq(): number {
    return this.state === 'live' || this.state === 'closed' || this.state === 'stalled' ? Infinity : this.lastSeq + 1;
  }

  start(): void {
    setImmediate(() => this.startReplay(false));
  }

  close(): void {
    this.state = 'closed';
  }

  /** A newly published event. */
  offer(e: StoredEvent): void {
    if (this.state === 'closed') return;
    if (this.state !== 'live') {
      if (this.phase === 'paused' && this.sink.onSkipped) this.sink.onSkipped(e.seq, e.bodyLength);
      // Getting frames and the command ended: its last screen goes now, not at the end of the frame's time.
      if (this.wakeFrame && (e.type === 'command.completed' || e.type === 'turn.completed')) this.wakeFrame();
      return;
    }
    if (e.seq <= this.lastSeq) return;
    if (this.deliver(e)) {
      if (this.screenSubscriber && e.type === 'command.output' && !this.closed) this.watchFlood(e.bodyLength);
      return;
    }
    if (this.closed) return;
    this.state = 'paused';
    if (this.screenSubscriber) this.wantScreen = this.catchUp = true;
    this.startReplay(true);
  }

  notice(n: FeedNotice): void {
    if (this.closed || !this.sink.onNotice) return;
    try {
      this.sink.onNotice(n);
    } catch (err) {
      this.source.logger.error({ sessionId: this.source.id, err: (err as Error).message }, 'subscriber threw on a notice');
    }
  }

  /**
   * The running command's terminal changed size: a screen subscriber gets the screen again, in order
   * with the output (as a catch-up: no scrollback), even when it has every byte already.
   */
  refreshScreen(): void {
    if (this.closed || !this.screenSubscriber) return;
    this.wantScreen = this.catchUp = this.forceScreen = true;
    if (this.state !== 'live') return; // the replay under way, or the next one, takes it
    this.state = 'paused';
    this.startReplay(false);
  }

  /** Live output to a screen subscriber: a flood of it turns into frames. */
  private watchFlood(bytes: number): void {
    if (!this.flood.add(bytes) || !this.source.screenRunning?.()) return;
    this.flood.restart();
    this.nextFrame();
  }

  /** Pauses for a frame's time, then catches up with the screen (see FRAME_MS). */
  private nextFrame(): void {
    this.state = 'framing';
    this.wantScreen = this.catchUp = true;
    this.cutBytes = 0;
    // A command that has ended already (its output still being replayed) waits for nothing: its last screen goes at once.
    this.startReplay(true, this.source.screenRunning?.() ? FRAME_MS : 0);
  }

  private startReplay(waitFirst: boolean, delayMs = 0): void {
    this.replay(waitFirst, delayMs).catch((err: Error) => {
      if (this.source.isClosed) return; // the runtime closed under a replay: nothing to report
      this.source.logger.error({ sessionId: this.source.id, err: err.message }, 'subscription replay failed; subscriber dropped');
      this.state = 'closed';
      this.source.drop(this);
      this.sink.onInvalidated?.((err as { reason?: unknown }).reason === 'journal_corrupt' ? 'journal_damage' : 'replay_failed', this.source.publishedSeq);
    });
  }

  /**
   * Feeds the backlog page by page, pausing for capacity, then switches to live (announcing it
   * once). The page after the current one is read while the sink drains, so a subscriber catching
   * up from the journal does not wait for the disk between pages. Seqs may have gaps (a range lost
   * to journal damage): a page's next event is simply the first one past lastSeq.
   */
  private async replay(waitFirst: boolean, delayMs = 0): Promise<void> {
    const src = this.source;
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.wakeFrame?.(), delayMs);
        timer.unref();
        this.wakeFrame = () => {
          clearTimeout(timer);
          this.wakeFrame = undefined;
          resolve();
        };
      });
    }
    if (waitFirst) await this.waitForCapacity();
    if (this.wantScreen) {
      this.wantScreen = false;
      // A catch-up's screen comes without scrollback: the lines that scrolled by while it was behind
      // are in the journal (astra log), not resent.
      const catchUp = this.catchUp;
      const force = this.forceScreen;
      this.catchUp = this.forceScreen = false;
      const cap = await src.captureScreen(catchUp);
      if (this.closed || src.isClosed) return;
      // A screen older than what the subscriber asked to start after stands for nothing it needs.
      if (cap && (cap.atSeq > this.lastSeq || (force && cap.atSeq === this.lastSeq && src.screenRunning?.()))) {
        this.screen = cap;
        this.cut = { fromSeq: Math.max(cap.fromSeq, this.lastSeq), atSeq: cap.atSeq };
      }
    }
    let page: StoredEvent[] = [];
    let at = 0;
    /** The seq page[0] was read after: the page holds every event past it, up to its last. */
    let pageAfter = -1;
    let ahead: Promise<StoredEvent[]> | undefined;
    let aheadAfter = -1;
    const readPage = (afterSeq: number): Promise<StoredEvent[]> => src.readPublished(afterSeq, SUBSCRIBE_PAGE_EVENTS, SUBSCRIBE_PAGE_BYTES);
    /** Skips what the subscriber has; true when page[at] is the very next event it needs. */
    const positioned = (): boolean => {
      while (at < page.length && page[at]!.seq <= this.lastSeq) at++;
      return at < page.length && pageAfter <= this.lastSeq;
    };
    for (;;) {
      if (this.closed || src.isClosed) return;
      if (this.lastSeq >= src.publishedSeq) {
        const announce = this.state === 'replaying';
        // A screen taken past what was published goes now; the rest of its output is cut live.
        if (this.screen) this.sendScreen();
        if (this.closed) return;
        // Frames go on while the output floods: this frame left out more than a flood's worth.
        if (this.state === 'framing') {
          if (this.cutBytes > FLOOD_BYTES && src.screenRunning?.()) {
            this.nextFrame();
            return;
          }
          this.flood.reset();
        }
        this.state = 'live';
        // What was kept in memory for it may go now.
        src.trimTail();
        // A resume after a pause is silent: the subscriber's stream simply goes on.
        if (announce) this.sink.onReplayed?.(this.lastSeq, this.historyFromSeq !== undefined ? { historyFromSeq: this.historyFromSeq } : {});
        return;
      }
      if (!positioned()) {
        const next = ahead;
        ahead = undefined;
        page = next ? await next : [];
        pageAfter = next ? aheadAfter : Infinity;
        at = 0;
        if (!positioned()) {
          pageAfter = this.lastSeq;
          page = await readPage(this.lastSeq);
          at = 0;
        }
        if (this.closed || src.isClosed) return;
      }
      while (at < page.length && this.deliver(page[at]!)) at++;
      if (this.closed) return;
      if (this.frameDue) {
        this.frameDue = false;
        this.nextFrame();
        return;
      }
      if (!ahead && page.length > 0 && page[page.length - 1]!.seq < src.publishedSeq) {
        aheadAfter = page[page.length - 1]!.seq;
        ahead = readPage(aheadAfter);
        // Awaited later (or dropped with the subscription): a failure surfaces there, not as unhandled.
        ahead.catch(() => {});
      }
      await this.waitForCapacity();
    }
  }

  /**
   * Waits until the sink can take more. One that takes nothing for CATCHUP_STALL_MS (a stopped or
   * hung reader) stops holding events in the catch-up cache until it moves again.
   */
  private async waitForCapacity(): Promise<void> {
    if (!this.sink.waitForCapacity) return;
    let waiting = true;
    const timer = setTimeout(() => {
      // Stalled only if it still has no capacity once the event loop has run what was queued
      // before (the capacity the sink may already have): a daemon busy for CATCHUP_STALL_MS is not a
      // reader that stopped.
      setImmediate(() => {
        const s = this.state;
        if (!waiting || (s !== 'replaying' && s !== 'paused' && s !== 'framing')) return;
        this.stalledFrom = s;
        this.state = 'stalled';
        this.source.trimTail();
      });
    }, CATCHUP_STALL_MS);
    timer.unref();
    try {
      await this.sink.waitForCapacity();
    } finally {
      waiting = false;
      clearTimeout(timer);
      if (this.state === 'stalled') this.state = this.stalledFrom;
    }
  }

  private sendScreen(): void {
    const s = this.screen!;
    this.screen = undefined;
    try {
      this.sink.onScreen?.(s);
    } catch (err) {
      this.source.logger.error({ sessionId: this.source.id, err: (err as Error).message }, 'subscriber threw on a screen; unsubscribing it');
      this.state = 'closed';
      this.source.drop(this);
    }
  }

  /**
   * True when the sink took the event (lastSeq advances); false when it refused it or threw. Output
   * the subscriber's screen stands for is taken without reaching the sink; the screen itself goes
   * just before the first event after it.
   */
  private deliver(e: StoredEvent): boolean {
    const cut = this.cut;
    if (cut) {
      if (e.seq > cut.atSeq && this.state === 'framing' && e.type === 'command.output' && this.cutBytes > FLOOD_BYTES) {
        // Output past this frame's screen, and the flood goes on: it waits for the next frame.
        if (this.screen) this.sendScreen();
        this.cut = undefined;
        if (!this.closed) this.frameDue = true;
        return false;
      }
      if (e.seq > cut.atSeq) {
        this.cut = undefined;
        if (this.screen) this.sendScreen();
        if (this.closed) return false;
      } else if (e.seq > cut.fromSeq && e.type === 'command.output') {
        this.lastSeq = e.seq;
        this.cutBytes += e.bodyLength;
        return true;
      }
    }
    try {
      const sink = this.sink;
      if ((sink.onStored ? sink.onStored(e) : sink.onEvent!(e.event)) === false) return false;
    } catch (err) {
      this.source.logger.error({ sessionId: this.source.id, err: (err as Error).message }, 'subscriber threw; unsubscribing it');
      this.state = 'closed';
      this.source.drop(this);
      return false;
    }
    this.lastSeq = e.seq;
    return true;
  }
}
