// A level and its marks: the one primitive of flow control. A level is an amount that waits at one
// layer (bytes queued in a socket, bytes not yet written to the journal, bytes not yet parsed by a
// screen); its owner reads it on demand. `wait(below)` resolves once the level is below a mark;
// the owner calls `check()` whenever the level may have dropped, and `release()` when it closes.
// No timers and no clock: what moves the level is the owner's business.

/** A bad mark: not a positive number, or a low mark above its high mark. */
export class MarkError extends RangeError {
  readonly code = 'bad_mark';
  constructor(message: string) {
    super(message);
    this.name = 'MarkError';
  }
}

/**
 * A layer's two marks: at or over `high` the layer is full (its producer is held); it has drained
 * once the level is below `low` (its producer goes on). `low === high` is a layer without hysteresis.
 */
export interface Marks {
  readonly high: number;
  readonly low: number;
}

/** Marks checked: both positive and finite, low ≤ high. `low` defaults to `high`. */
export function marks(high: number, low: number = high): Marks {
  if (!Number.isFinite(high) || high <= 0) throw new MarkError(`a high mark must be a positive number, not ${high}`);
  if (!Number.isFinite(low) || low <= 0) throw new MarkError(`a low mark must be a positive number, not ${low}`);
  if (low > high) throw new MarkError(`the low mark (${low}) is above the high mark (${high})`);
  return { high, low };
}

interface Waiter {
  below: number;
  resolve: () => void;
}

export class Level {
  private waiters: Waiter[] = [];
  private released = false;

  /** `read`: the level now (called by wait and check, never on a timer). */
  constructor(private readonly read: () => number) {}

  /** The level now. */
  get value(): number {
    return this.read();
  }

  /** Waits not resolved yet. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Whether release() was called. */
  get isReleased(): boolean {
    return this.released;
  }

  /** True when the level is at or over `m.high`: the layer is full. */
  full(m: Marks): boolean {
    return this.read() >= m.high;
  }

  /**
   * Resolves once the level is below `below` — at once when it is already, or after release() —
   * else at the first check() that finds it so. Waits resolve in the order they were made.
   */
  wait(below: number): Promise<void> {
    if (Number.isNaN(below)) throw new MarkError('a wait needs a mark, not NaN');
    if (this.released || this.read() < below) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ below, resolve }));
  }

  /** Resolves, in order, every wait whose mark the level is now below (every wait after release()). */
  check(): void {
    if (this.waiters.length === 0) return;
    const level = this.released ? -Infinity : this.read();
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (level < w.below) w.resolve();
      else this.waiters.push(w);
    }
  }

  /**
   * The layer is closing: every later wait resolves at once, and every wait made before resolves at
   * the next check() (call check() too to let them go now).
   */
  release(): void {
    this.released = true;
  }
}
