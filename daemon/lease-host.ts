// Composes the pure LeaseManager with the runtime: every lease change is persisted (the epoch in the
// session journal, the holder and resume-token hash in leases.json) before it is acknowledged, shown
// as a lease.changed event, and pending approvals follow the controller (docs/protocol.md §6, leases; docs/client.md).
import fs from 'node:fs';
import path from 'node:path';
import { AstraError, type ServerResultOf, type Session, SERVER_REQUESTS } from '../protocol/index.js';
import { hashToken, newToken } from '../discovery/index.js';
import { writeFileAtomic } from '../durable/index.js';
import { LeaseManager, type LeaseChange, type LeaseHolder, type PersistedLease } from '../lease/index.js';
import type { ApprovalRequest, ApprovalSettled, Runtime } from '../runtime/index.js';
import type { Logger } from './logger.js';
import type { Peer } from './peer.js';

export interface LeaseHostOptions {
  dataDir: string;
  graceMs: number;
  now: () => number;
  log: Logger;
  findPeer: (connectionId: string) => Peer | undefined;
}

export class LeaseHost {
  readonly leases: LeaseManager;
  private readonly seeded = new Set<string>();
  private readonly file: string;
  private timer: NodeJS.Timeout | undefined;
  /** approvalId → connectionId it was last sent to, so one controller is asked once. */
  private readonly approvalSentTo = new Map<string, string>();
  /** approvalId → every connection it was sent to, told by approval/resolved when it is settled. */
  private readonly approvalAsked = new Map<string, Set<string>>();
  private closed = false;
  private readonly onApprovalRequested = (a: ApprovalRequest): void => this.offerApproval(a);
  private readonly onApprovalSettled = (a: ApprovalSettled): void => this.tellAsked(a);

  constructor(
    private readonly runtime: Runtime,
    private readonly opts: LeaseHostOptions,
  ) {
    this.file = path.join(opts.dataDir, 'leases.json');
    this.leases = new LeaseManager({
      now: opts.now,
      graceMs: opts.graceMs,
      newToken,
      hashToken,
    });
    runtime.on('approvalRequested', this.onApprovalRequested);
    runtime.on('approvalSettled', this.onApprovalSettled);
  }

  /** After a restart, every lease that was held comes back in grace, reclaimable with its token. */
  async restore(): Promise<void> {
    let saved: Record<string, PersistedLease> = {};
    try {
      saved = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Record<string, PersistedLease>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.log.warn({ err: e }, 'leases.json unreadable; leases start free');
    }
    for (const [sessionId, persisted] of Object.entries(saved)) {
      try {
        const session = await this.runtime.getSession(sessionId);
        const change = this.leases.restore(sessionId, { ...persisted, epoch: Math.max(persisted.epoch, session.epoch) });
        this.seeded.add(sessionId);
        if (change) await this.apply([change]);
      } catch (e) {
        this.opts.log.warn({ err: e, sessionId }, 'could not restore a lease');
      }
    }
    this.schedule();
  }

  /** Makes sure the manager knows the session's persisted epoch before any decision about it. */
  async ensureSession(sessionId: string): Promise<void> {
    if (this.seeded.has(sessionId)) return;
    const session = await this.runtime.getSession(sessionId);
    if (this.seeded.has(sessionId)) return;
    this.leases.restore(sessionId, { epoch: session.epoch, holder: null });
    this.seeded.add(sessionId);
  }

  async check(sessionId: string, connectionId: string, epoch: number): Promise<void> {
    await this.ensureSession(sessionId);
    this.leases.check(sessionId, connectionId, epoch);
  }

  async acquire(peer: Peer, sessionId: string, opts: { takeover?: boolean; resumeToken?: string }) {
    await this.ensureSession(sessionId);
    const holder: LeaseHolder = { connectionId: peer.id, clientName: peer.clientName };
    if (peer.info?.pid !== undefined) holder.pid = peer.info.pid;
    const granted = this.leases.acquire(sessionId, holder, opts);
    await this.apply(granted.changes);
    // Acquiring again is also how a controller asks for approvals it could not answer before.
    if (granted.idempotent) for (const a of this.runtime.pendingApprovals(sessionId)) this.offerApproval(a);
    return { sessionId, epoch: granted.epoch, resumeToken: granted.resumeToken, graceMs: granted.graceMs };
  }

  async release(peer: Peer, sessionId: string, epoch: number): Promise<void> {
    await this.ensureSession(sessionId);
    await this.apply([this.leases.release(sessionId, peer.id, epoch)]);
  }

  async disconnect(peer: Peer): Promise<void> {
    const changes = this.leases.disconnect(peer.id);
    if (changes.length) await this.apply(changes);
  }

  /** Sessions whose lease is held or in grace. */
  heldSessionIds(): string[] {
    return [...this.seeded].filter((id) => this.leases.view(id).holder !== null);
  }

  /** The session as clients see it: with its controller (or none) and the lease's epoch if higher. */
  withController(session: Session): Session {
    const view = this.leases.view(session.id);
    const out: Session = { ...session, epoch: Math.max(session.epoch, view.epoch) };
    if (view.holder) {
      const c: NonNullable<Session['controller']> = {
        connectionId: view.holder.connectionId,
        clientName: view.holder.clientName,
        since: view.since ?? session.updatedAt,
      };
      if (view.holder.pid !== undefined) c.pid = view.holder.pid;
      if (view.graceUntil !== undefined) c.graceUntil = view.graceUntil;
      out.controller = c;
    } else {
      delete out.controller;
    }
    return out;
  }

