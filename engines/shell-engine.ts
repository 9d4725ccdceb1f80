// The `shell` engine: the turn input is a command line run by /bin/sh -c in the session's
// cwd, in its own process group, after approval (policy 'ask') or at once ('auto'), in a
// pseudo-terminal of the controller's size (one stream, 'stdout'), or on pipes where none can be had
// (command.started says which: `tty`). The controller's command/input and command/resize reach it
// through EngineContext.attachTerminal.
//
// Status policy: a command that runs and exits non-zero still ends the turn 'completed' with its
// exitCode (a failing command is a result, not a turn failure). 'failed' means the command could not
// be run at all (cwd missing, spawn error). 'cancelled' means the turn was cancelled or the approval
// was denied or expired (in which case nothing ran, and turn.completed's `reason` says 'denied: …').
import * as fs from 'node:fs';
import { isAstraError } from '../protocol/index.js';
import type { Engine, EngineAvailability, EngineContext, EngineResult } from '../runtime/engine.js';
import { loadNodePty, startPtyCommand, type PtyCommand } from '../pty/pty-command.js';

/** 'auto': a pseudo-terminal where one can be had, else pipes; 'pipes': always pipes. */
export type TerminalMode = 'auto' | 'pipes';

export interface ShellEngineOptions {
  /** Time between SIGTERM and SIGKILL to the process group on cancel. */
  killGraceMs?: number;
  shell?: string;
  /**
   * Default 'auto': a pseudo-terminal where one can be had (one stream, \r\n line ends, input from
   * command/input), else pipes (command.started says tty: false and why). 'pipes': always pipes,
   * stdout and stderr apart, stdin at /dev/null.
   */
  terminal?: TerminalMode;
}

export function createShellEngine(opts: ShellEngineOptions = {}): Engine {
  const killGraceMs = opts.killGraceMs ?? 2000;
  const shell = opts.shell ?? '/bin/sh';
  const mode = opts.terminal ?? 'auto';
  return {
    events: ['command.started', 'command.output', 'command.completed'],
    availability: async () => terminalAvailability(mode),
    async runTurn(ctx: EngineContext): Promise<EngineResult> {
      const command = ctx.input.text;
      if (ctx.approvalPolicy === 'ask') {
        let decision: 'approve' | 'deny';
        try {
          decision = await ctx.requestApproval({ command, cwd: ctx.cwd });
        } catch (e) {
          // An expired approval is a denial nobody gave; a withdrawn one (the turn cancelled) is a cancel.
          if (isAstraError(e) && e.reason === 'approval_expired') return { status: 'cancelled', reason: `denied: the approval expired, ${e.message.replace(/^The approval expired: /, '').replace(/\.$/, '')}; the command was not run` };
          return { status: 'cancelled' };
        }
        if (decision !== 'approve') return { status: 'cancelled', reason: 'denied: the command was not run' };
      }
      if (ctx.signal.aborted) return { status: 'cancelled' };
      return runShellCommandAsTurn(ctx, { shell, command, cwd: ctx.cwd, killGraceMs, terminal: mode });
    },
  };
}

/** Where a shell session's commands run (Engine.availability): always available, on pipes when no pseudo-terminal can be had. */
export function terminalAvailability(mode: TerminalMode): EngineAvailability {
  if (mode === 'pipes') return { available: true, terminal: 'pipes', reason: 'the daemon is set to run commands on pipes (ASTRA_TERMINAL=pipes)' };
  if (process.platform !== 'win32' && !fs.existsSync('/dev/ptmx')) return { available: true, terminal: 'pipes', reason: 'no pseudo-terminal on this machine (no /dev/ptmx): commands run on pipes' };
  try {
    loadNodePty();
    return { available: true, terminal: 'pty' };
  } catch (e) {
    return { available: true, terminal: 'pipes', reason: `no pseudo-terminal on this machine (@lydell/node-pty: ${(e as Error).message.split('\n')[0]}): commands run on pipes` };
  }
}

/** A shell turn's result from its one command. */
async function runShellCommandAsTurn(ctx: EngineContext, cmd: ShellCommand): Promise<EngineResult> {
  const r = await runShellCommand(ctx, cmd);
  if (r.outcome === 'not_started') return { status: 'failed', error: r.error ?? 'the command could not be started' };
  return { status: r.outcome === 'cancelled' ? 'cancelled' : 'completed', exitCode: r.exitCode };
}

