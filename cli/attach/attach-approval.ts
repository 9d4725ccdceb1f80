// The clock of the controller's approval prompt in `astra attach`: the time left until the approval's
// deadline (shown in the prompt, redrawn every second), and the short moment after an approval ended
// some other way (it expired, was answered elsewhere, its turn ended) during which a y or n typed in
// reply to the vanished prompt is swallowed and explained instead of landing in the input line.
// Time is read through `now` and timers through `setInterval`, both injectable.

/** How long after a prompt vanished a y/n is taken as its late answer (ASTRA_LATE_KEY_MS overrides). */
export const DEFAULT_LATE_KEY_MS = 2_000;

export interface ApprovalClockOptions {
  refresh: () => void;
  lateKeyMs?: number;
  now?: () => number;
}

/** "45s left", "4m 05s left", "2h 10m left"; "expiring" once the deadline is reached. */
export function timeLeft(expiresAt: number, now: number): string {
  const s = Math.ceil((expiresAt - now) / 1000);
  if (s <= 0) return 'expiring';
  if (s < 60) return `${s}s left`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s left`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m left`;
}

/** ASTRA_LATE_KEY_MS as a number of ms ≥ 0, else the default. */
export function lateKeyMsFrom(env: NodeJS.ProcessEnv): number {
  const v = Number(env.ASTRA_LATE_KEY_MS);
  return env.ASTRA_LATE_KEY_MS !== undefined && env.ASTRA_LATE_KEY_MS !== '' && Number.isFinite(v) && v >= 0 ? v : DEFAULT_LATE_KEY_MS;
}

export class ApprovalClock {
  private expiresAt: number | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private ended: { at: number; why: string } | undefined;
  private readonly now: () => number;
  private readonly lateKeyMs: number;

  constructor(private readonly opts: ApprovalClockOptions) {
    this.now = opts.now ?? Date.now;
    this.lateKeyMs = opts.lateKeyMs ?? DEFAULT_LATE_KEY_MS;
  }

  /** A prompt is shown; with a deadline, the time left is redrawn every second. */
  asked(expiresAt: number | undefined): void {
    this.stop();
    this.ended = undefined;
    this.expiresAt = expiresAt;
    if (expiresAt === undefined) return;
    this.ticker = setInterval(() => this.opts.refresh(), 1_000);
    this.ticker.unref();
  }

  /** The time left for the prompt, or undefined without a deadline. */
  left(): string | undefined {
    return this.expiresAt === undefined ? undefined : timeLeft(this.expiresAt, this.now());
  }

  /** This terminal answered: nothing to explain afterwards. */
  answered(): void {
    this.stop();
    this.ended = undefined;
  }

  /** The prompt went away without this terminal's answer; `why` is said if a y/n follows at once. */
  vanished(why: string): void {
    this.stop();
    this.ended = { at: this.now(), why };
  }

  /**
   * A key typed on the input line: for a y/n within the moment after the prompt vanished, what to
   * say instead of typing it; anything else ends that moment.
   */
  lateKey(key: string): string | undefined {
    const e = this.ended;
    if (!e) return undefined;
    if (this.now() - e.at > this.lateKeyMs || !/^[yYnN]$/.test(key)) {
      this.ended = undefined;
      return undefined;
    }
    return e.why;
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    this.expiresAt = undefined;
  }
}
