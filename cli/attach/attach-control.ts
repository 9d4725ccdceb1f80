// Who controls the session, as one `astra attach` sees it, and the approvals this terminal answers:
// acquiring and taking control, losing it (takeover, expiry), taking it when it comes free (unless
// it was taken from this terminal on purpose), and the approval prompt of the controller.
import { AstraError, isAstraError, type Session, type SessionEvent } from '../../protocol/index.js';
import type { AstraClient, ApprovalRequest, ControllerLease, LeaseLost } from '../../client/index.js';
import type { ApprovalClock } from './attach-approval.js';
import type { AttachLeaseFile } from './attach-resume.js';
import { optionsText } from '../acp-render.js';
import { describeHolder, holderOf, type HolderLike } from '../session-util.js';

export interface ControlHost {
  readonly client: AstraClient;
  readonly id: string;
  readonly opts: { observe?: boolean };
  readonly isController: boolean;
  readonly ending: boolean;
  readonly view: { readonly tty: boolean; line(text: string): void };
  /** Events are live (not the backlog): only a change now can make this terminal act. */
  isLive(): boolean;
  notice(text: string, colour?: 'green' | 'yellow' | 'red' | 'cyan'): void;
  refresh(): void;
}

/** An answer: the decision, and the agent's option picked (acp approvals carry options). */
type Answer = { decision: 'approve' | 'deny'; optionId?: string };

interface PendingApproval {
  request: ApprovalRequest;
  promise: Promise<Answer>;
  resolve: (a: Answer) => void;
  reject: (e: AstraError) => void;
}

export class AttachControl {
  controller: HolderLike | null = null;
  private controllerGraceUntil: number | undefined;
  /** Why this terminal lost control; shown only while it is still the current state. */
  private leaseNote: string | undefined;
  /** Who took control from this terminal (the note holds while they keep it). */
  private takenBy: HolderLike | undefined;
  /** Control was taken from this terminal on purpose: it does not grab it back by itself. */
  private displaced = false;
  /** Turns whose command was denied: the engine ends them as `cancelled`. */
  readonly deniedTurns = new Set<string>();
  /** Approvals printed while this terminal only watched: if control comes here, say it is ours now. */
  readonly watchedApprovals = new Set<string>();
  private approval: PendingApproval | undefined;

  constructor(
    private readonly host: ControlHost,
    session: Session,
    /** Where the lease's resume token is kept for a re-run after a crash (attach-resume.ts). */
    private readonly leaseFile: AttachLeaseFile,
    /** The prompt's deadline and the moment after it vanished (attach-approval.ts). */
    readonly clock: ApprovalClock,
  ) {
    if (session.controller) {
      const c = session.controller;
      this.controller = { clientName: c.clientName, connectionId: c.connectionId, ...(c.pid !== undefined ? { pid: c.pid } : {}) };
      this.controllerGraceUntil = c.graceUntil;
    }
  }

  /** This terminal is asked to answer an approval now. */
  get approvalAsked(): boolean {
    return Boolean(this.approval && this.host.isController);
  }

  get approvalPending(): boolean {
    return this.approval !== undefined;
  }

  statusState(): {
    controller: HolderLike | null;
    controllerGraceUntil: number | undefined;
    leaseNote: string | undefined;
    takenBy: HolderLike | undefined;
    approvalLeft: string | undefined;
    approvalOptions: number | undefined;
  } {
    const approvalLeft = this.approvalAsked ? this.clock.left() : undefined;
    const approvalOptions = this.approvalAsked ? this.approval?.request.options?.length || undefined : undefined;
    return { controller: this.controller, controllerGraceUntil: this.controllerGraceUntil, leaseNote: this.leaseNote, takenBy: this.takenBy, approvalLeft, approvalOptions };
  }

  async tryAcquire(takeover: boolean, initial: boolean): Promise<void> {
    const h = this.host;
    // The previous attach in this terminal crashed holding control: its token reclaims it in grace.
    const saved = initial ? this.leaseFile.reclaimable() : undefined;
    const inGrace = this.controllerGraceUntil !== undefined;
    try {
      const lease = await h.client.acquireController(h.id, { takeover, ...(saved ? { resumeToken: saved.resumeToken } : {}) });
      this.leaseFile.save(lease);
      this.leaseNote = undefined;
      this.displaced = false;
      if (saved && inGrace) h.notice(`you control ${h.id} again: reclaimed from the attach in this terminal that ended without releasing it`, 'green');
      else if (!initial || takeover) h.notice(takeover ? `you took control of ${h.id}` : `you control ${h.id}`, 'green');
    } catch (e) {
      if (isAstraError(e, 'lease_held')) {
        const holder = holderOf(e);
        if (holder) this.controller = holder;
        if (typeof e.data.graceUntil === 'number') this.controllerGraceUntil = e.data.graceUntil;
        this.leaseNote = undefined;
        h.notice(`${describeHolder(holder)} controls ${h.id}; observing — press Ctrl-T (or attach with --take) to take control`, 'yellow');
      } else if (e instanceof AstraError || e instanceof Error) {
        h.notice(`could not take control: ${e.message}`, 'red');
      }
    }
    h.refresh();
  }

  /** The client reclaimed the lease after a reconnect: its token changed. */
  onLeaseReclaimed(lease: ControllerLease): void {
    if (lease.sessionId === this.host.id) this.leaseFile.save(lease);
  }

  /** Leaving: the token is kept only while control may still be reclaimed (the release did not happen). */
  forgetLease(released: boolean): void {
    if (released) this.leaseFile.remove();
  }

