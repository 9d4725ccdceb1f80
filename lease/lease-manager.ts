// Controller leases (docs/protocol.md §6, leases; docs/client.md): who may write to each session, with epochs, grace and resume
// tokens. Pure logic: the clock, the token source and the token hash are injected; there is no I/O
// and no timer. The daemon persists `persisted()`, turns every LeaseChange into a `lease.changed`
// event, sends `lease/revoked` to `change.revoked.connectionId`, and arms one timer at
// `nextDeadline()` that calls `tick()`.
//
// Rules, in the order acquire() applies them:
//  1. A grace whose time has come is expired first (an `expired` change), so a lease never outlives
//     its grace even if the daemon's timer fires late.
//  2. The connection that holds the lease (not in grace) acquiring again gets its current lease
//     back: no change, no epoch bump, same resume token.
//  3. A resume token matching the current lease (held, or in grace) hands it to the caller:
//     `reclaimed`. This wins over `takeover` because it is the more specific claim.
//  4. A free lease is granted: `acquired` (a wrong or stale resume token does not matter then).
//  5. `takeover` demotes the holder (held or in grace): `takeover`.
//  6. Otherwise `lease_held`, naming the holder.
// Every grant (acquired, reclaimed, takeover) bumps the epoch; release, grace, expiry and restart
// keep it. So epochs never go down and a grant's epoch is never reused.
//
// check() precedence, chosen so that a demoted controller learns *why* its write failed:
//  1. epoch < current epoch            → stale_epoch (whoever sends it: control moved on since)
//  2. caller is not the live holder    → not_controller (free, in grace, or someone else's)
//  3. epoch != current epoch           → stale_epoch (the holder sent an epoch from the future)
// After a takeover the old controller's next write therefore fails with stale_epoch; after a plain
// release (no bump) its write fails with not_controller.

import { AstraError } from '../protocol/index.js';

export interface LeaseHolder {
  connectionId: string;
  clientName: string;
  pid?: number;
}

export type LeaseChangeReason = 'acquired' | 'released' | 'takeover' | 'grace' | 'reclaimed' | 'expired' | 'restart';
export type LeaseRevokeReason = 'takeover' | 'expired' | 'released';

/** One per change, in order. */
export interface LeaseChange {
  sessionId: string;
  epoch: number;
  holder: LeaseHolder | null;
  reason: LeaseChangeReason;
  graceUntil?: number;
  /** The connection that lost control, if any (it may already be gone: grace, expiry). */
  revoked?: { connectionId: string; reason: LeaseRevokeReason };
}

export type LeaseState = 'free' | 'held' | 'grace';

export interface LeaseView {
  sessionId: string;
  epoch: number;
  holder: LeaseHolder | null;
  since?: number;
  graceUntil?: number;
  state: LeaseState;
}

/** What the daemon stores; never the resume token itself. */
export interface PersistedLease {
  epoch: number;
  holder: LeaseHolder | null;
  since?: number;
  resumeTokenHash?: string;
}

export interface LeaseManagerOptions {
  now: () => number;
  /** How long a disconnected controller's lease stays reserved for it. Default 30 000 ms. */
  graceMs?: number;
  newToken: () => string;
  hashToken: (token: string) => string;
}

export interface AcquireOptions {
  takeover?: boolean;
  resumeToken?: string;
}

export interface AcquireResult {
  epoch: number;
  resumeToken: string;
  graceMs: number;
  /** The grant; for an idempotent re-acquire, a description of the unchanged lease (not a new change). */
  change: LeaseChange;
  /**
   * Exactly the changes this call made, in order: persist and publish these, not `change`.
   * Empty for an idempotent re-acquire; `[expired, grant]` when an overdue grace was expired first.
   */
  changes: LeaseChange[];
  /** True when the caller already held the lease and nothing changed. */
  idempotent: boolean;
}

export const DEFAULT_GRACE_MS = 30_000;

interface LeaseRecord {
  epoch: number;
  holder: LeaseHolder | null;
  since?: number;
  graceUntil?: number;
  tokenHash?: string;
  /** Kept in memory so an idempotent re-acquire can answer with the same token; lost on restart. */
  token?: string;
}

