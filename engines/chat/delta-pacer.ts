// The pace of an answer's message.delta events: what arrives in one tick is one event, and after one
// event the next waits until `intervalMs` have passed (text arriving meanwhile joins it). The first of
// an answer, and the first after a pause as long, goes out in the tick its text arrived. Why the
// interval: without it the events of a fast stream are as many as the reads the daemon makes, so the
// faster the daemon reads, the more events every subscriber must wake for. The clock is injected
// (performance.now unless a test drives it); the waits are setImmediate and setTimeout.

export class DeltaPacer {
  private pending = '';
  // One of the two is set while a flush is due. Apart: clearImmediate on a Timeout corrupts Node's
  // immediate queue (it unlinks the timer and miscounts the immediates), and a delta then waits.
  private immediate: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastDelta = -Infinity;
  private readonly flushBound = () => this.flush();
  private readonly scheduleBound = () => this.schedule();

  /** `send` emits one delta's text (its return: false when the journal is behind). */
  constructor(
    private readonly intervalMs: number,
    private readonly send: (text: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Text read from the model: it goes out in this tick, or joins what waits for the interval. */
  push(text: string): void {
    this.pending += text;
    if (!this.immediate && !this.timer) this.schedule();
  }

  /** Sends what waits now (the answer ended or failed) and cancels the wait. */
  flush(): void {
    if (this.immediate) clearImmediate(this.immediate);
    if (this.timer) clearTimeout(this.timer);
    this.immediate = this.timer = undefined;
    if (!this.pending) return;
    this.lastDelta = this.now();
    const text = this.pending;
    this.pending = '';
    this.send(text);
  }

  private schedule(): void {
    const wait = this.lastDelta + this.intervalMs - this.now();
    // setImmediate runs right after the poll phase that read the chunk: no added latency. A timer
    // counts from the event loop's time of this iteration, which can be behind: it may fire early,
    // and then waits the rest.
    this.timer = this.immediate = undefined;
    if (wait > 0) this.timer = setTimeout(this.scheduleBound, Math.ceil(wait));
    else this.immediate = setImmediate(this.flushBound);
  }
}