  onLeaseLost({ sessionId, reason, holder }: LeaseLost): void {
    if (sessionId !== this.host.id) return;
    this.leaseFile.remove();
    const newHolder = holder ?? this.controller ?? undefined;
    const by = reason === 'takeover' && newHolder ? ` by ${describeHolder(newHolder)}` : '';
    this.leaseNote = reason === 'takeover' ? `taken over${by}` : `lost (${reason})`;
    this.takenBy = reason === 'takeover' ? newHolder : undefined;
    if (reason === 'takeover') this.displaced = true;
    this.dropApproval(new AstraError('not_controller', 'control was lost'));
    this.host.notice(`control ${this.leaseNote}; now observing — Ctrl-T takes it back`, 'yellow');
    this.host.refresh();
  }

  onEvent(event: SessionEvent): void {
    switch (event.type) {
      case 'turn.completed':
        // A turn cancelled while it waited for approval takes its question with it.
        if (this.approval?.request.turnId === event.data.turnId) this.dropApproval(new AstraError('not_found', 'the turn ended'), 'the approval ended with its turn');
        break;
      case 'lease.changed':
        this.controller = event.data.holder;
        this.controllerGraceUntil = event.data.reason === 'grace' ? event.data.graceUntil : undefined;
        if (this.host.isLive()) this.onControlChanged(event.data.holder);
        break;
      case 'approval.resolved':
        // A withdrawn request (turn cancelled, daemon restarted) is a deny without anyone's name.
        if (event.data.decision === 'deny' && event.data.by) this.deniedTurns.add(event.data.turnId);
        if (this.approval?.request.approvalId === event.data.approvalId) {
          const d = event.data;
          const why = d.reason?.startsWith('expired')
            ? 'approval expired'
            : `the approval was already ${d.decision === 'approve' ? 'approved' : 'denied'}${d.by?.clientName ? ` by ${describeHolder({ clientName: d.by.clientName })}` : ''}`;
          this.dropApproval(new AstraError('not_found', 'the approval was resolved elsewhere'), why);
        }
        break;
    }
  }

  /** Control moved (live): drop a note that no longer holds; take control when it is free and wanted. */
  private onControlChanged(holder: HolderLike | null): void {
    const h = this.host;
    if (h.isController) return;
    const stillTaker = holder && this.takenBy?.connectionId !== undefined && holder.connectionId === this.takenBy.connectionId;
    if (this.leaseNote && !stillTaker) {
      this.leaseNote = undefined;
      this.takenBy = undefined;
    }
    if (holder || h.ending || h.opts.observe) return;
    // Someone took control from this terminal on purpose (`astra take` frees it for the next user):
    // grabbing it back unasked would undo that. A terminal that wanted control from the start takes it.
    if (this.displaced) {
      h.notice('control is free — press Ctrl-T to take it');
      return;
    }
    void this.tryAcquire(false, false);
  }

  onApprovalRequest(request: ApprovalRequest): Promise<Answer> {
    const h = this.host;
    if (request.sessionId !== h.id) return Promise.reject(new AstraError('not_found', 'this terminal only answers for its own session'));
    if (this.approval?.request.approvalId === request.approvalId) return this.approval.promise;
    this.dropApproval(new AstraError('invalid_state', 'a newer approval request replaced this one'));
    let resolve!: (a: Answer) => void;
    let reject!: (e: AstraError) => void;
    const promise = new Promise<Answer>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.approval = { request, promise, resolve, reject };
    this.clock.asked(request.expiresAt ?? undefined);
    // The request itself is printed from the event stream; without a footer the prompt needs a line,
    // and one printed as someone else's question needs saying that it is ours now.
    const keys = request.options?.length ? `${optionsText(request.options)}; or y or n` : 'y or n';
    if (!h.view.tty) h.view.line(`approve \`${request.command}\`? press ${keys}`);
    else if (this.watchedApprovals.has(request.approvalId)) h.notice(`you control ${h.id} now: the approval of \`${request.command}\` is yours to answer (${keys})`, 'yellow');
    h.refresh();
    return promise;
  }

  /** approval/resolved: this terminal's prompt was settled another way (said even when the event stream is behind). */
  onApprovalResolved(r: { approvalId: string; decision: 'approve' | 'deny'; reason: string }): void {
    if (this.approval?.request.approvalId !== r.approvalId) return;
    const why =
      r.reason === 'expired' ? 'approval expired' : r.reason === 'cancelled' ? 'the approval ended with its turn' : `the approval was already ${r.decision === 'approve' ? 'approved' : 'denied'} elsewhere`;
    this.dropApproval(new AstraError('not_found', 'the approval was resolved elsewhere'), why);
  }

  /**
   * Answers the prompt: y/n ('approve'/'deny'), or the agent's option by its number (1-based), which
   * sends its optionId with the decision its kind makes. False for a number that is not an option.
   */
  answerApproval(choice: 'approve' | 'deny' | number): boolean {
    const a = this.approval;
    if (!a) return true;
    let answer: Answer;
    if (typeof choice === 'number') {
      const o = a.request.options?.[choice - 1];
      if (!o) return false;
      answer = { decision: o.kind.startsWith('allow') ? 'approve' : 'deny', optionId: o.optionId };
    } else answer = { decision: choice };
    this.approval = undefined;
    this.clock.answered();
    a.resolve(answer);
    this.host.refresh();
    return true;
  }

  /** The prompt goes; `why`: it was settled another way, said if a y/n typed for it follows at once. */
  dropApproval(err: AstraError, why?: string): void {
    const a = this.approval;
    if (!a) return;
    const asked = this.approvalAsked;
    this.approval = undefined;
    if (why !== undefined && asked) this.clock.vanished(why);
    else this.clock.stop();
    a.reject(err);
    this.host.refresh();
  }
}
