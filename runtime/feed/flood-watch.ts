// The flood detector of a screen subscriber's feed (subscription-feed.ts): output delivered live is
// counted over a window of the injected clock; past the flood's bytes within it, the subscriber gets
// frames of the screen instead of the output. The bounds and their reasons: flow/daemon-bounds.ts
// (floodWindowMs, floodBytes).
import { DAEMON_BOUNDS } from '../../flow/index.js';

export const FLOOD_WINDOW_MS = DAEMON_BOUNDS.floodWindowMs.value;
export const FLOOD_BYTES = DAEMON_BOUNDS.floodBytes.value;

export class FloodWatch {
  /** When the current window started, by the clock (ms). */
  private since = 0;
  private bytes = 0;

  /** `now`: the clock, ms (Date.now unless a test drives it). */
  constructor(private readonly now: () => number) {}

  /** Counts output delivered now; true when the window holds more than a flood's bytes. */
  add(bytes: number): boolean {
    const now = this.now();
    if (now - this.since > FLOOD_WINDOW_MS) {
      this.since = now;
      this.bytes = 0;
    }
    this.bytes += bytes;
    return this.bytes > FLOOD_BYTES;
  }

  /** The flood turned into frames: count afresh within the window. */
  restart(): void {
    this.bytes = 0;
  }

  /** The flood is over: the next output starts a new window. */
  reset(): void {
    this.since = 0;
  }
}
