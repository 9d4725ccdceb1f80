// Approvals: an engine asks, the daemon's host decides. One shape end to end — the pending entry
// in SessionState, what `approvalRequested` hands the daemon, and pendingApprovals() are the same
// ApprovalRequest; the approval.requested event carries it without sessionId. Pending entries are
// folded from the events (session-state.ts); this room holds only the engines' waiting promises and
// the expiry timers. An approval of a session with approvalTimeoutMs carries expiresAt; nobody
// answering by then resolves it as denied (reason 'expired: …') and the engine's wait rejects with
// approval_expired. Each request is revision 1; an answer naming another revision, or coming after
// the expiry, is refused with approval_expired.
import type { EventData } from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';
import type { ApprovalOption, ApprovalRequest } from './engine.js';
import { newId } from './ids.js';
import type { SessionHost } from './session-host.js';

type Decision = 'approve' | 'deny';
/** What the engine's wait resolves with: the decision and the option the answer named. */
type Answer = { decision: Decision; optionId?: string };

/** How a pending approval was settled: answered (by connectionId, when a client), expired, or cancelled with its turn. */
export interface ApprovalSettled {
  sessionId: string;
  approvalId: string;
  decision: Decision;
  how: 'answered' | 'expired' | 'cancelled';
  connectionId?: string;
}

/** Ids of approvals that expired, remembered so a late answer hears approval_expired, not not_found (bounded). */
const EXPIRED_REMEMBERED = 1000;

export class Approvals {
  /** Engines waiting for a decision, by approvalId (ids are unique across sessions). */
  private readonly waiting = new Map<string, { resolve(d: Answer): void; reject(e: Error): void; timer?: NodeJS.Timeout }>();
  private readonly expired = new Set<string>();

  constructor(
    private readonly requested: (a: ApprovalRequest) => void,
    private readonly now: () => number = Date.now,
    private readonly settled: (s: ApprovalSettled) => void = () => undefined,
    /** The expiry of a session that set none; 0 = never. */
    private readonly defaultTimeoutMs: () => number = () => 0,
  ) {}

  /** The session's approval expiry (its own, else the default) and what it is called; 0 = never. */
  private timeoutOf(host: SessionHost): { ms: number; name: string } {
    const own = host.meta.approvalTimeoutMs;
    return own !== undefined ? { ms: own, name: "the session's approvalTimeoutMs" } : { ms: this.defaultTimeoutMs(), name: "the daemon's default approvalTimeoutMs" };
  }

