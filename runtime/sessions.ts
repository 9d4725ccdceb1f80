// Sessions: the map of a runtime's sessions and their loading — each session's directory found at
// open (its small meta.json, never its journal, unless the meta is missing or stale), a host loaded
// on first use and closed when idle, created and removed, listed; and the session/create keys. The
// Runtime (runtime.ts) is the public API over it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeDirs } from '../durable/index.js';
import type { Session } from '../protocol/index.js';
import { AstraError, isAstraError } from '../protocol/index.js';
import { diskFullError } from './event-log.js';
import { IdempotencyTable } from './idempotency.js';
import type { RuntimeLogger } from './logger.js';
import { SessionHost, type HostOptions } from './session-host.js';
import { pageOfSessions, type SessionRow } from './session-list.js';
import { JOURNAL_FILE, META_FILE, readMeta, sessionFromMeta, type SessionMeta } from './session-meta.js';

const SESSION_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

interface SessionEntry {
  meta?: SessionMeta;
  host?: SessionHost;
  /** When the session was last asked for (unloadIdle leaves recently used sessions alone). */
  usedAt?: number;
  /** Set while unloadIdle closes the host: a load waits for it, so one journal never has two hosts. */
  closing?: Promise<void>;
  loading?: Promise<SessionHost>;
  error?: AstraError;
}

/** A session's wire view from its loaded host, else from its meta (closed sessions are idle). */
function viewOf(e: SessionEntry): Session | undefined {
  if (e.host) return e.host.toSession();
  return e.meta ? sessionFromMeta(e.meta, e.meta.archived ? 'archived' : 'idle', e.meta.headSeq) : undefined;
}

export class Sessions {
  private readonly entries = new Map<string, SessionEntry>();
  /** session/create keys (turn/start keys live with their session: SessionState.idempotency). */
  readonly createKeys = new IdempotencyTable();

  constructor(
    readonly dir: string,
    private readonly hostOpts: HostOptions,
    private readonly logger: RuntimeLogger,
    private readonly now: () => number,
  ) {}

  /**
   * Reads each session's small meta.json (never a journal) — except sessions whose meta is missing
   * or older than their journal (a crash since it was written): those are loaded now, which also
   * marks a turn left running as 'interrupted'.
   */
  async open(): Promise<void> {
    makeDirs(this.dir);
    const recover: string[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      if (!SESSION_ID_RE.test(name)) continue;
      const dir = path.join(this.dir, name);
      let journalBytes: number;
      try {
        journalBytes = fs.statSync(path.join(dir, JOURNAL_FILE)).size;
      } catch {
        this.logger.warn({ sessionId: name, dir }, 'session directory has no journal; ignoring it');
        continue;
      }
      const meta = readMeta(path.join(dir, META_FILE));
      const entry: SessionEntry = {};
      if (meta && meta.id === name) {
        entry.meta = meta;
        if (meta.createKey && meta.createFingerprint) this.createKeys.remember(meta.createKey, meta.createFingerprint, { sessionId: name });
      }
      this.entries.set(name, entry);
      if (!entry.meta || entry.meta.journalBytes !== journalBytes) recover.push(name);
    }
    for (const id of recover) {
      try {
        await this.load(id);
      } catch (e) {
        this.logger.error({ sessionId: id, err: (e as Error).message }, 'session could not be loaded');
      }
    }
  }

  /** The session's host, loaded once (a failed load is remembered, except a full disk's). */
  async load(id: string): Promise<SessionHost> {
    const entry = SESSION_ID_RE.test(id) ? this.entries.get(id) : undefined;
    if (!entry) throw new AstraError('not_found', `No session ${id}.`, { sessionId: id });
    entry.usedAt = this.now();
    if (entry.host) return entry.host;
    if (entry.closing) await entry.closing;
    if (entry.host) return entry.host;
    if (entry.error) throw entry.error;
    entry.loading ??= (async () => {
      try {
        const host = await SessionHost.load(path.join(this.dir, id), id, entry.meta, this.hostOpts);
        entry.host = host;
        entry.meta = host.meta;
        if (host.meta.createKey && host.meta.createFingerprint) this.createKeys.remember(host.meta.createKey, host.meta.createFingerprint, { sessionId: id });
        return host;
      } catch (e) {
        const full = diskFullError(e, path.join(this.dir, id));
        if (full) throw full; // not remembered: the next access tries again, once there may be space
        const err = isAstraError(e) ? e : new AstraError('journal_corrupt', `Session ${id} could not be read: ${(e as Error).message}`, { sessionId: id });
        entry.error = err;
        throw err;
      } finally {
        entry.loading = undefined;
      }
    })();
    return entry.loading;
  }

