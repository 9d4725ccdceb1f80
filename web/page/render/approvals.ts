// approval.* events → cards: Approve/Deny for the session's controller, a read-only card for
// everyone else. The buttons follow control: they appear and disappear as the lease moves.
import { api, type PageEvent } from '../api.js';

interface Card {
  el: HTMLElement;
  approvalId: string;
  resolved: boolean;
}

export class ApprovalRenderer {
  private readonly cards = new Map<string, Card>();
  private canDecide = false;
  holderName = 'the controller';

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
      const actions = document.createElement('div');
      actions.className = 'actions';
      el.append(actions);
      this.container.append(el);
      this.cards.set(id, { el, approvalId: id, resolved: false });
      this.paint(this.cards.get(id)!);
    } else if (e.type === 'approval.resolved') {
      const card = this.cards.get(id);
      if (!card) return;
      card.resolved = true;
      card.el.classList.add('resolved');
      const by = (d.by as { clientName?: string } | undefined)?.clientName;
      card.el.dataset.decision = String(d.decision);
      this.paint(card, `${String(d.decision) === 'approve' ? 'approved' : 'denied'}${by ? ` by ${by}` : ''}`);
    }
  }

  /** Whether this tab may answer (it controls the session and is not read-only). */
  setCanDecide(can: boolean, holderName: string): void {
    this.canDecide = can;
    this.holderName = holderName;
    for (const card of this.cards.values()) if (!card.resolved) this.paint(card);
  }

  private paint(card: Card, outcome?: string): void {
    const actions = card.el.querySelector('.actions')!;
    actions.replaceChildren();
    if (card.resolved) {
      actions.textContent = outcome ?? 'resolved';
      return;
    }
    if (!this.canDecide) {
      actions.textContent = `waiting for ${this.holderName} to decide (read-only)`;
      return;
    }
    for (const decision of ['approve', 'deny'] as const) {
      const b = document.createElement('button');
      b.textContent = decision === 'approve' ? 'Approve' : 'Deny';
      b.className = decision;
      b.addEventListener('click', () => {
        b.disabled = true;
        void api<{ outcome: string }>('POST', `/v1/approvals/${encodeURIComponent(card.approvalId)}`, {
          decision,
          revision: card.approvalId,
          idempotencyKey: crypto.randomUUID(),
        }).then(
          (r) => {
            if (r.outcome === 'expired') actions.textContent = 'this prompt expired (answered elsewhere, or control moved)';
          },
          (err: Error) => {
            actions.textContent = `could not answer: ${err.message}`;
          },
        );
      });
      actions.append(b);
    }
  }
}