  /** An engine's request: journaled and published first, so observers see it before the host asks anyone. */
  request(host: SessionHost, turnId: string, signal: AbortSignal, req: { command: string; cwd: string; reason?: string; options?: ApprovalOption[] }): Promise<Answer> {
    if (signal.aborted) return Promise.reject(new DOMException('The turn was cancelled.', 'AbortError'));
    const approvalId = newId('apr');
    const timeout = this.timeoutOf(host);
    return new Promise<Answer>((resolve, reject) => {
      const w: { resolve(d: Answer): void; reject(e: Error): void; timer?: NodeJS.Timeout } = { resolve, reject };
      this.waiting.set(approvalId, w);
      signal.addEventListener('abort', () => this.withdraw(host, approvalId, 'the turn was cancelled'), { once: true });
      const data: EventData<'approval.requested'> = { turnId, approvalId, command: req.command, cwd: req.cwd, revision: 1 };
      if (req.reason !== undefined) data.reason = req.reason;
      if (req.options !== undefined) data.options = req.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind }));
      if (timeout.ms > 0) {
        data.expiresAt = Math.floor(this.now()) + timeout.ms;
        w.timer = setTimeout(() => this.expire(host, approvalId, timeout), timeout.ms);
        w.timer.unref();
      }
      host.append('approval.requested', data);
      host.flush();
      this.requested({ ...host.state.approvals.get(approvalId)! });
    });
  }

  /** Withdraws a pending approval (denied with `reason`); the engine's wait rejects with an AbortError. */
  withdraw(host: SessionHost, approvalId: string, reason: string): void {
    if (!this.deny(host, approvalId, reason, 'cancelled')) return;
    this.take(approvalId)?.reject(new DOMException(`Approval withdrawn: ${reason}.`, 'AbortError'));
  }

  /** Nobody answered in time: denied, and the engine hears approval_expired (the chat engine tells the model). */
  private expire(host: SessionHost, approvalId: string, timeout: { ms: number; name: string }): void {
    const why = `nobody answered within ${Math.round(timeout.ms / 1000)} s (${timeout.name})`;
    if (!this.deny(host, approvalId, `expired: ${why}`, 'expired')) return;
    this.expired.add(approvalId);
    if (this.expired.size > EXPIRED_REMEMBERED) this.expired.delete(this.expired.values().next().value!);
    this.take(approvalId)?.reject(new AstraError('approval_expired', `The approval expired: ${why}.`, { sessionId: host.id, approvalId }));
  }

  /** Appends the deny of a pending approval; false when it is not pending. */
  private deny(host: SessionHost, approvalId: string, reason: string, how: 'expired' | 'cancelled'): boolean {
    const a = host.state.approvals.get(approvalId);
    if (!a) return false;
    try {
      host.append('approval.resolved', { turnId: a.turnId, approvalId, decision: 'deny', reason });
    } catch {
      // Closed runtime: the next open resolves it as interrupted.
    }
    this.settled({ sessionId: host.id, approvalId, decision: 'deny', how });
    return true;
  }

  private take(approvalId: string) {
    const w = this.waiting.get(approvalId);
    this.waiting.delete(approvalId);
    if (w?.timer) clearTimeout(w.timer);
    return w;
  }

  withdrawTurn(host: SessionHost, turnId: string, reason: string): void {
    for (const a of [...host.state.approvals.values()]) if (a.turnId === turnId) this.withdraw(host, a.approvalId, reason);
  }

  pending(host: SessionHost | undefined): ApprovalRequest[] {
    return host ? [...host.state.approvals.values()].map((a) => ({ ...a })) : [];
  }

  async resolve(host: SessionHost, approvalId: string, decision: Decision, by?: { clientName?: string; connectionId?: string }, revision?: number, optionId?: string): Promise<void> {
    const a = host.state.approvals.get(approvalId);
    if (!a) {
      if (this.expired.has(approvalId))
        throw new AstraError('approval_expired', `Approval ${approvalId} expired before this answer came and was denied; the model was told. Answer the next request in time.`, { sessionId: host.id, approvalId });
      throw new AstraError('not_found', `Session ${host.id} has no pending approval ${approvalId}.`, { sessionId: host.id, approvalId });
    }
    if (revision !== undefined && revision !== a.revision)
      throw new AstraError('approval_expired', `Approval ${approvalId} is at revision ${a.revision}, not ${revision}; answer the current request.`, { sessionId: host.id, approvalId, revision: a.revision });
    if (a.expiresAt !== undefined && this.now() >= a.expiresAt) {
      this.expire(host, approvalId, this.timeoutOf(host));
      throw new AstraError('approval_expired', `Approval ${approvalId} expired before this answer came and was denied.`, { sessionId: host.id, approvalId });
    }
    if (optionId !== undefined) {
      const o = a.options?.find((x) => x.optionId === optionId);
      if (!o) throw new AstraError('invalid_params', `Approval ${approvalId} has no option ${optionId}${a.options ? `; its options: ${a.options.map((x) => x.optionId).join(', ')}` : ''}.`, { field: 'optionId', approvalId });
      if (o.kind.startsWith(decision === 'approve' ? 'reject_' : 'allow_'))
        throw new AstraError('invalid_params', `Option ${optionId} (${o.kind}) does not ${decision}; send the decision it makes.`, { field: 'optionId', approvalId });
    }
    host.checkWritable();
    const data: EventData<'approval.resolved'> = { turnId: a.turnId, approvalId, decision };
    if (optionId !== undefined) data.optionId = optionId;
    if (by) {
      const b: { clientName?: string; connectionId?: string } = {};
      if (by.clientName !== undefined) b.clientName = by.clientName;
      if (by.connectionId !== undefined) b.connectionId = by.connectionId;
      data.by = b;
    }
    host.append('approval.resolved', data);
    this.settled({ sessionId: host.id, approvalId, decision, how: 'answered', ...(by?.connectionId !== undefined ? { connectionId: by.connectionId } : {}) });
    const w = this.take(approvalId);
    try {
      await host.sync();
    } finally {
      // The decision is appended (and written once the disk allows): the engine acts on it either way.
      w?.resolve(optionId === undefined ? { decision } : { decision, optionId });
    }
  }
}