export class LeaseManager {
  readonly graceMs: number;
  private readonly now: () => number;
  private readonly newToken: () => string;
  private readonly hashToken: (token: string) => string;
  private readonly leases = new Map<string, LeaseRecord>();

  constructor(opts: LeaseManagerOptions) {
    const graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
    if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
      throw new AstraError('invalid_params', `graceMs must be a non-negative integer, got ${String(graceMs)}`);
    }
    this.graceMs = graceMs;
    this.now = opts.now;
    this.newToken = opts.newToken;
    this.hashToken = opts.hashToken;
  }

  /**
   * Seeds a session from persisted state after a daemon restart. A lease that was held comes back
   * in grace (its connection died with the old daemon), reclaimable with its resume token.
   * Persisted state no newer than what the manager already knows is ignored, so an epoch never goes down.
   */
  restore(sessionId: string, persisted: PersistedLease): LeaseChange | undefined {
    validatePersisted(sessionId, persisted);
    const known = this.leases.get(sessionId);
    if (known && persisted.epoch <= known.epoch) return undefined;
    if (persisted.holder === null) {
      this.leases.set(sessionId, { epoch: persisted.epoch, holder: null });
      return undefined;
    }
    const holder = copyHolder(persisted.holder);
    const graceUntil = this.now() + this.graceMs;
    const record: LeaseRecord = { epoch: persisted.epoch, holder, graceUntil };
    if (persisted.since !== undefined) record.since = persisted.since;
    if (persisted.resumeTokenHash !== undefined) record.tokenHash = persisted.resumeTokenHash;
    this.leases.set(sessionId, record);
    return { sessionId, epoch: record.epoch, holder: copyHolder(holder), reason: 'restart', graceUntil };
  }

  acquire(sessionId: string, holder: LeaseHolder, opts: AcquireOptions = {}): AcquireResult {
    const changes: LeaseChange[] = [];
    const expired = this.expireIfDue(sessionId);
    if (expired) changes.push(expired);
    const lease = this.record(sessionId);

    if (lease.holder && lease.graceUntil === undefined && lease.holder.connectionId === holder.connectionId) {
      let token = lease.token;
      if (token === undefined) {
        // Only reachable if the token was never known in memory; hand out a fresh one.
        token = this.newToken();
        lease.token = token;
        lease.tokenHash = this.hashToken(token);
      }
      const change: LeaseChange = { sessionId, epoch: lease.epoch, holder: copyHolder(lease.holder), reason: 'acquired' };
      return { epoch: lease.epoch, resumeToken: token, graceMs: this.graceMs, change, changes, idempotent: true };
    }

    let reason: LeaseChangeReason;
    if (lease.holder && opts.resumeToken !== undefined && this.tokenMatches(lease, opts.resumeToken)) {
      reason = 'reclaimed';
    } else if (lease.holder === null) {
      reason = 'acquired';
    } else if (opts.takeover === true) {
      reason = 'takeover';
    } else {
      throw leaseHeldError(sessionId, lease);
    }

    const previous = lease.holder;
    const token = this.newToken();
    lease.epoch += 1;
    lease.holder = copyHolder(holder);
    lease.since = this.now();
    delete lease.graceUntil;
    lease.token = token;
    lease.tokenHash = this.hashToken(token);
    const change: LeaseChange = { sessionId, epoch: lease.epoch, holder: copyHolder(holder), reason };
    if (previous && previous.connectionId !== holder.connectionId) {
      change.revoked = { connectionId: previous.connectionId, reason: 'takeover' };
    }
    changes.push(change);
    return { epoch: lease.epoch, resumeToken: token, graceMs: this.graceMs, change, changes, idempotent: false };
  }

  /** Gives up control. The epoch stays (release is not a grant); the releasing connection is named in `revoked`. */
  release(sessionId: string, connectionId: string, epoch: number): LeaseChange {
    this.check(sessionId, connectionId, epoch);
    const lease = this.record(sessionId);
    this.clearHolder(lease);
    return { sessionId, epoch: lease.epoch, holder: null, reason: 'released', revoked: { connectionId, reason: 'released' } };
  }

  /** Disconnect is not release: every lease the connection holds enters grace. */
  disconnect(connectionId: string): LeaseChange[] {
    const changes: LeaseChange[] = [];
    for (const [sessionId, lease] of this.leases) {
      if (!lease.holder || lease.holder.connectionId !== connectionId || lease.graceUntil !== undefined) continue;
      const graceUntil = this.now() + this.graceMs;
      lease.graceUntil = graceUntil;
      changes.push({ sessionId, epoch: lease.epoch, holder: copyHolder(lease.holder), reason: 'grace', graceUntil });
    }
    return changes;
  }

  /** Expires every grace whose time has come. */
  tick(): LeaseChange[] {
    const changes: LeaseChange[] = [];
    for (const sessionId of this.leases.keys()) {
      const change = this.expireIfDue(sessionId);
      if (change) changes.push(change);
    }
    return changes;
  }

  /** The earliest grace deadline, for the daemon's single timer. */
  nextDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const lease of this.leases.values()) {
      if (lease.graceUntil !== undefined && (earliest === undefined || lease.graceUntil < earliest)) earliest = lease.graceUntil;
    }
    return earliest;
  }

  /** Throws unless `connectionId` is the session's live controller at exactly `epoch` (precedence: see the file header). */
  check(sessionId: string, connectionId: string, epoch: number): void {
    const lease = this.leases.get(sessionId) ?? { epoch: 0, holder: null };
    if (epoch < lease.epoch) {
      throw new AstraError(
        'stale_epoch',
        `Epoch ${epoch} is stale: session ${sessionId} is at lease epoch ${lease.epoch} since control changed hands. ` +
          'Nothing was done; acquire the lease again (or take over) before writing.',
        { sessionId, epoch, currentEpoch: lease.epoch },
      );
    }
    if (!lease.holder || lease.graceUntil !== undefined || lease.holder.connectionId !== connectionId) {
      const state: LeaseState = !lease.holder ? 'free' : lease.graceUntil !== undefined ? 'grace' : 'held';
      const who = lease.holder ? ` It is ${state === 'grace' ? 'reserved for' : 'held by'} ${describeHolder(lease.holder)}.` : ' No one controls it.';
      throw new AstraError(
        'not_controller',
        `This connection does not control session ${sessionId}.${who} Acquire the lease (lease/acquire) before writing.`,
        { sessionId, state, currentEpoch: lease.epoch, ...(lease.holder ? { holder: copyHolder(lease.holder) } : {}) },
      );
    }
    if (epoch !== lease.epoch) {
      throw new AstraError(
        'stale_epoch',
        `Epoch ${epoch} does not match session ${sessionId}'s lease epoch ${lease.epoch}; use the epoch lease/acquire returned.`,
        { sessionId, epoch, currentEpoch: lease.epoch },
      );
    }
  }

  view(sessionId: string): LeaseView {
    const lease = this.leases.get(sessionId) ?? { epoch: 0, holder: null };
    const view: LeaseView = {
      sessionId,
      epoch: lease.epoch,
      holder: lease.holder ? copyHolder(lease.holder) : null,
      state: !lease.holder ? 'free' : lease.graceUntil !== undefined ? 'grace' : 'held',
    };
    if (lease.holder && lease.since !== undefined) view.since = lease.since;
    if (lease.graceUntil !== undefined) view.graceUntil = lease.graceUntil;
    return view;
  }

  persisted(sessionId: string): PersistedLease {
    const lease = this.leases.get(sessionId) ?? { epoch: 0, holder: null };
    const out: PersistedLease = { epoch: lease.epoch, holder: lease.holder ? copyHolder(lease.holder) : null };
    if (lease.holder && lease.since !== undefined) out.since = lease.since;
    if (lease.holder && lease.tokenHash !== undefined) out.resumeTokenHash = lease.tokenHash;
    return out;
  }

  /** Sessions whose lease names this connection, live or in grace. */
  heldBy(connectionId: string): string[] {
    const out: string[] = [];
    for (const [sessionId, lease] of this.leases) if (lease.holder?.connectionId === connectionId) out.push(sessionId);
    return out;
  }

  /** Forgets a session (deleted for good). Its epoch is lost, so only call this when the id is never reused. */
  forget(sessionId: string): void {
    this.leases.delete(sessionId);
  }

  private record(sessionId: string): LeaseRecord {
    let lease = this.leases.get(sessionId);
    if (!lease) {
      lease = { epoch: 0, holder: null };
      this.leases.set(sessionId, lease);
    }
    return lease;
  }

  private expireIfDue(sessionId: string): LeaseChange | undefined {
    const lease = this.leases.get(sessionId);
    if (!lease || !lease.holder || lease.graceUntil === undefined || lease.graceUntil > this.now()) return undefined;
    const previous = lease.holder;
    this.clearHolder(lease);
    return { sessionId, epoch: lease.epoch, holder: null, reason: 'expired', revoked: { connectionId: previous.connectionId, reason: 'expired' } };
  }

  private clearHolder(lease: LeaseRecord): void {
    lease.holder = null;
    delete lease.since;
    delete lease.graceUntil;
    delete lease.tokenHash;
    delete lease.token;
  }

  private tokenMatches(lease: LeaseRecord, token: string): boolean {
    // Hashes are compared, not tokens: a timing difference reveals bits of a hash, not of the token.
    return lease.tokenHash !== undefined && this.hashToken(token) === lease.tokenHash;
  }
}