  close(): void {
    this.closed = true;
    this.runtime.off('approvalRequested', this.onApprovalRequested);
    this.runtime.off('approvalSettled', this.onApprovalSettled);
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    const deadline = this.leases.nextDeadline();
    if (deadline === undefined) return;
    this.timer = setTimeout(() => void this.expire(), Math.max(0, deadline - this.opts.now()) + 1);
    this.timer.unref();
  }

  private async expire(): Promise<void> {
    const changes = this.leases.tick();
    try {
      await this.apply(changes);
    } catch (e) {
      this.opts.log.error({ err: e }, 'could not persist a lease expiry');
    }
    for (const change of changes) {
      if (change.reason !== 'expired') continue;
      try {
        const session = await this.runtime.getSession(change.sessionId);
        if (session.runningTurnId && session.onControllerLost !== 'continue') {
          await this.runtime.cancelTurn(change.sessionId, session.runningTurnId);
        }
      } catch (e) {
        this.opts.log.warn({ err: e, sessionId: change.sessionId }, 'could not cancel the turn of an expired lease');
      }
    }
    this.schedule();
  }

  /** Persists changes, then tells everyone: events, lease/revoked, and approvals to a new holder. */
  private async apply(changes: LeaseChange[]): Promise<void> {
    for (const change of changes) {
      const data: Parameters<Runtime['appendLeaseChange']>[1] = { epoch: change.epoch, holder: change.holder, reason: change.reason };
      if (change.graceUntil !== undefined) data.graceUntil = change.graceUntil;
      await this.runtime.appendLeaseChange(change.sessionId, data);
    }
    if (changes.length) this.saveHeld();
    for (const change of changes) {
      // The releaser knows it released; everyone else who lost control is told.
      if (change.revoked && change.revoked.reason !== 'released') {
        this.opts.findPeer(change.revoked.connectionId)?.notify('lease/revoked', {
          sessionId: change.sessionId,
          reason: change.revoked.reason,
          epoch: change.epoch,
          ...(change.holder ? { holder: change.holder } : {}),
        });
      }
      if (change.holder && (change.reason === 'acquired' || change.reason === 'takeover' || change.reason === 'reclaimed')) {
        for (const a of this.runtime.pendingApprovals(change.sessionId)) this.offerApproval(a);
      }
    }
    this.schedule();
  }

  private saveHeld(): void {
    const held: Record<string, PersistedLease> = {};
    for (const sessionId of this.seeded) {
      const p = this.leases.persisted(sessionId);
      if (p.holder) held[sessionId] = p;
    }
    writeFileAtomic(this.file, JSON.stringify(held));
  }

  /**
   * An approval was settled: each connection it was sent to hears approval/resolved, except the one
   * that answered it ('answered' by a later controller, 'expired', 'cancelled' with its turn).
   */
  private tellAsked(a: ApprovalSettled): void {
    const asked = this.approvalAsked.get(a.approvalId);
    this.approvalAsked.delete(a.approvalId);
    this.approvalSentTo.delete(a.approvalId);
    for (const id of asked ?? []) {
      if (id === a.connectionId) continue;
      this.opts.findPeer(id)?.notify('approval/resolved', { sessionId: a.sessionId, approvalId: a.approvalId, decision: a.decision, reason: a.how });
    }
  }

  /** Sends a pending approval to the session's controller, if it has a live one. */
  private offerApproval(a: ApprovalRequest): void {
    if (this.closed) return;
    const view = this.leases.view(a.sessionId);
    if (view.state !== 'held' || !view.holder) return; // waits for a controller
    const peer = this.opts.findPeer(view.holder.connectionId);
    if (!peer || peer.conn.closed) return;
    if (this.approvalSentTo.get(a.approvalId) === peer.id) return;
    this.approvalSentTo.set(a.approvalId, peer.id);
    const asked = this.approvalAsked.get(a.approvalId) ?? new Set<string>();
    this.approvalAsked.set(a.approvalId, asked.add(peer.id));
    const epoch = view.epoch;
    const params: Record<string, unknown> = { sessionId: a.sessionId, approvalId: a.approvalId, turnId: a.turnId, command: a.command, cwd: a.cwd };
    if (a.reason !== undefined) params.reason = a.reason;
    params.revision = a.revision;
    if (a.expiresAt !== undefined) params.expiresAt = a.expiresAt;
    if (a.paramsDigest !== undefined) params.paramsDigest = a.paramsDigest;
    if (a.options !== undefined) params.options = a.options;
    peer.conn
      .request('approval/request', params, { timeoutMs: 0 })
      .then(async (result) => {
        const problem = SERVER_REQUESTS['approval/request'].result.check(result, 'result');
        if (problem) throw new AstraError('invalid_params', problem);
        const now = this.leases.view(a.sessionId);
        // An answer from a connection that lost control in the meantime does not count.
        if (now.state !== 'held' || now.holder?.connectionId !== peer.id || now.epoch !== epoch) return;
        const { decision, revision, optionId } = result as ServerResultOf<'approval/request'>;
        await this.runtime.resolveApproval(a.sessionId, a.approvalId, decision, { clientName: peer.clientName, connectionId: peer.id }, revision ?? undefined, optionId ?? undefined);
        this.approvalSentTo.delete(a.approvalId);
      })
      .catch((e: unknown) => {
        if (this.approvalSentTo.get(a.approvalId) === peer.id) this.approvalSentTo.delete(a.approvalId);
        if (!(e instanceof AstraError && (e.reason === 'connection_closed' || e.reason === 'not_found' || e.reason === 'approval_expired')))
          this.opts.log.warn({ err: e, approvalId: a.approvalId }, 'approval request to the controller failed');
      });
  }
}
