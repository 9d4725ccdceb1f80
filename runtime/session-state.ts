// SessionState: what a session's events add up to — the meta's fields, the running turn, finished
// turns, pending approvals, idempotency entries. Its one writer is applyEvent (and applyRecord for
// the journal's internal records), called for every event as it is appended AND as it is replayed,
// so live and restarted sessions cannot disagree. Turn and approval code append events; they never
// set this state themselves.
import type { FinalTurnStatus, SessionEvent } from '../protocol/index.js';
import type { ApprovalRequest, CommandTerminal } from './engine.js';
import { RecordKind } from '../journal/journal.js';
import { IdempotencyTable } from './idempotency.js';
import { TranscriptEvents } from '../engines/chat/transcript.js';
import type { SessionMeta } from './session-meta.js';

export interface RunningTurn {
  readonly turnId: string;
  status: 'running' | 'cancelling';
  /** Aborted on cancel; a turn replayed from the journal has no engine listening to it. */
  readonly abort: AbortController;
  /** turn.completed was appended: the engine's later emits are ignored. */
  ended: boolean;
  /** Why the runtime stopped it (a full disk): it then ends 'failed' with this error. */
  failure?: string;
  /** The command running now, attached by the engine (EngineContext.attachTerminal). */
  terminal?: CommandTerminal;
}

/**
 * A turn's line count stops growing here: no historyLines (at most 100,000) needs to know more, and
 * output with dense newlines then costs nothing more to fold.
 */
export const LINES_ENOUGH = 100_001;

/**
 * Newlines in output bytes, up to `max`. Buffer#indexOf is memchr: output with few newlines (binary,
 * long lines, 4 MiB of zeros) is scanned at memory speed — a plain loop, about a byte a nanosecond,
 * halved the 4 MiB output events' throughput; dense newlines stop at `max`.
 */
export function countNewlines(data: Uint8Array, max = Infinity): number {
  const b = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let n = 0;
  for (let i = b.indexOf(10); i !== -1 && n < max; i = b.indexOf(10, i + 1)) n++;
  return n;
}

function countTextLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

export class SessionState {
  private runningTurn: RunningTurn | undefined;
  private lastTurn: string | undefined;
  private readonly turns = new Map<string, FinalTurnStatus>();
  /** Pending approvals, in the shape the daemon is handed (engine.ts ApprovalRequest). */
  readonly approvals = new Map<string, ApprovalRequest>();
  /** turn/start keys (and, read back from the journal, the key that created the session). */
  readonly idempotency = new IdempotencyTable();
  /** Commands started by the running turn and not yet completed: pid → start ts (killed if the turn is found interrupted). */
  readonly openCommands = new Map<number, number>();
  /** Tool calls (tool.call) without their tool.result yet: callId → turnId (answered 'interrupted' if the turn is found interrupted). */
  readonly openToolCalls = new Map<string, string>();
  /** A chat session's conversation events (the chat engine's ctx.history()); empty for other engines. */
  readonly transcript = new TranscriptEvents();
  /** The controller's terminal size (command/resize), which commands start at; not journaled. */
  terminalSize = { cols: 80, rows: 24 };
  /**
   * Per turn, in the order they started: the seq of its turn.started and about how many lines it
   * printed (its input, command output's newlines, messages' and tool results' lines) — what a
   * subscription with historyLines cuts by (historyStart). Two numbers a turn.
   */
  private readonly turnStartSeqs: number[] = [];
  private readonly turnLineCounts: number[] = [];

  constructor(readonly meta: SessionMeta) {}

  /** The turn running now (turn.started without its turn.completed). */
  get running(): RunningTurn | undefined {
    return this.runningTurn;
  }

  get lastTurnId(): string | undefined {
    return this.lastTurn;
  }

