// approval.* events outside a tool call (the shell engine's commands) → cards: the command, and the
// answer area (approval-actions.ts): Approve/Deny for the session's controller, a read-only line for
// everyone else. The buttons follow control: they appear and disappear as the lease moves.
import type { PageEvent } from '../api.js';
import { ApprovalActions, approvalOptions, type Control } from './approval-actions.js';

interface Card {
  el: HTMLElement;
  actions: ApprovalActions;
}

export class ApprovalRenderer {
  private readonly cards = new Map<string, Card>();
  private control: Control = { canDecide: false, holderName: 'the controller' };

  constructor(private readonly container: HTMLElement) {}

  handles(type: string): boolean {
    return type.startsWith('approval.');
  }

  render(e: PageEvent): void {
    const d = e.data;
    const id = String(d.approvalId);
    if (e.type === 'approval.requested') {
      const el = document.createElement('div');
      el.className = 'card approval';
      el.dataset.approvalId = id;
      const cmd = document.createElement('code');
      cmd.textContent = String(d.command);
      el.append('Run ', cmd, ` in ${String(d.cwd)}?`);
      const actions = new ApprovalActions(
        { sessionId: e.sessionId, approvalId: id, revision: typeof d.revision === 'number' ? d.revision : 1, ...(typeof d.expiresAt === 'number' ? { expiresAt: d.expiresAt } : {}), ...approvalOptions(d.options) },
        this.control,
      );
      el.append(actions.el);
      this.container.append(el);
      this.cards.set(id, { el, actions });
    } else if (e.type === 'approval.resolved') {
      const card = this.cards.get(id);
      if (!card) return;
      card.el.classList.add('resolved');
      card.el.dataset.decision = String(d.decision);
      card.actions.resolve(String(d.decision), (d.by as { clientName?: string } | undefined)?.clientName, typeof d.reason === 'string' ? d.reason : undefined, typeof d.optionId === 'string' ? d.optionId : undefined);
    }
  }

  /** Whether this tab may answer (it controls the session and is not read-only). */
  setControl(control: Control): void {
    this.control = control;
    for (const card of this.cards.values()) if (!card.actions.resolved) card.actions.setControl(control);
  }
}
