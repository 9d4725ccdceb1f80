// The built-in `shell` engine: the turn input is a command line run by /bin/sh -c in the session's
// cwd, in its own process group, after approval (policy 'ask') or at once ('auto').
//
// Status policy: a command that runs and exits non-zero still ends the turn 'completed' with its
// exitCode (a failing command is a result, not a turn failure). 'failed' means the command could not
// be run at all (cwd missing, spawn error). 'cancelled' means the turn was cancelled or the approval
// was denied (in which case nothing ran).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { LIMITS } from '../protocol/index.js';
import type { Engine, EngineContext, EngineResult } from './engine.js';

export interface ShellEngineOptions {
  /** Time between SIGTERM and SIGKILL to the process group on cancel. */
  killGraceMs?: number;
  shell?: string;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the whole group is already gone.
  }
}

export function createShellEngine(opts: ShellEngineOptions = {}): Engine {
  const killGraceMs = opts.killGraceMs ?? 2000;
  const shell = opts.shell ?? '/bin/sh';
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
      const r = await runShellCommand(ctx, { shell, command, cwd: ctx.cwd, killGraceMs });
      if (r.outcome === 'not_started') return { status: 'failed', error: r.error ?? 'the command could not be started' };
      return { status: r.outcome === 'cancelled' ? 'cancelled' : 'completed', exitCode: r.exitCode };
    },
  };
}

export interface ShellCommand {
  command: string;
  cwd: string;
  shell?: string;
  /** Time between SIGTERM and SIGKILL to the process group on cancel (default 2 s). */
  killGraceMs?: number;
  /** Default: the daemon's. */
  env?: NodeJS.ProcessEnv;
  /** Sees every chunk of stdout and stderr as it is read (before it is emitted). */
  onOutput?: (chunk: Buffer) => void;
}

export interface ShellCommandOutcome {
  /** 'exited': it ran to its end (any exit code or signal); 'cancelled': killed because ctx.signal fired; 'not_started': spawn failed. */
  outcome: 'exited' | 'cancelled' | 'not_started';
  exitCode: number | null;
  signal: string | null;
  /** Why it could not be started (not_started only). */
  error?: string;
}

/**
 * Runs a command line as a shell turn runs it — /bin/sh -c in its own process group, its
 * command.started / command.output / command.completed events in the turn's stream, killed (TERM,
 * then KILL after the grace) when ctx.signal fires. The chat engine's tool calls run through this.
 */
export function runShellCommand(ctx: EngineContext, cmd: ShellCommand): Promise<ShellCommandOutcome> {
  const shell = cmd.shell ?? '/bin/sh';
  const killGraceMs = cmd.killGraceMs ?? 2000;
  const { command, cwd } = cmd;
  return new Promise<ShellCommandOutcome>((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(shell, ['-c', command], { cwd, env: cmd.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ outcome: 'not_started', exitCode: null, signal: null, error: `could not start ${shell}: ${(e as Error).message}` });
      return;
    }
    const pid = child.pid;
    let spawnError: Error | undefined;
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let forceTimer: NodeJS.Timeout | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let done = false;

    if (pid !== undefined) ctx.emit('command.started', { turnId: ctx.turnId, command, cwd, pid });

    // Output read in one turn of the event loop goes out as one event (up to the chunk limit): a
    // command writing fast gets few large events, a lone line still goes out at once (setImmediate
    // runs right after the poll phase that read it: no timer, no added latency).
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let pendingStream: 'stdout' | 'stderr' = 'stdout';
    let flushScheduled = false;
    let held = false;
    const flush = () => {
      flushScheduled = false;
      if (pendingBytes === 0) return;
      const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      if (ctx.emit('command.output', { turnId: ctx.turnId, stream: pendingStream, data }) || held) return;
      // The journal is behind (large output on a slow disk): stop reading until it has caught up;
      // the command blocks on its full pipe meanwhile.
      held = true;
      child.stdout!.pause();
      child.stderr!.pause();
      void ctx.drained().then(() => {
        held = false;
        child.stdout!.resume();
        child.stderr!.resume();
      });
    };
    const forward = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      cmd.onOutput?.(chunk);
      if (stream !== pendingStream || pendingBytes + chunk.length > LIMITS.maxOutputChunkBytes) flush();
      pendingStream = stream;
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    };
    child.stdout!.on('data', forward('stdout'));
    child.stderr!.on('data', forward('stderr'));

    const onAbort = () => {
      if (pid === undefined || done) return;
      cancelled = true;
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => {
        killGroup(pid, 'SIGKILL');
        // A process that left the group (setsid) may still hold our pipes open: stop waiting.
        forceTimer = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          if (exit) finish();
        }, 1000);
      }, killGraceMs);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();

    const finish = () => {
      if (done) return;
      done = true;
      ctx.signal.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      if (forceTimer) clearTimeout(forceTimer);
      if (spawnError && pid === undefined) {
        resolve({ outcome: 'not_started', exitCode: null, signal: null, error: `could not start ${shell}: ${spawnError.message}` });
        return;
      }
      flush();
      const exitCode = exit?.code ?? null;
      const signal = exit?.signal ?? null;
      ctx.emit('command.completed', { turnId: ctx.turnId, exitCode, signal });
      // Grandchildren that outlived the shell stay in its group; a cancel must not leave them behind.
      if (cancelled && pid !== undefined) killGroup(pid, 'SIGKILL');
      resolve({ outcome: cancelled ? 'cancelled' : 'exited', exitCode, signal });
    };
    child.on('error', (e) => {
      spawnError = e;
      if (pid === undefined) finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
    });
    child.on('close', (code, signal) => {
      exit ??= { code, signal };
      finish();
    });
  });
}
