// One connected client, as the daemon sees it.
import type { Connection } from '../ipc/index.js';

export interface PeerInfo {
  name: string;
  version: string;
  pid?: number;
}

export class Peer {
  readonly id: string;
  readonly conn: Connection;
  readonly connectedAt: number;
  info: PeerInfo | undefined;
  /** initialize answered; requests still wait for the `initialized` notification. */
  authenticated = false;
  initialized = false;
  inFlight = 0;
  lastSeenAt: number;
  /** Slow-consumer detection (watchdog.ts): Connection.progress when last seen to change, and when. */
  lastProgress = -1;
  progressSince = 0;
  readonly mutedNotifications = new Set<string>();
  /** The client set capabilities.batchEvents: it reads `session/events`. */
  batchEvents = false;
  /** The client set capabilities.experimentalApi: experimental methods and event fields are open to it. */
  experimentalApi = false;

  constructor(id: string, conn: Connection, now: number) {
    this.id = id;
    this.conn = conn;
    this.connectedAt = now;
    this.lastSeenAt = now;
  }

  get clientName(): string {
    return this.info?.name ?? 'unknown';
  }

  /** Sends a notification unless the client opted out of it; never throws. */
  notify(method: string, params: unknown): void {
    if (this.conn.closed || this.mutedNotifications.has(method)) return;
    try {
      this.conn.notify(method, params);
    } catch {
      // Over the frame limit or closing: a notification is best effort.
    }
  }
}
