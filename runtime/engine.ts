// The contract between the runtime and an engine (docs/engines.md).
import type { ApprovalPolicy, EventData, EventType } from '../protocol/index.js';

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
   * Appends an event to the session (journal first, then subscribers), in call order. A
   * command.output `data` buffer may be kept by reference (not copied): do not change it afterwards.
   * Returns false when more than 16 MiB of events wait for the disk (large output coming faster than
   * the journal writes it): an engine that can wait should then await drained() before emitting
   * more, as with a Node stream's write() and 'drain'. The event is appended either way; an engine
   * that goes on regardless is held back by synchronous journal writes once 32 MiB wait.
   */
  emit<T extends EventType>(type: T, data: EventData<T>): boolean;
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
}

/** What command/input and command/resize reach: the running command's terminal (or pipes). */
export interface CommandTerminal {
  /** False when the command can take no more input (it ended, or closed its input). */
  write(data: Uint8Array): boolean;
  /** False when there is no terminal to resize (pipes). */
  resize(cols: number, rows: number): boolean;
}

export interface EngineResult {
  status: 'completed' | 'failed' | 'cancelled';
  exitCode?: number | null;
  error?: string;
  /** turn.completed's `reason`: why a turn ended without a cancel or a failure (its command denied). */
  reason?: string;
}

export interface Engine {
  runTurn(ctx: EngineContext): Promise<EngineResult>;
  /**
   * Checks session/create's `engineOptions` (undefined when none were sent) and returns what is
   * stored with the session and handed to each turn as ctx.engineOptions — never a secret: it is
   * journaled. Throws AstraError('invalid_params') naming the field. An engine without it takes no
   * options: a non-empty engineOptions is refused.
   */
  parseOptions?(raw: Record<string, unknown> | undefined): object;
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
}
