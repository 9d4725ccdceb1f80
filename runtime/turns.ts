// Turns: start (keyed, durable before it is acknowledged), run (the engine and its context, output
// chunking, backpressure), cancel, and the end of a turn the disk cannot take any more. The running
// turn itself is session state: turn.started and turn.completed set and clear it (session-state.ts).
import type { EventData, FinalTurnStatus, TraceContext, TurnStatus } from '../protocol/index.js';
import { AstraError, LIMITS } from '../protocol/index.js';
import type { Approvals } from './approvals.js';
import type { Engine, EngineContext, EngineResult } from './engine.js';
import { checkEngineEvent, engineEventTypes } from './engine-events.js';
import { fingerprint } from './idempotency.js';
import { newId } from './ids.js';
import { RecordKind } from '../journal/journal.js';
import type { RuntimeLogger } from './logger.js';
import type { RunningTurn } from './running-turn.js';
import type { SessionHost } from './session-host.js';
import { DAEMON_BOUNDS } from '../flow/index.js';

/** EngineContext.emit returns false once this many bytes of a session's events wait for the disk (flow/daemon-bounds.ts turnBacklog). */
const BACKLOG_HIGH_MARK = DAEMON_BOUNDS.turnBacklog.value;

export interface TurnDeps {
  engineOf(name: string): Engine | undefined;
  maxInputChars: number;
  logger: RuntimeLogger;
  approvals: Approvals;
  isClosed(): boolean;
  ended(sessionId: string, turnId: string, status: FinalTurnStatus): void;
}

export class Turns {
  constructor(private readonly d: TurnDeps) {}

  start(host: SessionHost, text: string, idempotencyKey: string, terminal?: { cols: number; rows: number }, trace?: TraceContext): Promise<{ turnId: string }> {
    const max = this.d.maxInputChars;
    // The size is the controller's for every later command, whatever becomes of this turn.
    if (terminal) host.setTerminalSize(terminal.cols, terminal.rows);
    if (text.length > max)
      return Promise.reject(
        new AstraError('input_too_large', `The input has ${text.length} characters; the limit is ${max}. Shorten it.`, { input_error_code: 'input_too_large', max_chars: max, actual_chars: text.length }),
      );
    const fp = fingerprint({ m: 'turn/start', text });
    const conflict = () => new AstraError('idempotency_conflict', `Idempotency key ${idempotencyKey} was used with a different input.`, { idempotencyKey });
    return host.state.idempotency.run(idempotencyKey, fp, conflict, async () => {
      const id = host.id;
      if (host.meta.archived) throw new AstraError('invalid_state', `Session ${id} is archived; create a new session.`, { sessionId: id });
      const busy = host.state.running;
      if (busy) throw new AstraError('turn_in_progress', `Session ${id} already has turn ${busy.turnId} running; cancel it or wait.`, { sessionId: id, turnId: busy.turnId });
      host.checkWritable();
      const turnId = newId('turn');
      const result = { turnId };
      host.append('turn.started', { turnId, input: { text } });
      const running = host.state.running!;
      host.append('message.user', { turnId, text });
      // The idempotency record goes last: if it survives a crash, the turn's events before it do too.
      host.appendInternal(RecordKind.idempotency, { key: idempotencyKey, fingerprint: fp, result });
      try {
        await host.sync();
      } catch (e) {
        this.endUnrun(host, running, (e as Error).message);
        throw e;
      }
      void this.run(host, running, text, trace);
      return result;
    });
  }

  /** A turn that started but could not be made durable never runs: it ends failed. */
  private endUnrun(host: SessionHost, turn: RunningTurn, why: string): void {
    const data = { turnId: turn.turnId, status: 'failed', error: `the turn could not be recorded: ${why}` } as const;
    try {
      host.append('turn.completed', data);
    } catch {
      host.foldUnrecorded('turn.completed', data);
    }
  }

