// The contract between the runtime and an engine (docs/engines.md). An engine is registered by
// whoever composes the runtime (RuntimeOptions.engines; the daemon in daemon/daemon.ts) and declares
// here all the runtime needs to know of it: its options, its events, what it keeps of a session's
// history and what a turn it leaves interrupted leaves behind. The runtime names no engine.
import type { ApprovalPolicy, EventData, EventType, TraceContext } from '../protocol/index.js';

/**
 * The event types only the runtime appends: the session's own, a turn's start and end, the user's
 * message, approvals and leases. An engine emits the others (ENGINE_EVENT_TYPES).
 */
export const RUNTIME_EVENT_TYPES = ['session.created', 'session.updated', 'turn.started', 'message.user', 'approval.requested', 'approval.resolved', 'lease.changed', 'turn.completed'] as const;
export type RuntimeEventType = (typeof RUNTIME_EVENT_TYPES)[number];
/** What an engine may emit: every event type but the runtime's own. */
export type EngineEventType = Exclude<EventType, RuntimeEventType>;
export const ENGINE_EVENT_TYPES: readonly EngineEventType[] = (
  ['message.delta', 'message.completed', 'tool.call', 'tool.result', 'usage', 'command.started', 'command.output', 'command.completed', 'error', 'thought.delta', 'plan.updated', 'tool.updated', 'acp.session', 'acp.update'] as const
) satisfies readonly EngineEventType[];
// Fails to compile when protocol/ gains an event type that is in neither list.
const EVERY_TYPE_LISTED: Record<EventType, true> = Object.fromEntries([...RUNTIME_EVENT_TYPES, ...ENGINE_EVENT_TYPES].map((t) => [t, true])) as { [K in RuntimeEventType | (typeof ENGINE_EVENT_TYPES)[number]]: true };
void EVERY_TYPE_LISTED;

/** An event of the session as an engine reads it back (EngineContext.history, Engine.interrupted). */
export interface RecordedEvent {
  type: string;
  data: unknown;
}

/** An event the runtime appends on an engine's behalf (Engine.interrupted). */
export type EngineEvent = { [T in EngineEventType]: { type: T; data: EventData<T> } }[EngineEventType];

export interface EngineContext {
  sessionId: string;
  turnId: string;
  cwd: string;
  input: { text: string };
  approvalPolicy: ApprovalPolicy;
  /** The session's engineOptions as the engine's parseOptions returned them at session/create ({} when it has none). */
  engineOptions?: object;
  /** Aborted when the turn is cancelled; an engine should stop promptly and return 'cancelled'. */
  signal: AbortSignal;
  /**
   * The W3C trace context (`traceparent`, `tracestate`) of the turn/start request that began the
   * turn, as the client sent it (unchecked); absent when it sent none. The chat engine passes a
   * well-formed one on to the model server.
   */
  trace?: TraceContext;
  /**
   * Appends an event to the session (journal first, then subscribers), in call order. A
   * command.output `data` buffer may be kept by reference (not copied): do not change it afterwards.
   * Returns false when more than 16 MiB of events wait for the disk (large output coming faster than
   * the journal writes it): an engine that can wait should then await drained() before emitting
   * more, as with a Node stream's write() and 'drain'. The event is appended either way; an engine
   * that goes on regardless is held back by synchronous journal writes once 32 MiB wait.
   * Throws AstraError('internal_error') for a type the engine did not declare (Engine.events) or
   * one only the runtime appends (RUNTIME_EVENT_TYPES): nothing is appended.
   */
  emit<T extends EngineEventType>(type: T, data: EventData<T>): boolean;
  /**
   * The session's events of the types the engine declared in Engine.history, earliest first, folded
   * as they were appended and replayed (no journal read); this turn's own may be included. Optional
   * so that a context made outside the runtime needs none.
   */
  history?(): Promise<readonly RecordedEvent[]>;
  /** Resolves once fewer than 16 MiB of the session's events wait for the disk (at once when that is already so). */
  drained(): Promise<void>;
  // The two terminal members are optional so that a context made outside the runtime (a test, an
  // embedder's harness) needs neither: a command then starts at 80×24 and takes no input.
  /** The controller's terminal size (from command/resize; 80×24 until one arrives): a command's terminal starts at it. */
  terminalSize?(): { cols: number; rows: number };
  /**
   * Routes command/input and command/resize to the command running now, until the returned function
   * is called (call it when the command ends). One at a time: a second attach replaces the first.
   */
  attachTerminal?(t: CommandTerminal): () => void;
  /**
   * Resolves with the host's decision; rejects (AbortError) when the turn is cancelled first, and
   * with AstraError('approval_expired') when nobody answered within the session's approvalTimeoutMs.
   */
  requestApproval(req: { command: string; cwd: string; reason?: string }): Promise<'approve' | 'deny'>;
  /**
   * requestApproval with choices: the approval carries `options` and resolves with the decision and
   * the option the answer named (absent when it named none: the engine picks by the decision).
   * Optional so that a context made outside the runtime needs none.
   */
  requestChoice?(req: { command: string; cwd: string; reason?: string; options: ApprovalOption[] }): Promise<{ decision: 'approve' | 'deny'; optionId?: string }>;
}

