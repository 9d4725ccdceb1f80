// What a subscriber of a session gives and gets (runtime/feed/subscription-feed.ts feeds it): the options
// of a subscription, the sink that takes its events, and the handle that says where it stands.
import type { SessionEvent } from '../../protocol/index.js';
import type { StoredEvent } from '../event-body.js';
import type { ScreenCapture } from '../running-screen.js';

/** What a subscriber may ask for beyond sinceSeq (the wire's session/subscribe options). */
export interface SubscribeOptions {
  /**
   * If a command is running in a pseudo-terminal: its current screen (onScreen) instead of its
   * output so far — the turn's command.output after its command.started through the screen's atSeq
   * is never delivered to this subscription, neither in the backlog nor live.
   */
  screen?: boolean;
  /** Without sinceSeq: start the backlog at a turn so that finished turns' output in it is about this many lines (SessionState.historyStart). */
  historyLines?: number;
}

/** 'replaying': the first backlog; 'live': fed as events are published; 'paused': refused one, re-fed from the backlog until caught up. */
export type FeedPhase = 'replaying' | 'live' | 'paused';

/** Something a subscriber is told that is not an event (no event could carry it). */
export interface FeedNotice {
  sessionId: string;
  /** 'disk_full': the session's events cannot be written, so none are published until there is space; 'disk_ok': they are again. */
  reason: 'disk_full' | 'disk_ok';
  message: string;
  path?: string;
}

export interface SubscriptionSink {
  /**
   * Returning false refuses the event (the sink is full): the subscription pauses, and once
   * waitForCapacity resolves it is fed again from this event on, from memory or the journal, then
   * switched back to live without a gap. Nothing is queued per subscriber meanwhile.
   */
  onEvent?(e: SessionEvent): boolean | void;
  /**
   * Instead of onEvent (a sink has one of the two; same contract): the event as stored, with its
   * encoded body; an event read back from the journal is then never decoded unless the sink asks.
   */
  onStored?(e: StoredEvent): boolean | void;
  waitForCapacity?(): Promise<void>;
  /**
   * Called once the backlog has been delivered; live events follow. Not called again after a pause.
   * `historyFromSeq`: with historyLines, the events before this seq were left out.
   */
  onReplayed?(throughSeq: number, info: { historyFromSeq?: number }): void;
  /**
   * With `screen: true` and a command running in a pseudo-terminal: its screen, standing for its
   * command.output through `atSeq`. Called where the stream reaches atSeq — before any event after
   * it, and before onReplayed — so normally right after the backlog.
   */
  onScreen?(s: ScreenCapture): void;
  /** A published event a paused subscription did not get live (it will be replayed); `bytes` is its encoded size. */
  onSkipped?(seq: number, bytes: number): void;
  /** See FeedNotice. */
  onNotice?(n: FeedNotice): void;
  /**
   * The feed could not go on (`reason` 'journal_damage': its backlog could not be read back) and was
   * dropped; events after `resyncFrom` (the head then) can be subscribed to again.
   */
  onInvalidated?(reason: string, resyncFrom: number): void;
}

/** A subscriber's side of its feed: where it stands (the feed is the one owner of both), and the way out. */
export interface SubscriptionHandle {
  /** The session's head when the subscription was made. */
  readonly headSeq: number;
  readonly phase: FeedPhase;
  /** The last seq the sink took. */
  readonly lastSeq: number;
  unsubscribe(): void;
}
