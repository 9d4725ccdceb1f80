// The contract between the runtime and an engine (DESIGN.md §5 "Engines").
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
  /**
   * Resolves with the host's decision; rejects (AbortError) when the turn is cancelled first, and
   * with AstraError('approval_expired') when nobody answered within the session's approvalTimeoutMs.
   */
  requestApproval(req: { command: string; cwd: string; reason?: string }): Promise<'approve' | 'deny'>;
}

export interface EngineResult {
  status: 'completed' | 'failed' | 'cancelled';
  exitCode?: number | null;
  error?: string;
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
