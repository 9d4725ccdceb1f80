// The contract between the runtime and an engine (DESIGN.md §5 "Engines").
import type { ApprovalPolicy, EventData, EventType } from '../protocol/index.js';

export interface EngineContext {
  sessionId: string;
  turnId: string;
  cwd: string;
  input: { text: string };
  approvalPolicy: ApprovalPolicy;
  /** Aborted when the turn is cancelled; an engine should stop promptly and return 'cancelled'. */
  signal: AbortSignal;
  /**
   * Appends an event to the session (journal first, then subscribers), in call order. A
   * command.output `data` buffer may be kept by reference (not copied): do not change it afterwards.
   */
  emit<T extends EventType>(type: T, data: EventData<T>): void;
  /** Resolves with the host's decision; rejects (AbortError) when the turn is cancelled first. */
  requestApproval(req: { command: string; cwd: string; reason?: string }): Promise<'approve' | 'deny'>;
}

export interface EngineResult {
  status: 'completed' | 'failed' | 'cancelled';
  exitCode?: number | null;
  error?: string;
}

export interface Engine {
  runTurn(ctx: EngineContext): Promise<EngineResult>;
}

export interface ApprovalRequest {
  sessionId: string;
  approvalId: string;
  turnId: string;
  command: string;
  cwd: string;
  reason?: string;
}
