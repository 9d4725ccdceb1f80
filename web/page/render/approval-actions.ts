// The answer area of one approval prompt, for whichever card shows it (an approval card, a tool card):
// Approve/Deny for the session's controller, a read-only line for everyone else, the revision and
// expiry the answer names, and what became of it. An approval with options (an ACP agent's
// permission choices) shows one button per option, named as the agent names it; the answer sends
// the chosen optionId with the decision its kind makes (allow_* approve, reject_* deny). The gateway answers through the daemon's
// approval/answer; a stale revision or a late answer comes back as approval_expired.
import { api, RequestFailed } from '../api.js';

export interface ApprovalPrompt {
  sessionId: string;
  approvalId: string;
  revision: number;
  /** ms since the epoch; absent: the approval waits as long as it takes. */
  expiresAt?: number;
  options?: ApprovalOption[];
}

export interface ApprovalOption {
  optionId: string;
  name: string;
  kind: string;
}

/** approval.requested's options, as a prompt's (none when absent or malformed). */
export function approvalOptions(raw: unknown): { options?: ApprovalOption[] } {
  if (!Array.isArray(raw)) return {};
  const options = raw.filter((o): o is ApprovalOption => typeof o?.optionId === 'string' && typeof o.name === 'string' && typeof o.kind === 'string');
  return options.length > 0 ? { options } : {};
}

/** The decision an option makes: its kind allow_* approves, anything else denies. */
function decisionOf(kind: string): 'approve' | 'deny' {
  return kind.startsWith('allow') ? 'approve' : 'deny';
}

export interface Control {
  /** This tab controls the session and is not read-only. */
  canDecide: boolean;
  /** Who does, for the read-only line. */
  holderName: string;
}

function clock(ts: number): string {
  return new Date(ts).toLocaleTimeString([], { hour12: false });
}

export class ApprovalActions {
  readonly el: HTMLElement;
  private readonly meta: HTMLElement;
  private readonly buttons: HTMLElement;
  private outcome: string | undefined;
  /** The page's own answer was refused (expired, no longer pending): shown until the approval resolves. */
  private refusal: string | undefined;

  constructor(
    private readonly prompt: ApprovalPrompt,
    private control: Control,
  ) {
    this.el = document.createElement('div');
    this.el.className = 'approval-actions';
    this.el.dataset.approvalId = prompt.approvalId;
    this.el.dataset.revision = String(prompt.revision);
    this.meta = document.createElement('span');
    this.meta.className = 'approval-meta';
    this.meta.textContent = `revision ${prompt.revision}${prompt.expiresAt !== undefined ? ` · expires ${clock(prompt.expiresAt)}` : ''}`;
    this.buttons = document.createElement('span');
    this.buttons.className = 'actions';
    this.el.append(this.buttons, this.meta);
    this.paint();
  }

  get resolved(): boolean {
    return this.outcome !== undefined;
  }

  setControl(control: Control): void {
    this.control = control;
    this.paint();
  }

  /** approval.resolved: who decided what, by which option (an expiry is a deny whose reason says so). */
  resolve(decision: string, by?: string, reason?: string, optionId?: string): void {
    const expired = reason?.startsWith('expired');
    const option = this.prompt.options?.find((o) => o.optionId === optionId);
    const what = `${decision === 'approve' ? 'approved' : 'denied'}${option ? `: ${option.name}` : ''}`;
    this.outcome = expired ? `expired unanswered: denied` : `${what}${by ? ` by ${by}` : ''}${reason && !expired ? ` (${reason})` : ''}`;
    this.el.dataset.decision = decision;
    if (optionId !== undefined) this.el.dataset.optionId = optionId;
    this.paint();
  }

  private paint(): void {
    this.buttons.replaceChildren();
    if (this.outcome !== undefined) {
      this.buttons.textContent = this.outcome;
      return;
    }
    if (this.refusal !== undefined) {
      this.buttons.textContent = this.refusal;
      return;
    }
    if (!this.control.canDecide) {
      this.buttons.textContent = `waiting for ${this.control.holderName} to decide (read-only)`;
      return;
    }
    if (this.prompt.options) {
      for (const o of this.prompt.options) {
        const b = document.createElement('button');
        b.textContent = o.name;
        b.className = `option ${decisionOf(o.kind)}`;
        b.dataset.optionId = o.optionId;
        b.dataset.kind = o.kind;
        b.addEventListener('click', () => this.answer(decisionOf(o.kind), o.optionId));
        this.buttons.append(b);
      }
      return;
    }
    for (const decision of ['approve', 'deny'] as const) {
      const b = document.createElement('button');
      b.textContent = decision === 'approve' ? 'Approve' : 'Deny';
      b.className = decision;
      b.addEventListener('click', () => this.answer(decision));
      this.buttons.append(b);
    }
  }

  private answer(decision: 'approve' | 'deny', optionId?: string): void {
    for (const b of this.buttons.querySelectorAll('button')) b.disabled = true;
    // The revision answered is the one this card shows (data-revision), which is what the daemon checks.
    const revision = Number(this.el.dataset.revision);
    void api('POST /v1/approvals/{id}', {
      params: { id: this.prompt.approvalId },
      body: { sessionId: this.prompt.sessionId, decision, revision, idempotencyKey: crypto.randomUUID(), ...(optionId !== undefined ? { optionId } : {}) },
    }).then(
      () => undefined, // approval.resolved follows on the stream
      (err: Error) => {
        const reason = err instanceof RequestFailed ? err.error.reason : '';
        if (reason === 'approval_expired') this.refusal = `expired: this prompt is no longer answerable (${err.message})`;
        else if (reason === 'not_found') this.refusal = 'expired: this prompt was already answered or withdrawn';
        else this.refusal = `could not answer: ${err.message}`;
        this.el.dataset.refused = reason || 'error';
        this.paint();
        // A refusal that is not final (the daemon restarting) lets the buttons back after a moment.
        if (reason !== 'approval_expired' && reason !== 'not_found')
          setTimeout(() => {
            this.refusal = undefined;
            this.paint();
          }, 3_000);
      },
    );
  }
}