export interface ShellCommand {
  command: string;
  cwd: string;
  shell?: string;
  /** Time between SIGTERM and SIGKILL to the process group on cancel (default 2 s). */
  killGraceMs?: number;
  /** Default: the daemon's. */
  env?: NodeJS.ProcessEnv;
  /** Sees every chunk of output as it goes out (before it is emitted). */
  onOutput?: (chunk: Buffer) => void;
  /** 'auto': a pseudo-terminal where one can be had; 'pipes' (the default here, for a model's tool calls): pipes. */
  terminal?: TerminalMode;
  /** Nobody will type into it (a model's tool call): a command reading stdin gets end-of-input. */
  noInput?: boolean;
}

export interface ShellCommandOutcome {
  /** 'exited': it ran to its end (any exit code or signal); 'cancelled': killed because ctx.signal fired; 'not_started': spawn failed. */
  outcome: 'exited' | 'cancelled' | 'not_started';
  exitCode: number | null;
  signal: string | null;
  /** Why it could not be started (not_started only). */
  error?: string;
}

/** Why a command cannot start in `cwd` (undefined when it can). */
function unusableCwd(cwd: string): string | undefined {
  try {
    return fs.statSync(cwd).isDirectory() ? undefined : `cwd ${cwd} is not a directory`;
  } catch (e) {
    return `cwd ${cwd} is not usable: ${(e as Error).message}`;
  }
}

/**
 * Runs a command line as a shell turn runs it — /bin/sh -c in its own process group, in a
 * pseudo-terminal of the controller's size or on pipes (command.started says which), its
 * command.started / command.output / command.completed events in the turn's stream, input and resize
 * routed to it through ctx.attachTerminal, killed (TERM, then KILL after the grace) when ctx.signal
 * fires. The chat engine's tool calls run through this too.
 */
export async function runShellCommand(ctx: EngineContext, cmd: ShellCommand): Promise<ShellCommandOutcome> {
  const cwdError = unusableCwd(cmd.cwd);
  if (cwdError) return { outcome: 'not_started', exitCode: null, signal: null, error: cwdError };
  const shell = cmd.shell ?? '/bin/sh';
  const size = ctx.terminalSize?.() ?? { cols: 80, rows: 24 };
  let pty: PtyCommand;
  try {
    pty = startPtyCommand({
      command: cmd.command,
      cwd: cmd.cwd,
      env: envRecord(cmd.env ?? process.env),
      cols: size.cols,
      rows: size.rows,
      shell,
      killGraceMs: cmd.killGraceMs ?? 2000,
      mode: cmd.terminal ?? 'pipes',
      // Pipes by choice keep stdin at /dev/null, as before terminals: on pipes, nobody types into a
      // command (a pipe fallback under 'auto' takes input).
      noInput: cmd.noInput === true || (cmd.terminal ?? 'pipes') === 'pipes',
      onOutput: (data, stream) => {
        cmd.onOutput?.(data);
        return ctx.emit('command.output', { turnId: ctx.turnId, stream, data });
      },
      drained: () => ctx.drained(),
    });
  } catch (e) {
    return { outcome: 'not_started', exitCode: null, signal: null, error: `could not start ${shell}: ${(e as Error).message}` };
  }
  if (pty.pid !== undefined) {
    const started = { turnId: ctx.turnId, command: cmd.command, cwd: cmd.cwd, pid: pty.pid, tty: pty.tty };
    ctx.emit('command.started', pty.tty ? { ...started, cols: size.cols, rows: size.rows } : started);
  }
  const detach = ctx.attachTerminal?.(pty) ?? (() => {});
  const onAbort = () => pty.cancel();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal.aborted) onAbort();
  const r = await pty.done;
  detach();
  ctx.signal.removeEventListener('abort', onAbort);
  if (r.error !== undefined && pty.pid === undefined) return { outcome: 'not_started', exitCode: null, signal: null, error: r.error };
  ctx.emit('command.completed', { turnId: ctx.turnId, exitCode: r.exitCode, signal: r.signal });
  return { outcome: r.cancelled ? 'cancelled' : 'exited', exitCode: r.exitCode, signal: r.signal };
}

function envRecord(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
