// Liveness (docs/protocol.md §7–§8): an idle connection is pinged, so a hung daemon is noticed (and the
// connection dropped, which starts a reconnect) and the daemon does not close a silent client.
import { AstraError, isAstraError } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';

export class Liveness {
  private timer: NodeJS.Timeout | undefined;
  private pinging = false;
  // Whether anything was sent / received since the last tick: flags, not clocks — noting is on the
  // path of every call and every event, and reading a clock there was a tenth of a call's CPU.
  private sent = false;
  private received = false;

  constructor(
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    /** The connection to watch, when there is one. */
    private readonly current: () => Connection | undefined,
  ) {}

  noteSent(): void {
    this.sent = true;
  }

  noteReceived(): void {
    this.received = true;
  }

  /** A new connection: it counts as having sent and received just now. */
  start(): void {
    this.stop();
    this.sent = this.received = true;
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
    // Ping when nothing arrived for a whole interval (is the daemon hung?) or nothing was sent (the
    // daemon closes silent connections).
    const idle = !this.received || !this.sent;
    this.sent = this.received = false;
    if (!idle) return;
    this.pinging = true;
    this.sent = true;
    conn.request('ping', {}, { timeoutMs: this.timeoutMs }).then(
      () => {
        this.pinging = false;
        this.received = true;
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
