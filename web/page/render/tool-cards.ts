// The chat engine's tool calls → one card per callId: the tool's name and command, its approval
// (Approve/Deny for the controller, read-only for everyone else), whether it runs, how it ended,
// and its output as the model was sent it (tool.result output), collapsed when long.
//
// The engine emits every tool.call of an answer first, then handles the calls one by one in that
// order: approval.*, command.*, tool.result. Approval and command events carry no callId, so they
// belong to the oldest call of their turn still without a result. Approvals outside a tool call
// (the shell engine) are left to approvals.ts; command output is drawn by terminal.ts as well.
//
// An ACP agent's calls (the acp engine) say more of themselves: a title, a kind, a status that
// tool.updated moves on (pending, in_progress, completed, failed), the files they touch and their
// content — text, diffs (drawn as diffs), terminals — which tool.updated replaces when it sends
// some. Such a call gets no tool.result: it is settled once its status is completed or failed.
import type { PageEvent } from '../api.js';
import { ApprovalActions, approvalOptions, type Control } from './approval-actions.js';
import { renderContent, renderLocations } from './tool-detail.js';

/** Output longer than this (lines or characters) starts collapsed. */
const COLLAPSE_LINES = 12;
const COLLAPSE_CHARS = 1_500;

interface ToolCard {
  el: HTMLElement;
  callId: string;
  turnId: string;
  status: HTMLElement;
  /** An ACP call's locations and content, redrawn by tool.updated. */
  detail: HTMLElement;
  title?: HTMLElement;
  approval?: ApprovalActions;
  approvalId?: string;
  running: boolean;
}

