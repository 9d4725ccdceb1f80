// Liveness (DESIGN.md §7): an idle connection is pinged, so a hung daemon is noticed (and the
// connection dropped, which starts a reconnect) and the daemon does not close a silent client.
import { AstraError, isAstraError } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';

export class Liveness {
  private timer: NodeJS.Timeout | undefined;
  private pinging = false;
  private lastSentAt = 0;
  private lastReceivedAt = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    /** The connection to watch, when there is one. */
    private readonly current: () => Connection | undefined,
  ) {}

  noteSent(): void {
    this.lastSentAt = Date.now();
  }

  noteReceived(): void {
    this.lastReceivedAt = Date.now();
  }

  /** A new connection: both clocks start now. */
  start(): void {
    this.stop();
    this.lastReceivedAt = this.lastSentAt = Date.now();
    if (this.intervalMs <= 0) return;
    this.timer = setInterval(() => this.pingIfIdle(), this.intervalMs);
    // Pings alone must not keep the host process alive.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private pingIfIdle(): void {
    const conn = this.current();
    if (!conn || conn.closed || this.pinging) return;
    const now = Date.now();
    // Ping when nothing arrived lately (is the daemon hung?) or nothing was sent (the daemon closes silent connections).
    if (now - this.lastReceivedAt < this.intervalMs && now - this.lastSentAt < this.intervalMs) return;
    this.pinging = true;
    this.lastSentAt = now;
    conn.request('ping', {}, { timeoutMs: this.timeoutMs }).then(
      () => {
        this.pinging = false;
        this.lastReceivedAt = Date.now();
      },
      (e: unknown) => {
        this.pinging = false;
        if (isAstraError(e, 'request_timeout') && this.current() === conn) {
          conn.destroy(new AstraError('request_timeout', `the daemon did not answer a ping within ${this.timeoutMs} ms; treating it as gone`));
        }
      },
    );
  }
}
