// The connection of one `astra attach` to the daemon, as the user sees it: lost, reconnecting,
// reconnected, stopped on purpose. After a deliberate stop (`astra daemon stop`) nothing reconnects
// by itself — but a daemon started elsewhere meanwhile (`astra daemon start`, another client) is
// noticed from the discovery record and the view reattaches to it on its own, resuming its stream
// from the last seq it saw; Enter starts one from here. The daemon's notices about the session (a full
// disk: session/notice) are shown here too, since the stream then looks stopped.
import { readRecord, resolvePaths } from '../../discovery/index.js';
import type { AstraClient } from '../../client/index.js';
import type { AttachControl } from './attach-control.js';

export type ConnectionState = 'connected' | 'reconnecting' | 'stopped';

export interface ConnectionHost {
  readonly id: string;
  readonly client: AstraClient;
  readonly control: AttachControl;
  readonly isController: boolean;
  readonly opts: { observe?: boolean };
  notice(text: string, colour?: 'green' | 'yellow' | 'red' | 'cyan'): void;
  refresh(): void;
  end(code: number, lines: string[]): Promise<void>;
}

/** How often the discovery record is looked at while the daemon is stopped (a stat and a small read). */
const RECORD_POLL_MS = 500;

export class AttachConnection {
  state: ConnectionState = 'connected';
  /** The session's journal cannot be written (session/notice disk_full): its path, until disk_ok. */
  diskFull: string | undefined;
  private watch: NodeJS.Timeout | undefined;
  private resuming = false;
  private readonly recordPath: string;

  constructor(
    private readonly host: ConnectionHost,
    env: NodeJS.ProcessEnv,
  ) {
    this.recordPath = resolvePaths(env).recordPath;
  }

  /** The daemon was stopped on purpose; Enter starts it again, Ctrl-D leaves. */
  get daemonStopped(): boolean {
    return this.state === 'stopped';
  }

  /** Listens to the client; returns what undoes it. */
  wire(): () => void {
    const c = this.host.client;
    const offs = [
      c.on('disconnected', ({ daemonShuttingDown }) => {
        this.state = 'reconnecting';
        this.host.notice(`connection to the daemon lost${daemonShuttingDown ? ' (it is shutting down)' : ''}; reconnecting…`, 'yellow');
        this.host.refresh();
      }),
      // daemonRestarted comes just before reconnected, which says it in the same line.
      c.on('reconnected', ({ daemonRestarted, daemonPid }) => {
        this.state = 'connected';
        this.host.notice(`reconnected${daemonRestarted ? ` to a restarted daemon (pid ${daemonPid})` : ''}${this.host.isController ? '; still the controller' : ''}`, 'green');
        this.host.refresh();
      }),
      c.on('leaseLost', (info) => this.host.control.onLeaseLost(info)),
      c.on('leaseReclaimed', ({ lease }) => this.host.control.onLeaseReclaimed(lease)),
      // A deliberate stop stays a stop: the client does not respawn the daemon; this terminal asks,
      // and watches for a daemon started elsewhere.
      c.on('stopped', () => {
        this.state = 'stopped';
        this.host.notice('the daemon was stopped (astra daemon stop); press Enter to start it and reattach, or Ctrl-D to leave (a daemon started elsewhere is reattached to by itself)', 'yellow');
        this.host.refresh();
        this.watchRecord(c.instanceId);
      }),
      c.on('notice', (n) => {
        if (n.sessionId !== this.host.id) return;
        if (n.reason === 'disk_full') {
          this.diskFull = n.path ?? 'the disk holding the daemon\'s data directory';
          this.host.notice(diskFullText(this.diskFull), 'red');
        } else if (n.reason === 'disk_ok' && this.diskFull !== undefined) {
          this.diskFull = undefined;
          this.host.notice('the disk has space again: the session\'s events are saved and arrive again', 'green');
        } else return;
        this.host.refresh();
      }),
      c.on('error', (e) => {
        if (c.state === 'closed') void this.host.end(1, [`astra: ${e.message}`]);
      }),
    ];
    return () => {
      this.stopWatching();
      for (const off of offs) off();
    };
  }

  /** Enter after a deliberate stop: start a daemon (or reach one started meanwhile) and reattach. */
  restartDaemon(): void {
    void this.resume('starting the daemon…');
  }

  private watchRecord(stoppedInstanceId: string): void {
    this.stopWatching();
    this.watch = setInterval(() => {
      let record;
      try {
        record = readRecord(this.recordPath);
      } catch {
        return; // a record being replaced, or a bad one: the next look, or Enter, settles it
      }
      if (!record || record.instanceId === stoppedInstanceId) return;
      this.stopWatching();
      void this.resume(`a daemon was started elsewhere (pid ${record.pid}); reattaching…`);
    }, RECORD_POLL_MS);
    this.watch.unref();
  }

  private stopWatching(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  private async resume(what: string): Promise<void> {
    if (this.resuming || this.state !== 'stopped') return;
    this.resuming = true;
    this.stopWatching();
    const h = this.host;
    const wasController = h.isController;
    this.state = 'reconnecting';
    h.notice(what, 'yellow');
    h.refresh();
    try {
      // Leases and the subscription come back as after any reconnect: from the last seq seen.
      await h.client.resume({ timeoutMs: 30_000 });
    } catch (e) {
      await h.end(1, [`astra: could not reach the daemon again: ${e instanceof Error ? e.message : String(e)}`]);
      return;
    } finally {
      this.resuming = false;
    }
    this.state = 'connected';
    h.refresh();
    // A lease the new daemon could not reclaim was reported lost: ask for control as attaching does.
    if (wasController && !h.isController && !h.opts.observe) await h.control.tryAcquire(false, false);
  }
}

/** What a full disk means for the user, in one line (the status line and the notice). */
export function diskFullText(path: string): string {
  return `disk full: the session's events cannot be saved — free space on ${path}; nothing is lost, it resumes by itself`;
}