function el(tag: string, className: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The command a shell call asks for, when its arguments are the JSON the tool takes. */
function shellArgs(args: string): { command: string; cwd?: string } | undefined {
  try {
    const v = JSON.parse(args) as { command?: unknown; cwd?: unknown };
    if (v && typeof v.command === 'string') return { command: v.command, ...(typeof v.cwd === 'string' ? { cwd: v.cwd } : {}) };
  } catch {
    // not JSON: shown as it came
  }
  return undefined;
}

export class ToolCardRenderer {
  private readonly cards = new Map<string, ToolCard>();
  /** Per turn, the calls still without a result, oldest first. */
  private readonly open = new Map<string, ToolCard[]>();
  private readonly byApproval = new Map<string, ToolCard>();
  private control: Control = { canDecide: false, holderName: 'the controller' };

  constructor(private readonly container: HTMLElement) {}

  handles(type: string): boolean {
    return type.startsWith('tool.') || type.startsWith('approval.') || type.startsWith('command.');
  }

  /** Draws the event; true when it was an approval this renderer took (no approval card then). */
  render(e: PageEvent): boolean {
    const d = e.data;
    const turnId = String(d.turnId ?? '');
    switch (e.type) {
      case 'tool.call':
        this.call(turnId, String(d.callId), String(d.name), String(d.arguments ?? ''), d);
        return false;
      case 'tool.updated':
        this.updated(String(d.callId), d);
        return false;
      case 'tool.result':
        this.result(String(d.callId), String(d.status), d.exitCode as number | null | undefined, String(d.output ?? ''));
        return false;
      case 'approval.requested': {
        const card = this.current(turnId);
        if (!card || card.approvalId !== undefined) return false;
        card.approvalId = String(d.approvalId);
        card.approval = new ApprovalActions(
          { sessionId: e.sessionId, approvalId: card.approvalId, revision: typeof d.revision === 'number' ? d.revision : 1, ...(typeof d.expiresAt === 'number' ? { expiresAt: d.expiresAt } : {}), ...approvalOptions(d.options) },
          this.control,
        );
        card.el.append(card.approval.el);
        this.byApproval.set(card.approvalId, card);
        this.setStatus(card, 'pending', 'waiting for approval');
        return true;
      }
      case 'approval.resolved': {
        const card = this.byApproval.get(String(d.approvalId));
        if (!card) return false;
        const by = (d.by as { clientName?: string } | undefined)?.clientName;
        card.approval?.resolve(String(d.decision), by, typeof d.reason === 'string' ? d.reason : undefined, typeof d.optionId === 'string' ? d.optionId : undefined);
        if (this.open.get(card.turnId)?.includes(card)) this.setStatus(card, d.decision === 'approve' ? 'approved' : 'denied', d.decision === 'approve' ? 'approved' : 'denied');
        return true;
      }
      case 'command.started': {
        const card = this.current(turnId);
        if (card) {
          card.running = true;
          this.setStatus(card, 'running', `running${typeof d.pid === 'number' ? ` (pid ${d.pid})` : ''}; output in the terminal below`);
        }
        return false;
      }
      case 'command.completed': {
        const card = this.current(turnId);
        if (card && card.running) {
          card.running = false;
          this.setStatus(card, 'exited', d.exitCode === null ? `killed by ${String(d.signal)}` : `exited ${String(d.exitCode)}`);
        }
        return false;
      }
      default:
        return false;
    }
  }

  setControl(control: Control): void {
    this.control = control;
    for (const card of this.cards.values()) if (card.approval && !card.approval.resolved) card.approval.setControl(control);
  }

  private current(turnId: string): ToolCard | undefined {
    return this.open.get(turnId)?.[0];
  }

  private call(turnId: string, callId: string, name: string, args: string, d: Record<string, unknown>): void {
    const card: ToolCard = { el: el('div', 'card tool'), callId, turnId, status: el('span', 'tool-status'), detail: el('div', 'tool-detail'), running: false };
    card.el.dataset.callId = callId;
    const head = el('div', 'tool-head');
    head.append(el('span', 'tool-name', typeof d.kind === 'string' ? d.kind : name));
    if (typeof d.title === 'string') {
      card.title = el('span', 'tool-title', d.title);
      head.append(' ', card.title);
    } else {
      const shell = name === 'shell' ? shellArgs(args) : undefined;
      head.append(' ', el('code', 'tool-command', shell ? `$ ${shell.command}` : args));
      if (shell?.cwd) head.append(el('span', 'tool-cwd', ` in ${shell.cwd}`));
    }
    card.el.append(head, card.status, card.detail);
    this.cards.set(callId, card);
    this.setStatus(card, 'called', 'called');
    const list = this.open.get(turnId) ?? [];
    list.push(card);
    this.open.set(turnId, list);
    this.detail(card, d);
    this.container.append(card.el);
    this.container.scrollTop = this.container.scrollHeight;
  }

  /** tool.updated: what the agent changed of the call (title, status, locations, content). */
  private updated(callId: string, d: Record<string, unknown>): void {
    const card = this.cards.get(callId);
    if (!card) return;
    if (typeof d.title === 'string') {
      if (card.title) card.title.textContent = d.title;
      else card.el.querySelector('.tool-head')?.append(' ', (card.title = el('span', 'tool-title', d.title)));
    }
    this.detail(card, d);
    this.container.scrollTop = this.container.scrollHeight;
  }

  /** An ACP call's status, locations and content as the event gives them; a completed or failed call is settled. */
  private detail(card: ToolCard, d: Record<string, unknown>): void {
    if (typeof d.status === 'string' && !(card.approval && !card.approval.resolved)) this.setStatus(card, d.status, d.status.replace('_', ' '));
    if (d.status === 'completed' || d.status === 'failed') this.settle(card);
    if (d.locations === undefined && d.content === undefined) return;
    const keep = d.locations === undefined ? card.detail.querySelector('.tool-locations') : renderLocations(d.locations);
    const content = d.content === undefined ? [...card.detail.querySelectorAll(':scope > :not(.tool-locations)')] : renderContent(d.content);
    card.detail.replaceChildren(...(keep ? [keep] : []), ...content);
  }

  /** The call has its outcome: approvals and commands of its turn go to the next one. */
  private settle(card: ToolCard): void {
    const list = this.open.get(card.turnId);
    if (!list) return;
    const i = list.indexOf(card);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.open.delete(card.turnId);
  }

  private result(callId: string, status: string, exitCode: number | null | undefined, output: string): void {
    const card = this.cards.get(callId);
    if (!card) return;
    this.settle(card);
    card.running = false;
    if (typeof exitCode === 'number') card.el.dataset.exitCode = String(exitCode);
    this.setStatus(card, status, `${status}${typeof exitCode === 'number' ? ` · exit code ${exitCode}` : ''}`);
    const pre = el('pre', 'tool-output', output);
    const lines = output.split('\n').length;
    if (lines > COLLAPSE_LINES || output.length > COLLAPSE_CHARS) {
      const details = document.createElement('details');
      details.className = 'tool-output-box';
      const summary = document.createElement('summary');
      summary.textContent = `output sent to the model (${lines} lines, ${output.length} characters)`;
      details.append(summary, pre);
      card.el.append(details);
    } else card.el.append(pre);
    this.container.scrollTop = this.container.scrollHeight;
  }

  private setStatus(card: ToolCard, state: string, text: string): void {
    card.el.dataset.status = state;
    card.status.textContent = text;
  }
}
