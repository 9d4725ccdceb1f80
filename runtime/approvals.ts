// Approvals: an engine asks, the daemon's host decides. One shape end to end — the pending entry
// in SessionState, what `approvalRequested` hands the daemon, and pendingApprovals() are the same
// ApprovalRequest; the approval.requested event carries it without sessionId. Pending entries are
// folded from the events (session-state.ts); this room holds only the engines' waiting promises.
import type { EventData } from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';
import type { ApprovalRequest } from './engine.js';
import { newId } from './ids.js';
import type { SessionHost } from './session-host.js';

type Decision = 'approve' | 'deny';

export class Approvals {
  /** Engines waiting for a decision, by approvalId (ids are unique across sessions). */
  private readonly waiting = new Map<string, { resolve(d: Decision): void; reject(e: Error): void }>();

  constructor(private readonly requested: (a: ApprovalRequest) => void) {}

  /** An engine's request: journaled and published first, so observers see it before the host asks anyone. */
  request(host: SessionHost, turnId: string, signal: AbortSignal, req: { command: string; cwd: string; reason?: string }): Promise<Decision> {
    if (signal.aborted) return Promise.reject(new DOMException('The turn was cancelled.', 'AbortError'));
    const approvalId = newId('apr');
    return new Promise<Decision>((resolve, reject) => {
      this.waiting.set(approvalId, { resolve, reject });
      signal.addEventListener('abort', () => this.withdraw(host, approvalId, 'the turn was cancelled'), { once: true });
      const data: EventData<'approval.requested'> = { turnId, approvalId, command: req.command, cwd: req.cwd };
      if (req.reason !== undefined) data.reason = req.reason;
      host.append('approval.requested', data);
      host.flush();
      this.requested({ ...host.state.approvals.get(approvalId)! });
    });
  }

  /** Withdraws a pending approval (denied with `reason`); the engine's wait rejects with an AbortError. */
  withdraw(host: SessionHost, approvalId: string, reason: string): void {
    const a = host.state.approvals.get(approvalId);
    if (!a) return;
    try {
      host.append('approval.resolved', { turnId: a.turnId, approvalId, decision: 'deny', reason });
    } catch {
      // Closed runtime: the next open resolves it as interrupted.
    }
    const w = this.waiting.get(approvalId);
    this.waiting.delete(approvalId);
    w?.reject(new DOMException(`Approval withdrawn: ${reason}.`, 'AbortError'));
  }

  withdrawTurn(host: SessionHost, turnId: string, reason: string): void {
    for (const a of [...host.state.approvals.values()]) if (a.turnId === turnId) this.withdraw(host, a.approvalId, reason);
  }

  pending(host: SessionHost | undefined): ApprovalRequest[] {
    return host ? [...host.state.approvals.values()].map((a) => ({ ...a })) : [];
  }

  async resolve(host: SessionHost, approvalId: string, decision: Decision, by?: { clientName?: string; connectionId?: string }): Promise<void> {
    const a = host.state.approvals.get(approvalId);
    if (!a) throw new AstraError('not_found', `Session ${host.id} has no pending approval ${approvalId}.`, { sessionId: host.id, approvalId });
    host.checkWritable();
    const data: EventData<'approval.resolved'> = { turnId: a.turnId, approvalId, decision };
    if (by) {
      const b: { clientName?: string; connectionId?: string } = {};
      if (by.clientName !== undefined) b.clientName = by.clientName;
      if (by.connectionId !== undefined) b.connectionId = by.connectionId;
      data.by = b;
    }
    host.append('approval.resolved', data);
    const w = this.waiting.get(approvalId);
    this.waiting.delete(approvalId);
    try {
      await host.sync();
    } finally {
      // The decision is appended (and written once the disk allows): the engine acts on it either way.
      w?.resolve(decision);
    }
  }
}
