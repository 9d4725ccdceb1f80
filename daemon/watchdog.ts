// The daemon's timers (docs/operations.md; docs/protocol.md §8): idle exit, housekeeping (idle sessions, slow and silent
// connections, memory given back when quiet: idle-release.ts) and the self-check that keeps the discovery record and the socket true. It decides;
// the daemon (daemon.ts) owns the server, the record's content and stopping.
import fs from 'node:fs';
import { AstraError } from '../protocol/index.js';
import { readRecord, tokensEqual, type AstraPaths, type DiscoveryRecord } from '../discovery/index.js';
import type { Runtime } from '../runtime/index.js';
import { HOUSEKEEPING_MS, type DaemonConfig } from './config.js';
import { IdleRelease } from './idle-release.js';
import type { Logger } from './logger.js';
import type { Peer } from './peer.js';
import { fullGc, loadMallocTrim } from './release-memory.js';

export interface WatchedDaemon {
  readonly cfg: DaemonConfig;
  readonly paths: AstraPaths;
  readonly endpoint: string;
  readonly instanceId: string;
  readonly log: Logger;
  readonly now: () => number;
  readonly runtime: Runtime;
  readonly peers: ReadonlyMap<string, Peer>;
  isStopping(): boolean;
  /** The record as this daemon last wrote it. */
  record(): DiscoveryRecord;
  publishRecord(): void;
  /** Listens on a fresh socket file at the same path; connections already accepted stay up. */
  listenAgain(): Promise<void>;
  exit(why: 'idle' | 'replaced', message: string): void;
}

/** A record that names this instance must still say what this daemon wrote. */
function alteredFields(found: DiscoveryRecord, wrote: DiscoveryRecord): string[] {
  const out: string[] = [];
  if (!tokensEqual(found.token, wrote.token)) out.push('token');
  for (const k of ['pid', 'endpoint', 'protocolVersion', 'ownerId'] as const) if (found[k] !== wrote[k]) out.push(k);
  return out;
}

export class Watchdog {
  private idleTimer: NodeJS.Timeout | undefined;
  private housekeepingTimer: NodeJS.Timeout | undefined;
  private selfCheckTimer: NodeJS.Timeout | undefined;
  private malformedRecordChecks = 0;
  private lastUnloadAt = 0;
  private relistening = false;
  private stopped = false;
  readonly idleRelease: IdleRelease;

  constructor(private readonly d: WatchedDaemon) {
    this.idleRelease = new IdleRelease({ afterMs: d.cfg.idleReleaseMs, now: d.now, log: d.log, gc: fullGc, loadTrim: () => loadMallocTrim() });
  }

  /** A request other than ping, or a connection that came or went: the daemon is not quiet. */
  activity(): void {
    this.idleRelease.activity();
  }

  start(): void {
    this.housekeepingTimer = setInterval(() => this.housekeeping(), HOUSEKEEPING_MS);
    this.housekeepingTimer.unref();
    this.selfCheckTimer = setInterval(() => void this.selfCheck(), this.d.cfg.selfCheckMs);
    this.selfCheckTimer.unref();
    this.becameIdle();
  }

