// Spread (a streaming answer to many subscribers): every subscriber woken at once for each
// message.delta — in the tick the daemon read it from the model — takes the cores from the model
// server and the daemon on a machine with fewer cores than subscribers (bench/REPORT.md, "Spread").
// So a session's first subscription gets offset 0 (a lone subscriber is never held) and each later
// one an offset of 1..SPREAD_MS ms, in turn: a live message.delta waits in that subscriber's batch
// for its offset while the answer streams — the answer's first delta, and one after SPREAD_QUIET_MS
// without any, goes at once — and any other event for it (message.completed, turn.completed, ...)
// sends the held deltas and itself at once. Order is unchanged; a subscriber may see an answer's
// intermediate deltas up to SPREAD_MS ms later, never its first or its end. The hub
// (subscriptions.ts) holds and sends; this file decides.
import type { StoredEvent } from '../runtime/index.js';
import { DAEMON_BOUNDS } from '../flow/index.js';

/** A session's later subscribers get a streaming answer's deltas 1..SPREAD_MS ms late, in turn. */
export const SPREAD_MS = DAEMON_BOUNDS.spreadMs.value;
/** A message.delta this long after the subscriber's previous one goes at once (the answer's first, or after a pause). */
export const SPREAD_QUIET_MS = DAEMON_BOUNDS.spreadQuietMs.value;

/** The spread offset of a session's subscription that comes after `others`. */
export function spreadOffset(others: number): number {
  return others === 0 ? 0 : 1 + ((others - 1) % SPREAD_MS);
}

/** One subscriber's side of the spread: when its last live delta came, by the hub's clock. */
export interface SpreadState {
  lastDeltaAt: number;
}

/**
 * Whether `event` is a live message.delta of an answer streaming to this subscriber (not its first,
 * nor one after a quiet spell): then it is held for the subscriber's offset. `now` is the hub's
 * clock, ms (performance.now unless a test drives it).
 */
export function holdsDelta(state: SpreadState, event: StoredEvent, now: number): boolean {
  if (!event.isLive || event.type !== 'message.delta') return false;
  const streaming = now - state.lastDeltaAt < SPREAD_QUIET_MS;
  state.lastDeltaAt = now;
  return streaming;
}
