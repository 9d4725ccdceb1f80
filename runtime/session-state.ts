// SessionState: what a session's events add up to — the meta's fields, the running turn, finished
// turns, pending approvals, idempotency entries, open commands, the history its engine declared.
// Its one writer is applyEvent (and applyRecord for the journal's internal records), called for
// every event as it is appended AND as it is replayed, so live and restarted sessions cannot
// disagree. Turn and approval code append events; they never set this state themselves. The
// running turn's controls (cancel, a failure, the attached terminal) are the RunningTurn's own.
import type { EventData, EventType, FinalTurnStatus } from '../protocol/index.js';
import type { ApprovalRequest, Engine, RecordedEvent } from './engine.js';
import { RecordKind } from '../journal/journal.js';
import { IdempotencyTable } from './idempotency.js';
import { RunningTurn } from './running-turn.js';
import type { SessionMeta } from './session-meta.js';

export { RunningTurn };

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
  /** The events of the types the session's engine declared (Engine.history), earliest first. */
  private readonly historyEvents: RecordedEvent[] = [];
  /** Engine.history of the session's engine, found when first needed (the meta's engine may come from session.created). */
  private historyTypes: { engine: string; types: ReadonlySet<string> } | undefined;
  /**
   * Per turn, in the order they started: the seq of its turn.started and about how many lines it
   * printed (its input, command output's newlines, messages' and tool results' lines) — what a
   * subscription with historyLines cuts by (historyStart). Two numbers a turn.
   */
  private readonly turnStartSeqs: number[] = [];
  private readonly turnLineCounts: number[] = [];

  /** `engineOf`: the engine registered under a name (undefined for one this runtime does not have). */
  constructor(
    readonly meta: SessionMeta,
    private readonly engineOf: (name: string) => Engine | undefined,
  ) {}

  /** The turn running now (turn.started without its turn.completed). */
  get running(): RunningTurn | undefined {
    return this.runningTurn;
  }

  get lastTurnId(): string | undefined {
    return this.lastTurn;
  }

  /**
   * What an event changes in the session (the default: only updatedAt): live as it is appended,
   * and on replay. Positional, so streamed output folds without an event object being built.
   */
  applyEvent<T extends EventType>(type: T, data: EventData<T>, seq: number, ts: number): void {
    const m = this.meta;
    if (ts > m.updatedAt) m.updatedAt = ts;
    switch (type) {
      case 'command.output':
        this.countOutput((data as EventData<'command.output'>).data);
        break;
      case 'message.delta':
        break;
      case 'session.created': {
        const d = data as EventData<'session.created'>;
        m.title = d.title;
        m.cwd = d.cwd;
        m.engine = d.engine;
        m.approvalPolicy = d.approvalPolicy;
        m.createdAt = ts;
        break;
      }
      case 'session.updated': {
        const d = data as EventData<'session.updated'>;
        if (d.title !== undefined && d.title !== null) m.title = d.title;
        if (d.state === 'archived') m.archived = true;
        else if (d.state === 'idle') m.archived = false; // session/unarchive
        break;
      }
      case 'lease.changed':
        m.epoch = Math.max(m.epoch, (data as EventData<'lease.changed'>).epoch);
        break;
      case 'turn.started': {
        const turnId = (data as EventData<'turn.started'>).turnId;
        this.turnStartSeqs.push(seq);
        this.turnLineCounts.push(1);
        this.lastTurn = turnId;
        if (this.runningTurn?.turnId !== turnId) this.runningTurn = new RunningTurn(turnId);
        break;
      }
      case 'approval.requested': {
        const d = data as EventData<'approval.requested'>;
        const a: ApprovalRequest = { sessionId: m.id, approvalId: d.approvalId, turnId: d.turnId, command: d.command, cwd: d.cwd, revision: d.revision ?? 1 };
        if (d.reason !== undefined && d.reason !== null) a.reason = d.reason;
        if (d.expiresAt !== undefined && d.expiresAt !== null) a.expiresAt = d.expiresAt;
        if (d.paramsDigest !== undefined && d.paramsDigest !== null) a.paramsDigest = d.paramsDigest;
        if (d.options) a.options = d.options;
        this.approvals.set(a.approvalId, a);
        break;
      }
      case 'approval.resolved':
        this.approvals.delete((data as EventData<'approval.resolved'>).approvalId);
        break;
      case 'turn.completed': {
        const d = data as EventData<'turn.completed'>;
        this.turns.set(d.turnId, d.status);
        if (this.runningTurn?.turnId === d.turnId) {
          this.runningTurn.end();
          this.runningTurn = undefined;
        }
        this.openCommands.clear();
        break;
      }
      case 'command.started': {
        const pid = (data as EventData<'command.started'>).pid;
        if (pid !== undefined && pid !== null) this.openCommands.set(pid, ts);
        break;
      }
      case 'command.completed':
        this.openCommands.clear();
        break;
      case 'tool.result':
        this.addLines(1 + countTextLines((data as EventData<'tool.result'>).output));
        break;
      case 'message.completed':
        this.addLines(1 + countTextLines((data as EventData<'message.completed'>).text));
        break;
      default:
        break;
    }
    if (this.keepsInHistory(type)) this.historyEvents.push({ type, data });
  }

  /** The events the session's engine declared in Engine.history, earliest first (a copy). */
  history(): RecordedEvent[] {
    return this.historyEvents.slice();
  }

  private keepsInHistory(type: string): boolean {
    const engine = this.meta.engine;
    if (!engine) return false;
    if (this.historyTypes?.engine !== engine) this.historyTypes = { engine, types: new Set(this.engineOf(engine)?.history ?? []) };
    return this.historyTypes.types.size > 0 && this.historyTypes.types.has(type);
  }

  /** Output's share of the turn's line count. */
  private countOutput(data: Uint8Array): void {
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

  get finishedTurns(): ReadonlyMap<string, FinalTurnStatus> {
    return this.turns;
  }
}