  /** What an event changes in the session (the default: only updatedAt). */
  applyEvent(e: SessionEvent): void {
    const m = this.meta;
    m.updatedAt = Math.max(m.updatedAt, e.ts);
    switch (e.type) {
      case 'session.created':
        m.title = e.data.title;
        m.cwd = e.data.cwd;
        m.engine = e.data.engine;
        m.approvalPolicy = e.data.approvalPolicy;
        m.createdAt = e.ts;
        break;
      case 'session.updated':
        if (e.data.title !== undefined && e.data.title !== null) m.title = e.data.title;
        if (e.data.state === 'archived') m.archived = true;
        else if (e.data.state === 'idle') m.archived = false; // session/unarchive
        break;
      case 'lease.changed':
        m.epoch = Math.max(m.epoch, e.data.epoch);
        break;
      case 'turn.started':
        this.turnStartSeqs.push(e.seq);
        this.turnLineCounts.push(1);
        this.lastTurn = e.data.turnId;
        if (this.runningTurn?.turnId !== e.data.turnId) this.runningTurn = { turnId: e.data.turnId, status: 'running', abort: new AbortController(), ended: false };
        break;
      case 'approval.requested': {
        const a: ApprovalRequest = { sessionId: m.id, approvalId: e.data.approvalId, turnId: e.data.turnId, command: e.data.command, cwd: e.data.cwd, revision: e.data.revision ?? 1 };
        if (e.data.reason !== undefined && e.data.reason !== null) a.reason = e.data.reason;
        if (e.data.expiresAt !== undefined && e.data.expiresAt !== null) a.expiresAt = e.data.expiresAt;
        this.approvals.set(a.approvalId, a);
        break;
      }
      case 'approval.resolved':
        this.approvals.delete(e.data.approvalId);
        break;
      case 'turn.completed':
        this.endTurn(e.data.turnId, e.data.status);
        break;
      case 'command.started':
        if (e.data.pid !== undefined && e.data.pid !== null) this.openCommands.set(e.data.pid, e.ts);
        break;
      case 'command.completed':
        this.openCommands.clear();
        break;
      case 'tool.call':
        this.openToolCalls.set(e.data.callId, e.data.turnId);
        break;
      case 'tool.result':
        this.openToolCalls.delete(e.data.callId);
        this.addLines(1 + countTextLines(e.data.output));
        break;
      case 'message.completed':
        this.addLines(1 + countTextLines(e.data.text));
        break;
      case 'command.output':
        this.applyOutput(e.ts, e.data.data);
        break;
      default:
        break;
    }
    if (m.engine === 'chat') this.transcript.add(e.type, e.data);
  }

  /** What the fold of a streamed-output event (command.output, message.delta) amounts to, without building the event. */
  touch(ts: number): void {
    if (ts > this.meta.updatedAt) this.meta.updatedAt = ts;
  }

  /** The fold of command.output (live without building the event, and on replay): updatedAt and the turn's line count. */
  applyOutput(ts: number, data: Uint8Array): void {
    if (ts > this.meta.updatedAt) this.meta.updatedAt = ts;
    const last = this.turnLineCounts.length - 1;
    if (last < 0) return;
    const have = this.turnLineCounts[last]!;
    if (have < LINES_ENOUGH) this.turnLineCounts[last] = have + countNewlines(data, LINES_ENOUGH - have);
  }

  private addLines(n: number): void {
    const last = this.turnLineCounts.length - 1;
    if (last >= 0) this.turnLineCounts[last]! += n;
  }

  /**
   * Where a backlog of about `lines` lines of finished turns starts: the seq of the turn.started of
   * the earliest turn kept — the running turn and the latest finished one always are, and earlier
   * ones while their lines fit. Undefined when every turn fits (nothing is left out). Walks back
   * from the latest turn only as far as it keeps.
   */
  historyStart(lines: number): number | undefined {
    const n = this.turnStartSeqs.length;
    if (n === 0) return undefined;
    let i = n - 1;
    // The running turn is kept whatever it printed, and does not count.
    if (this.runningTurn && i > 0) i--;
    let total = this.turnLineCounts[i]!;
    while (i > 0 && total + this.turnLineCounts[i - 1]! <= lines) total += this.turnLineCounts[--i]!;
    return i === 0 ? undefined : this.turnStartSeqs[i];
  }

  /** An internal journal record (decoded); false when it is not well formed. */
  applyRecord(kind: number, value: unknown): boolean {
    if (kind === RecordKind.idempotency) {
      const r = value as { key?: unknown; fingerprint?: unknown; result?: unknown };
      if (typeof r?.key !== 'string' || typeof r.fingerprint !== 'string') return false;
      this.idempotency.remember(r.key, r.fingerprint, r.result);
      if (typeof (r.result as { sessionId?: unknown })?.sessionId === 'string') {
        this.meta.createKey = r.key;
        this.meta.createFingerprint = r.fingerprint;
      }
    } else if (kind === RecordKind.settings) {
      const s = value as { onControllerLost?: unknown; engineOptions?: unknown; approvalTimeoutMs?: unknown };
      if (typeof s?.approvalTimeoutMs === 'number' && s.approvalTimeoutMs > 0) this.meta.approvalTimeoutMs = s.approvalTimeoutMs;
      if (s?.onControllerLost === 'cancel' || s?.onControllerLost === 'continue') this.meta.onControllerLost = s.onControllerLost;
      if (s?.engineOptions && typeof s.engineOptions === 'object' && !Array.isArray(s.engineOptions)) this.meta.engineOptions = s.engineOptions;
    }
    // Unknown kinds inside a supported format are skipped: they carry nothing this build needs.
    return true;
  }

  /**
   * What turn.completed folds to. Called directly only when that event could not even be queued
   * (the journal failed): the turn is over either way, and the session must not stay 'running'.
   */
  endTurn(turnId: string, status: FinalTurnStatus): void {
    this.turns.set(turnId, status);
    if (this.runningTurn?.turnId === turnId) {
      this.runningTurn.ended = true;
      this.runningTurn = undefined;
    }
    this.openCommands.clear();
  }

  get finishedTurns(): ReadonlyMap<string, FinalTurnStatus> {
    return this.turns;
  }
}