function leaseHeldError(sessionId: string, lease: LeaseRecord): AstraError {
  const holder = lease.holder as LeaseHolder;
  const since = lease.since !== undefined ? ` since ${new Date(lease.since).toISOString()}` : '';
  const base = `Session ${sessionId} is controlled by ${describeHolder(holder)}${since}`;
  const message =
    lease.graceUntil !== undefined
      ? `${base}; its connection dropped and the lease is reserved for it until ${new Date(lease.graceUntil).toISOString()}. ` +
        'Reclaim it with its resume token, wait for the grace to end, or acquire with takeover to take control.'
      : `${base}. Acquire with takeover to take control (the holder is told), or watch as an observer.`;
  const data: Record<string, unknown> = { sessionId, holder: copyHolder(holder), since: lease.since ?? null, epoch: lease.epoch };
  if (lease.graceUntil !== undefined) data.graceUntil = lease.graceUntil;
  return new AstraError('lease_held', message, data);
}

function describeHolder(holder: LeaseHolder): string {
  const pid = holder.pid !== undefined ? `, pid ${holder.pid}` : '';
  return `"${holder.clientName}" (connection ${holder.connectionId}${pid})`;
}

function copyHolder(holder: LeaseHolder): LeaseHolder {
  const copy: LeaseHolder = { connectionId: holder.connectionId, clientName: holder.clientName };
  if (holder.pid !== undefined) copy.pid = holder.pid;
  return copy;
}

function validatePersisted(sessionId: string, p: PersistedLease): void {
  const bad = (why: string) =>
    new AstraError('journal_corrupt', `The stored lease of session ${sessionId} is unreadable (${why}); the session journal may be damaged.`, {
      sessionId,
    });
  if (typeof p !== 'object' || p === null) throw bad('not an object');
  if (!Number.isSafeInteger(p.epoch) || p.epoch < 0) throw bad('epoch is not a non-negative integer');
  if (p.holder !== null) {
    if (typeof p.holder !== 'object' || typeof p.holder.connectionId !== 'string' || typeof p.holder.clientName !== 'string') {
      throw bad('holder is malformed');
    }
    if (p.holder.pid !== undefined && !Number.isSafeInteger(p.holder.pid)) throw bad('holder pid is not an integer');
  }
  if (p.since !== undefined && !Number.isFinite(p.since)) throw bad('since is not a timestamp');
  if (p.resumeTokenHash !== undefined && typeof p.resumeTokenHash !== 'string') throw bad('resumeTokenHash is not a string');
}