  /** The loaded host, if any (no load, no use counted). */
  loaded(id: string): SessionHost | undefined {
    return this.entries.get(id)?.host;
  }

  /** Creates a session's directory and journal; on failure nothing of it is left. */
  async create(meta: SessionMeta, settings: object, idem: { key: string; fingerprint: string } | undefined): Promise<SessionHost> {
    const id = meta.id;
    const entry: SessionEntry = { meta, usedAt: meta.createdAt };
    this.entries.set(id, entry);
    const dir = path.join(this.dir, id);
    try {
      entry.host = await SessionHost.create(dir, meta, this.hostOpts, settings, idem);
    } catch (e) {
      // SessionHost.create left nothing on disk; nothing is left here either.
      this.entries.delete(id);
      throw diskFullError(e, dir) ?? e;
    }
    return entry.host;
  }

  /** Forgets a loaded session and removes its files for good. */
  async remove(host: SessionHost): Promise<void> {
    const id = host.id;
    const entry = this.entries.get(id);
    this.entries.delete(id);
    if (entry) entry.host = undefined;
    // Its files go next: nothing needs saving (a full disk must not keep it either).
    await host.close(false).catch((e: Error) => this.logger.warn({ sessionId: id, err: e.message }, 'closing a deleted session failed'));
    if (host.meta.createKey) this.createKeys.forget(host.meta.createKey);
    fs.rmSync(path.join(this.dir, id), { recursive: true, force: true });
  }

  /** The session as it stands, without loading it or counting as a use; undefined for an unknown id. */
  peek(id: string): Session | undefined {
    const e = this.entries.get(id);
    return e && viewOf(e);
  }

  list(p: { cursor?: string; limit?: number; includeArchived?: boolean }): { sessions: Session[]; nextCursor?: string } {
    const rows: SessionRow<SessionEntry>[] = [];
    for (const [id, entry] of this.entries) {
      const meta = entry.host?.meta ?? entry.meta;
      if (!meta) continue; // unreadable session: reported by getSession, not listed
      if (meta.archived && !p.includeArchived) continue;
      rows.push({ createdAt: meta.createdAt, id, entry });
    }
    const { page, nextCursor } = pageOfSessions(rows, p.cursor, p.limit);
    const result: { sessions: Session[]; nextCursor?: string } = { sessions: page.map((r) => viewOf(r.entry)!) };
    if (nextCursor !== undefined) result.nextCursor = nextCursor;
    return result;
  }

  /** The loaded hosts, with their ids. */
  *hosts(): IterableIterator<[string, SessionHost]> {
    for (const [id, e] of this.entries) if (e.host) yield [id, e.host];
  }

  /** See Runtime.unloadIdle. */
  async unloadIdle(idleMs: number): Promise<string[]> {
    const cutoff = this.now() - idleMs;
    const unloaded: string[] = [];
    for (const [id, e] of this.entries) {
      const host = e.host;
      if (!host || e.loading || host.inUse || (e.usedAt ?? 0) > cutoff) continue;
      e.host = undefined;
      e.closing = host.close().then(
        () => {
          e.meta = host.meta;
          unloaded.push(id);
        },
        (err: Error) => {
          e.error = new AstraError('journal_corrupt', `Session ${id} could not be closed: ${err.message}`, { sessionId: id });
          this.logger.error({ sessionId: id, err: err.message }, 'closing an idle session failed');
        },
      );
      await e.closing;
      e.closing = undefined;
    }
    return unloaded;
  }
}
