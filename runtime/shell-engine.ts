// The built-in `shell` engine: the turn input is a command line run by /bin/sh -c in the session's
// cwd, in its own process group, after approval (policy 'ask') or at once ('auto'), in a
// pseudo-terminal of the controller's size (one stream, 'stdout'), or on pipes where none can be had
// (command.started says which: `tty`). The controller's command/input and command/resize reach it
// through EngineContext.attachTerminal.
//
// Status policy: a command that runs and exits non-zero still ends the turn 'completed' with its
// exitCode (a failing command is a result, not a turn failure). 'failed' means the command could not
// be run at all (cwd missing, spawn error). 'cancelled' means the turn was cancelled or the approval
// was denied (in which case nothing ran).
import * as fs from 'node:fs';
import type { Engine, EngineContext, EngineResult } from './engine.js';
import { startPtyCommand, type PtyCommand } from './terminal/pty-command.js';

/** 'auto': a pseudo-terminal where one can be had, else pipes; 'pipes': always pipes. */
export type TerminalMode = 'auto' | 'pipes';

export interface ShellEngineOptions {
  /** Time between SIGTERM and SIGKILL to the process group on cancel. */
  killGraceMs?: number;
  shell?: string;
  /**
   * Default 'pipes' for now: the switch to 'auto' (a pseudo-terminal) changes output (one stream,
   * \r\n) and waits on the suite's tests being adapted to that contract (issue 17).
   */
  terminal?: TerminalMode;
}

export function createShellEngine(opts: ShellEngineOptions = {}): Engine {
  const killGraceMs = opts.killGraceMs ?? 2000;
  const shell = opts.shell ?? '/bin/sh';
  const mode = opts.terminal ?? 'pipes';
  return {
    async runTurn(ctx: EngineContext): Promise<EngineResult> {
      const command = ctx.input.text;
      if (ctx.approvalPolicy === 'ask') {
        let decision: 'approve' | 'deny';
        try {
          decision = await ctx.requestApproval({ command, cwd: ctx.cwd });
        } catch {
          return { status: 'cancelled' };
        }
        if (decision !== 'approve') return { status: 'cancelled' };
      }
      if (ctx.signal.aborted) return { status: 'cancelled' };

      try {
        if (!fs.statSync(ctx.cwd).isDirectory()) return { status: 'failed', error: `cwd ${ctx.cwd} is not a directory` };
      } catch (e) {
        return { status: 'failed', error: `cwd ${ctx.cwd} is not usable: ${(e as Error).message}` };
      }
      return runCommand(ctx, shell, command, killGraceMs, mode);
    },
  };
}

async function runCommand(ctx: EngineContext, shell: string, command: string, killGraceMs: number, mode: TerminalMode): Promise<EngineResult> {
  const size = ctx.terminalSize?.() ?? { cols: 80, rows: 24 };
  let cmd: PtyCommand;
  try {
    cmd = startPtyCommand({
      command,
      cwd: ctx.cwd,
      env: processEnv(),
      cols: size.cols,
      rows: size.rows,
      shell,
      killGraceMs,
      mode,
      onOutput: (data, stream) => ctx.emit('command.output', { turnId: ctx.turnId, stream, data }),
      drained: () => ctx.drained(),
    });
  } catch (e) {
    return { status: 'failed', error: `could not start ${shell}: ${(e as Error).message}` };
  }
  if (cmd.pid !== undefined) ctx.emit('command.started', { turnId: ctx.turnId, command, cwd: ctx.cwd, pid: cmd.pid, tty: cmd.tty });
  const detach = ctx.attachTerminal?.(cmd) ?? (() => {});
  const onAbort = () => cmd.cancel();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal.aborted) onAbort();
  const r = await cmd.done;
  detach();
  ctx.signal.removeEventListener('abort', onAbort);
  if (r.error !== undefined && cmd.pid === undefined) return { status: 'failed', error: r.error };
  ctx.emit('command.completed', { turnId: ctx.turnId, exitCode: r.exitCode, signal: r.signal });
  return r.cancelled ? { status: 'cancelled', exitCode: r.exitCode } : { status: 'completed', exitCode: r.exitCode };
}

function processEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}