/** One choice an approval offers: `kind` `allow_*` approves, `reject_*` denies. */
export interface ApprovalOption {
  optionId: string;
  name: string;
  kind: string;
}

/** What command/input and command/resize reach: the running command's terminal (or pipes). */
export interface CommandTerminal {
  /** False when the command can take no more input (it ended, or closed its input). */
  write(data: Uint8Array): boolean;
  /** False when there is no terminal to resize (pipes). */
  resize(cols: number, rows: number): boolean;
}

export interface EngineResult {
  /** 'interrupted': what the turn ran on died under it (an agent process), not a fault of the turn's own. */
  status: 'completed' | 'failed' | 'cancelled' | 'interrupted';
  exitCode?: number | null;
  error?: string;
  /** turn.completed's `reason`: why a turn ended without a cancel or a failure (its command denied). */
  reason?: string;
}

export interface Engine {
  runTurn(ctx: EngineContext): Promise<EngineResult>;
  /**
   * The event types its turns emit (ctx.emit refuses any other). Absent: any of ENGINE_EVENT_TYPES.
   */
  events?: readonly EngineEventType[];
  /**
   * The event types of a session the engine reads back through ctx.history(): the runtime keeps
   * these (and only these) in memory as they are appended and replayed. Absent: none.
   */
  history?: readonly EventType[];
  /**
   * What a turn of this engine found running when a session loads (the daemon stopped mid-turn)
   * leaves: events appended after its pending approvals are denied and before its turn.completed
   * ('interrupted'), of the types in `events`. Given the turn and the session's history (as
   * ctx.history() gives it). Absent: nothing.
   */
  interrupted?(turn: { turnId: string; history: readonly RecordedEvent[] }): EngineEvent[];
  /**
   * Checks session/create's `engineOptions` (undefined when none were sent) and returns what is
   * stored with the session and handed to each turn as ctx.engineOptions — never a secret: it is
   * journaled. Throws AstraError('invalid_params') naming the field. An engine without it takes no
   * options: a non-empty engineOptions is refused.
   */
  parseOptions?(raw: Record<string, unknown> | undefined): object;
  /**
   * Called at session/create after parseOptions and before anything of the session is journaled:
   * starts and checks what the engine needs (an agent process) so that a create that cannot work
   * fails at once, with a typed AstraError. Returns the options to keep instead of parseOptions'
   * (what it learned, e.g. an agent's own session id). Absent: nothing is done at create.
   */
  prepare?(options: object | undefined, session: { cwd: string }): Promise<object | undefined>;
  /**
   * Whether the engine can run a session now. Called without options for the initialize result and
   * `daemon/capabilities` (the daemon's defaults), and at session/create with parseOptions' result,
   * before prepare and before anything is journaled: `available: false` refuses the create with
   * AstraError('engine_unavailable') carrying `reason`. Must settle within a few seconds (bound any
   * probe; cache what is costly). Absent: always available.
   */
  availability?(options?: object): Promise<EngineAvailability>;
}

/** Engine.availability's answer: `reason` says why not, or how an available engine runs degraded. */
export interface EngineAvailability {
  available: boolean;
  reason?: string;
  /** Where its commands run: a pseudo-terminal or pipes (engines that run commands). */
  terminal?: 'pty' | 'pipes';
}

export interface ApprovalRequest {
  sessionId: string;
  approvalId: string;
  turnId: string;
  command: string;
  cwd: string;
  reason?: string;
  /** 1 for a new request; an answer naming another revision is refused (approval_expired). */
  revision: number;
  /** ms since the epoch after which it resolves as denied (approval_expired); absent: it waits as long as it takes. */
  expiresAt?: number;
  /** sha-256 of the real {command, cwd, reason} (runtime/secrets.ts); command and reason are masked. */
  paramsDigest?: string;
  /** The choices offered (requestChoice); an answer may name one. */
  options?: ApprovalOption[];
}
