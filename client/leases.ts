// The leases this client holds, by session (the one owner of that map): granted by lease/acquire,
// forgotten on release or loss, reclaimed with their resume tokens after a reconnect.
import { AstraError, type ResultOf, type ServerNotificationParams } from '../protocol/index.js';
import type { Connection } from '../ipc/index.js';
import type { ClientMethodName } from './api.js';
import { checkResult, toAstraError } from './results.js';
import { ControllerLease, type LeaseState } from './lease.js';

export type LeaseHolderInfo = NonNullable<ServerNotificationParams<'lease/revoked'>['holder']>;

export interface LeaseLost {
  sessionId: string;
  reason: string;
  lease: ControllerLease;
  error?: AstraError;
  holder?: LeaseHolderInfo;
}

export interface LeaseBookHost {
  /** Sends lease/release (through the client's call, so an application's wrapper sees it). */
  sendRelease(params: { sessionId: string; epoch: number }): Promise<unknown>;
  lost(event: LeaseLost): void;
  reclaimed(lease: ControllerLease): void;
}

export class LeaseBook {
  readonly held = new Map<string, ControllerLease>();

  constructor(private readonly host: LeaseBookHost) {}

  get(sessionId: string): ControllerLease | undefined {
    return this.held.get(sessionId);
  }

  /** The epoch a controller-only call carries: the held lease's, or a local not_controller. */
  epochFor(method: string, sessionId: string | undefined): number {
    const lease = sessionId !== undefined ? this.held.get(sessionId) : undefined;
    if (!lease) {
      throw new AstraError(
        'not_controller',
        `${method} needs the controller lease of session ${sessionId ?? '(no sessionId given)'}; call client.acquireController(sessionId) first, or pass epoch`,
        sessionId !== undefined ? { sessionId } : {},
      );
    }
    return lease.epoch;
  }

  /** Keeps the book in step with a successful lease/acquire or lease/release. */
  afterCall(method: ClientMethodName, params: Record<string, unknown>, result: unknown): void {
    if (method === 'lease/acquire') {
      const r = result as ResultOf<'lease/acquire'>;
      const state: LeaseState = { sessionId: r.sessionId, epoch: r.epoch, resumeToken: r.resumeToken, graceMs: r.graceMs };
      const existing = this.held.get(r.sessionId);
      if (existing) existing.update(state);
      else this.held.set(r.sessionId, new ControllerLease(state, { releaseLease: (l) => this.release(l) }));
    } else if (method === 'lease/release') {
      const lease = this.held.get(params.sessionId as string);
      if (lease && lease.epoch === params.epoch) {
        this.held.delete(lease.sessionId);
        lease.markLost('released');
      }
    }
  }

  /** A lease/release refused because the lease is no longer ours: forget it quietly. */
  refused(method: 'lease/release', sessionId: string | undefined, err: AstraError): void {
    if (sessionId === undefined) return;
    const lease = this.held.get(sessionId);
    if (lease && (err.reason === 'not_controller' || err.reason === 'stale_epoch')) this.drop(lease, err.reason, err, false);
  }

  /** lease/revoked from the daemon. */
  revoked(p: ServerNotificationParams<'lease/revoked'>): void {
    const lease = this.held.get(p.sessionId);
    if (!lease || lease.releasing) return;
    if (p.epoch !== undefined && p.epoch !== null && p.epoch < lease.epoch) return; // about an older grant
    this.drop(lease, p.reason, undefined, true, p.holder ?? undefined);
  }

  drop(lease: ControllerLease, reason: string, error: AstraError | undefined, notify: boolean, holder?: LeaseHolderInfo): void {
    if (this.held.get(lease.sessionId) !== lease) return;
    this.held.delete(lease.sessionId);
    lease.markLost(reason);
    if (notify) this.host.lost({ sessionId: lease.sessionId, reason, lease, ...(error ? { error } : {}), ...(holder ? { holder } : {}) });
  }

  /** After a reconnect: reclaims every held lease with its resume token; one that cannot be is lost. */
  async restore(conn: Connection): Promise<void> {
    for (const lease of [...this.held.values()]) {
      try {
        const r = checkResult('lease/acquire', await conn.request('lease/acquire', { sessionId: lease.sessionId, resumeToken: lease.resumeToken }));
        lease.update({ sessionId: r.sessionId, epoch: r.epoch, resumeToken: r.resumeToken, graceMs: r.graceMs });
        this.host.reclaimed(lease);
      } catch (e) {
        const err = toAstraError(e);
        if (err.reason === 'connection_closed' || err.reason === 'request_timeout') throw err;
        this.drop(lease, err.reason, err, true);
      }
    }
  }

  private async release(lease: ControllerLease): Promise<void> {
    if (this.held.get(lease.sessionId) !== lease) return;
    lease.releasing = true;
    try {
      await this.host.sendRelease({ sessionId: lease.sessionId, epoch: lease.epoch });
    } finally {
      lease.releasing = false;
    }
  }
}
