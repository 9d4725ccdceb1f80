// What a chat turn works with: the runtime's EngineContext with the session's history (the events
// the engine declared in Engine.history) and a way to run a tool command. In the runtime, history()
// is the context's and runCommand() the engine's own (tool-command.ts); tests give both in memory.
import type { EngineContext, RecordedEvent } from '../../runtime/engine.js';
import type { ChatSessionOptions } from './options.js';
import type { CapturedOutput } from './tool-output.js';

export interface ToolCommandOutcome {
  /** 'exited': it ran to its end (any exit code or signal); 'cancelled': killed because the turn was
   *  cancelled; 'not_started': it could not be run (cwd missing, spawn error) and `error` says why. */
  outcome: 'exited' | 'cancelled' | 'not_started';
  exitCode: number | null;
  signal: string | null;
  /** Head and tail of stdout and stderr together, under the cap asked for (OutputCapture). */
  output: CapturedOutput;
  error?: string;
}

export interface ChatEngineContext extends EngineContext {
  /** The session's options as validated by parseChatOptions at session/create. */
  engineOptions: ChatSessionOptions;
  /**
   * The session's events so far, earliest first (those of this turn may be included: the engine
   * skips them). Read once at the start of each turn. Only TRANSCRIPT_EVENT_TYPES are needed (the
   * engine's Engine.history): the runtime keeps those folded as they are appended rather than
   * reading the journal each turn.
   */
  history(): Promise<readonly RecordedEvent[]>;
  /**
   * Runs `command` with /bin/sh -c in `cwd` exactly as the shell engine runs a turn's command: its
   * own process group, its command.started / command.output / command.completed events in this
   * session's stream, killed (TERM, then KILL after the grace) when ctx.signal fires. No approval:
   * the engine has asked for it already. Keeps at most `captureBytes` of the output (head and tail).
   * The command's environment must be chatCommandEnv()'s: the daemon's without the API key.
   */
  runCommand(req: { command: string; cwd: string; captureBytes: number }): Promise<ToolCommandOutcome>;
}

/** The context a chat turn needs; runCommand may be left to the engine (it then runs tool commands itself). */
export type ChatTurnContext = Omit<ChatEngineContext, 'runCommand'> & Partial<Pick<ChatEngineContext, 'runCommand'>>;

export function isChatTurnContext(ctx: EngineContext): ctx is ChatTurnContext {
  const c = ctx as Partial<ChatEngineContext>;
  return typeof c.history === 'function' && typeof c.engineOptions === 'object' && c.engineOptions !== null;
}
