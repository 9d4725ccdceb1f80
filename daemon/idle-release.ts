// When a quiet daemon gives memory back (docs/operations.md; bench/soak.md). After a burst of traffic
// the process keeps memory it no longer uses: garbage V8 does not collect because an idle daemon
// allocates nothing, and free memory glibc's malloc keeps in its arenas (the screen worker's and
// libuv's threads have their own). Once nothing has happened for `afterMs` — no request other than a
// ping, no connection opened or closed, no turn running — the watchdog's housekeeping tick runs one
// full GC, and on the next tick (the GC's freed buffers are released by then) malloc_trim(0). Once
// per quiet spell; again after idle sessions are closed in it. Pure policy: the clock, the GC, the
// trim and the RSS are injected.
import type { Logger } from './logger.js';
import type { MallocTrim } from './release-memory.js';

export interface IdleReleaseOptions {
  /** Quiet this long before releasing; 0 = never. */
  afterMs: number;
  now: () => number;
  log: Logger;
  gc: () => void;
  /** Called once, on the first release: malloc_trim or why there is none. */
  loadTrim: () => MallocTrim;
  rss?: () => number;
}

const mib = (bytes: number) => Math.round(bytes / 1048576);

export class IdleRelease {
  private lastActivityAt: number;
  private phase: 'waiting' | 'collected' | 'done' = 'waiting';
  private trim: MallocTrim | undefined;
  private rssBefore = 0;
  private gcMs = 0;
  /** Completed releases (a GC, then the trim where there is one). */
  releases = 0;

  constructor(private readonly o: IdleReleaseOptions) {
    this.lastActivityAt = o.now();
  }

  /** Something happened (a request, a connection came or went): the quiet spell starts again. */
  activity(): void {
    this.lastActivityAt = this.o.now();
    this.phase = 'waiting';
  }

  /** Memory became garbage while quiet (idle sessions were closed): release once more. */
  again(): void {
    if (this.phase === 'done') this.phase = 'waiting';
  }

  /** The housekeeping tick. `busy`: a turn is running, which counts as activity. */
  tick(busy: boolean): void {
    if (this.o.afterMs === 0) return;
    if (busy) return this.activity();
    if (this.phase === 'done' || this.o.now() - this.lastActivityAt < this.o.afterMs) return;
    const rss = this.o.rss ?? (() => process.memoryUsage.rss());
    if (this.phase === 'waiting') {
      this.rssBefore = rss();
      const t0 = performance.now();
      this.o.gc();
      this.gcMs = Math.round(performance.now() - t0);
      this.phase = 'collected';
      return;
    }
    this.phase = 'done';
    this.trim ??= this.loadTrim();
    const t0 = performance.now();
    let trimmed: boolean | 'unavailable' = 'unavailable';
    if (this.trim.ok) {
      try {
        trimmed = this.trim.trim();
      } catch (e) {
        this.o.log.debug({ err: e }, 'malloc_trim failed; idle releases run the GC only from now on');
        this.trim = { ok: false, why: 'it failed' };
      }
    }
    this.releases++;
    this.o.log.debug(
      { quietMs: this.o.afterMs, rssBeforeMiB: mib(this.rssBefore), rssAfterMiB: mib(rss()), gcMs: this.gcMs, trimMs: Math.round(performance.now() - t0), trimmed },
      'idle: gave memory back (a full GC, then malloc_trim)',
    );
  }

  private loadTrim(): MallocTrim {
    const t = this.o.loadTrim();
    if (!t.ok) this.o.log.debug({ why: t.why }, 'malloc_trim is unavailable; idle releases run the GC only');
    return t;
  }
}