  private async run(host: SessionHost, turn: RunningTurn, text: string, trace: TraceContext | undefined): Promise<void> {
    const turnId = turn.turnId;
    // The turn's log lines carry the trace context of the turn/start that began it.
    const traced = trace ? { ...trace } : {};
    const engineName = host.meta.engine;
    const engine = this.d.engineOf(engineName);
    const allowed = engineEventTypes(engine);
    const signal = turn.signal;
    const ctx: EngineContext = {
      sessionId: host.id,
      turnId,
      cwd: host.meta.cwd,
      input: { text },
      approvalPolicy: host.meta.approvalPolicy,
      engineOptions: host.meta.engineOptions ?? {},
      signal,
      ...(trace ? { trace: { ...trace } } : {}),
      emit: (type, data) => {
        checkEngineEvent(engineName, allowed, type);
        if (turn.ended || this.d.isClosed()) return true;
        // A full disk: the turn is being stopped (diskFull), and its output has nowhere to go.
        if (host.blocked) return false;
        try {
          const d = data as EventData<'command.output'>;
          const max = LIMITS.maxOutputChunkBytes;
          if (type === 'command.output' && d.data.length > max) {
            for (let off = 0; off < d.data.length; off += max) host.appendStored('command.output', { ...d, data: d.data.subarray(off, Math.min(off + max, d.data.length)) });
          } else host.appendStored(type, data);
        } catch (e) {
          this.d.logger.error({ sessionId: host.id, turnId, type, err: (e as Error).message, ...traced }, 'engine event could not be appended');
        }
        // Held when the journal's backlog is full, or the running command's screen is.
        return host.backlogBytes < BACKLOG_HIGH_MARK && !host.screen.full;
      },
      drained: () => host.drained(BACKLOG_HIGH_MARK),
      terminalSize: () => host.terminalSize,
      attachTerminal: (t) => turn.attach(t),
      requestApproval: (req) => this.d.approvals.request(host, turnId, signal, req).then((r) => r.decision),
      requestChoice: (req) => this.d.approvals.request(host, turnId, signal, req),
      // Folded as events are appended and replayed (SessionState.history): no journal read per turn.
      history: async () => host.state.history(),
    };
    let result: EngineResult;
    try {
      if (!engine) throw new Error(`engine '${engineName}' is not available in this daemon`);
      result = await engine.runTurn(ctx);
    } catch (e) {
      result = { status: 'failed', error: (e as Error).message };
    }
    if (this.d.isClosed()) return; // close() cancels nothing; the next open marks the turn interrupted
    this.d.approvals.withdrawTurn(host, turnId, 'the turn ended');
    if (turn.failure !== undefined) result = { status: 'failed', error: turn.failure };
    const data: EventData<'turn.completed'> = { turnId, status: result.status };
    if (result.exitCode !== undefined) data.exitCode = result.exitCode;
    if (result.error !== undefined) data.error = result.error;
    if (result.reason !== undefined && turn.failure === undefined) data.reason = result.reason;
    try {
      if (turn.failure !== undefined) host.append('error', { reason: 'disk_full', message: turn.failure, turnId });
      host.append('turn.completed', data);
    } catch (e) {
      this.d.logger.error({ sessionId: host.id, turnId, err: (e as Error).message, ...traced }, 'turn.completed could not be appended');
      host.foldUnrecorded('turn.completed', data);
    }
    try {
      await host.sync();
    } catch (e) {
      this.d.logger.error({ sessionId: host.id, turnId, err: (e as Error).message, ...traced }, 'turn.completed could not be made durable');
    }
    this.d.ended(host.id, turnId, result.status);
  }

  cancel(host: SessionHost, turnId?: string): { turnId: string; status: TurnStatus } {
    const running = host.state.running;
    if (running && (turnId === undefined || turnId === running.turnId)) {
      running.cancel();
      return { turnId: running.turnId, status: running.status };
    }
    const target = turnId ?? host.state.lastTurnId;
    const status = target !== undefined ? host.state.finishedTurns.get(target) : undefined;
    if (target === undefined || status === undefined)
      throw new AstraError('not_found', turnId ? `Session ${host.id} has no turn ${turnId}.` : `Session ${host.id} has no turn to cancel.`, { sessionId: host.id, turnId });
    return { turnId: target, status };
  }

  /** command/input: bytes to the running command's terminal. */
  input(host: SessionHost, turnId: string, data: Uint8Array): void {
    const terminal = this.commandOf(host, turnId);
    if (!terminal)
      throw new AstraError('invalid_state', `Turn ${turnId} has no command running yet (it may be waiting for approval); send input after command.started.`, { sessionId: host.id, turnId });
    if (!terminal.write(data))
      throw new AstraError('invalid_state', `The command of turn ${turnId} takes no more input (it has ended or closed its input).`, { sessionId: host.id, turnId });
  }

  /** command/resize: the size is kept for the session's next commands and applied to the running one. */
  resize(host: SessionHost, turnId: string, cols: number, rows: number): { applied: boolean } {
    const terminal = this.commandOf(host, turnId);
    const changed = host.setTerminalSize(cols, rows);
    const applied = terminal ? terminal.resize(cols, rows) : false;
    if (applied) host.screen.resize(turnId, cols, rows);
    // Every screen subscriber gets the screen again at its new size (an observer learns the size).
    if (applied && changed) host.refreshScreens();
    return { applied };
  }

  /** The running turn's command (undefined between commands); a turn that is not running is an error. */
  private commandOf(host: SessionHost, turnId: string) {
    const running = host.state.running;
    if (running && running.turnId === turnId) return running.terminal;
    if (host.state.finishedTurns.has(turnId))
      throw new AstraError('invalid_state', `Turn ${turnId} has ended; its command takes no input or resize. Start a new turn.`, { sessionId: host.id, turnId });
    throw new AstraError('not_found', `Session ${host.id} has no turn ${turnId}.`, { sessionId: host.id, turnId });
  }

  /** The session's disk is full: its running turn is stopped, and ends 'failed' with an error event naming the cause. */
  diskFull(host: SessionHost, err: AstraError): void {
    const running = host.state.running;
    running?.fail(err.message);
  }
}