  stop(): void {
    this.stopped = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.housekeepingTimer) clearInterval(this.housekeepingTimer);
    if (this.selfCheckTimer) clearInterval(this.selfCheckTimer);
  }

  private isIdle(): boolean {
    return this.d.peers.size === 0 && this.d.runtime.runningTurns().length === 0;
  }

  /**
   * Called whenever the daemon may have become idle (a client left, a turn ended). The timer is not
   * cancelled when a client comes: it checks when it fires, and a busy daemon stays.
   */
  becameIdle(): void {
    const { idleTimeoutMs } = this.d.cfg;
    if (this.stopped || idleTimeoutMs === 0 || !this.isIdle()) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.stopped) return;
      if (!this.isIdle()) {
        this.d.log.debug(
          { idleTimeoutMs, connections: this.d.peers.size, runningTurns: this.d.runtime.runningTurns().length },
          'idle timeout passed while busy; staying',
        );
        return;
      }
      this.d.log.info({ idleTimeoutMs }, 'idle: no client and no running turn; exiting');
      this.d.exit('idle', `no client and no running turn for ${idleTimeoutMs} ms`);
    }, idleTimeoutMs);
  }

  housekeeping(): void {
    const { cfg, log } = this.d;
    const now = this.d.now();
    if (now - this.lastUnloadAt >= Math.min(60_000, cfg.sessionUnloadMs)) {
      this.lastUnloadAt = now;
      void this.d.runtime.unloadIdle(cfg.sessionUnloadMs).then(
        (ids) => {
          if (ids.length === 0) return;
          log.debug({ sessions: ids }, 'closed idle sessions');
          this.idleRelease.again();
        },
        (e: unknown) => log.warn({ err: e }, 'closing idle sessions failed'),
      );
    }
    for (const peer of this.d.peers.values()) {
      // A slow consumer takes NOTHING for the bound: bytes are queued and no socket write has
      // completed since. A reader that keeps draining, however slowly, is merely behind: its
      // subscriptions pause and catch up from the journal (subscriptions.ts).
      const queued = peer.conn.queuedBytes;
      const progress = peer.conn.progress;
      if (queued === 0 || progress !== peer.lastProgress) {
        peer.lastProgress = progress;
        peer.progressSince = now;
      } else if (now - peer.progressSince > cfg.slowConsumerMs) {
        log.warn({ connectionId: peer.id, queuedBytes: queued, slowConsumerMs: cfg.slowConsumerMs }, 'slow consumer: took nothing for the bound; closing');
        peer.conn.destroy(new AstraError('slow_consumer', `the connection took none of its ${queued} queued bytes for ${cfg.slowConsumerMs} ms`));
        continue;
      }
      if (peer.authenticated && now - peer.lastSeenAt > cfg.silentConnectionMs && peer.inFlight === 0) {
        log.warn({ connectionId: peer.id }, 'connection silent past the bound; closing');
        peer.conn.destroy();
      }
    }
    this.idleRelease.tick(this.d.runtime.runningTurns().length > 0);
  }

  /** The record must still name this instance and say what we wrote, and the socket file must exist. */
  async selfCheck(): Promise<void> {
    const { log } = this.d;
    if (this.stopped || this.d.isStopping()) return;
    let record: DiscoveryRecord | undefined;
    try {
      record = readRecord(this.d.paths.recordPath);
      this.malformedRecordChecks = 0;
    } catch (e) {
      // Possibly caught mid-write by someone else: look again next time, and only put our own
      // record back when it stays unreadable.
      if (++this.malformedRecordChecks < 3) return;
      log.warn({ err: e }, 'the discovery record is unreadable; writing it again');
      this.malformedRecordChecks = 0;
      this.d.publishRecord();
      return;
    }
    if (record && record.instanceId !== this.d.instanceId) {
      log.warn({ other: record.instanceId }, 'the discovery record names another instance; exiting');
      this.d.exit('replaced', `replaced by daemon instance ${record.instanceId}`);
      return;
    }
    if (!this.socketPresent()) {
      await this.recreateSocket();
      return;
    }
    if (!record) {
      log.warn('the discovery record was deleted; writing it again');
      this.d.publishRecord();
      return;
    }
    const altered = alteredFields(record, this.d.record());
    if (altered.length) {
      log.warn({ fields: altered }, 'the discovery record names this instance but was altered; writing it again');
      this.d.publishRecord();
    }
  }

  private socketPresent(): boolean {
    if (process.platform === 'win32') return true;
    try {
      return fs.lstatSync(this.d.endpoint).isSocket();
    } catch {
      return false;
    }
  }

  /** Never stops the daemon: a failure is logged and tried again at the next check. */
  private async recreateSocket(): Promise<void> {
    if (this.relistening) return;
    this.relistening = true;
    this.d.log.warn({ endpoint: this.d.endpoint, connections: this.d.peers.size }, 'the socket file was deleted; listening again');
    try {
      await this.d.listenAgain();
      this.d.publishRecord();
      this.d.log.info({ endpoint: this.d.endpoint }, 'listening again on a new socket file');
    } catch (e) {
      this.d.log.error({ err: e, endpoint: this.d.endpoint }, `could not listen again; retrying in ${this.d.cfg.selfCheckMs} ms`);
    } finally {
      this.relistening = false;
    }
  }
}
