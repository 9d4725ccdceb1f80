// One command line (`/bin/sh -c`) run in a pseudo-terminal of a given size, in its own session and
// process group, with output streamed through one callback under the shell engine's contract
// (output-coalescer.ts: one chunk per turn of the event loop; a callback answering false holds output
// until drained(), pausing the terminal past a read-ahead bound so the program blocks). Where no pseudo-terminal can be had (the native module does not load, or spawning
// through it fails), the command runs on pipes instead and the handle says so (`tty: false`, with the
// reason): stdout and stderr stay apart there, input goes to a stdin pipe and resize does nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import { OutputCoalescer, type OutputStream } from './output-coalescer.js';
import { guardTerminalDrain } from './pty-drain.js';
import { checkTerminalSize } from './size.js';
import type { PtyModule, PtyProcess } from './pty-process.js';

export type { OutputStream };
export type { PtyModule, PtyProcess };

export type PtyLoader = () => PtyModule;

let cachedPty: { module?: PtyModule; error?: string } | undefined;

/** Loads @lydell/node-pty once; a failure is remembered (and reported as the fallback reason). */
export const loadNodePty: PtyLoader = () => {
  if (!cachedPty) {
    try {
      // createRequire rather than import: a missing or broken native module must not stop the daemon,
      // and bundlers leave this call alone so the prebuilt binary is found beside the package.
      cachedPty = { module: createRequire(import.meta.url)('@lydell/node-pty') as PtyModule };
    } catch (e) {
      cachedPty = { error: (e as Error).message };
    }
  }
  if (cachedPty.module) return cachedPty.module;
  throw new Error(cachedPty.error);
};


export interface PtyCommandOptions {
  command: string;
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** Output bytes; answering false pauses reading until drained() resolves. */
  onOutput(data: Buffer, stream: OutputStream): boolean;
  drained(): Promise<void>;
  shell?: string;
  /** Time between SIGTERM and SIGKILL to the process group on cancel. */
  killGraceMs?: number;
  /** 'pipes' skips the pseudo-terminal (configuration, tests); 'auto' (default) tries it first. */
  mode?: 'auto' | 'pipes';
  /** No input will come (a model's tool command): on pipes, stdin is /dev/null, so a command that reads it gets end-of-input at once instead of waiting. */
  noInput?: boolean;
  /** Bytes read ahead while the consumer is behind before reading stops (HELD_READ_AHEAD_BYTES). */
  readAheadBytes?: number;
  loadPty?: PtyLoader;
}

export interface PtyCommandResult {
  /** Null when a signal ended it, or when it never started (then `error` says why). */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  cancelled: boolean;
  tty: boolean;
  error?: string;
}

export interface PtyCommand {
  readonly pid: number | undefined;
  /** True when the command has a pseudo-terminal; false on the pipe fallback. */
  readonly tty: boolean;
  /** Why there is no pseudo-terminal (only when tty is false). */
  readonly fallbackReason: string | undefined;
  readonly cols: number;
  readonly rows: number;
  /** Writes input bytes; false when the command has ended (nothing was written). */
  write(data: Uint8Array): boolean;
  /** Resizes the terminal (the program gets SIGWINCH); false on pipes or after the end. */
  resize(cols: number, rows: number): boolean;
  /** SIGTERM to the process group, SIGKILL after the grace; idempotent. */
  cancel(): void;
  readonly done: Promise<PtyCommandResult>;
}

const DEFAULT_TERM = 'xterm-256color';

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the whole group is already gone.
  }
}

function signalName(n: number | undefined): NodeJS.Signals | null {
  if (!n) return null;
  for (const [name, num] of Object.entries(os.constants.signals)) if (num === n) return name as NodeJS.Signals;
  return null;
}

export function startPtyCommand(opts: PtyCommandOptions): PtyCommand {
  checkTerminalSize(opts.cols, opts.rows);
  const shell = opts.shell ?? '/bin/sh';
  let fallbackReason: string | undefined;
  if (opts.mode === 'pipes') {
    fallbackReason = 'pseudo-terminals are turned off';
  } else {
    let pty: PtyModule | undefined;
    try {
      pty = (opts.loadPty ?? loadNodePty)();
    } catch (e) {
      fallbackReason = `the pseudo-terminal module did not load: ${(e as Error).message}`;
    }
    if (pty) {
      try {
        const env = { ...opts.env, TERM: opts.env.TERM ?? DEFAULT_TERM };
        const proc = pty.spawn(shell, ['-c', opts.command], {
          name: env.TERM,
          cols: opts.cols,
          rows: opts.rows,
          cwd: opts.cwd,
          env,
          encoding: null,
        });
        return runOnPty(proc, opts);
      } catch (e) {
        fallbackReason = `no pseudo-terminal could be opened: ${(e as Error).message}`;
      }
    }
  }
  return runOnPipes(shell, opts, fallbackReason);
}

/** Cancel and finish bookkeeping common to both transports. */
function lifecycle(pid: number | undefined, killGraceMs: number, onForce: () => void) {
  let cancelled = false;
  let killTimer: NodeJS.Timeout | undefined;
  let forceTimer: NodeJS.Timeout | undefined;
  return {
    get cancelled() {
      return cancelled;
    },
    cancel(ended: boolean) {
      if (pid === undefined || ended || cancelled) return;
      cancelled = true;
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => {
        killGroup(pid, 'SIGKILL');
        // A process that left the group (setsid) may still hold the terminal or pipes open.
        forceTimer = setTimeout(onForce, 1000);
      }, killGraceMs);
    },
    end() {
      if (killTimer) clearTimeout(killTimer);
      if (forceTimer) clearTimeout(forceTimer);
      // Grandchildren that outlived the shell stay in its group; a cancel must not leave them behind.
      if (cancelled && pid !== undefined) killGroup(pid, 'SIGKILL');
    },
  };
}

function runOnPty(proc: PtyProcess, opts: PtyCommandOptions): PtyCommand {
  let ended = false;
  let cols = opts.cols;
  let rows = opts.rows;
  let resolveDone!: (r: PtyCommandResult) => void;
  const done = new Promise<PtyCommandResult>((r) => (resolveDone = r));
  const out = new OutputCoalescer(opts, () => proc.pause(), () => proc.resume());
  const drain = guardTerminalDrain(proc);
  const dataSub = proc.onData((d) => {
    const data = drain.filter(typeof d === 'string' ? Buffer.from(d) : d);
    if (data.length > 0) out.push(data, 'stdout');
  });
  const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
    if (ended) return;
    ended = true;
    life.end();
    drain.close();
    out.flushAll();
    dataSub.dispose();
    resolveDone({ exitCode, signal, cancelled: life.cancelled, tty: true });
  };
  // node-pty reports the exit once the terminal is closed, which pty-drain holds off until the last byte is read.
  const life = lifecycle(proc.pid, opts.killGraceMs ?? 2000, () => finish(null, 'SIGKILL'));
  proc.onExit(({ exitCode, signal }) => {
    const sig = signalName(signal);
    finish(sig ? null : exitCode, sig);
  });
  return {
    pid: proc.pid,
    tty: true,
    fallbackReason: undefined,
    get cols() {
      return cols;
    },
    get rows() {
      return rows;
    },
    write(data) {
      if (ended) return false;
      proc.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      return true;
    },
    resize(c, r) {
      checkTerminalSize(c, r);
      if (ended) return false;
      proc.resize(c, r);
      cols = c;
      rows = r;
      return true;
    },
    cancel: () => life.cancel(ended),
    done,
  };
}

function runOnPipes(shell: string, opts: PtyCommandOptions, fallbackReason: string | undefined): PtyCommand {
  let ended = false;
  let resolveDone!: (r: PtyCommandResult) => void;
  const done = new Promise<PtyCommandResult>((r) => (resolveDone = r));
  let child: ChildProcess;
  try {
    child = spawn(shell, ['-c', opts.command], { cwd: opts.cwd, env: opts.env, detached: true, stdio: [opts.noInput ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  } catch (e) {
    resolveDone({ exitCode: null, signal: null, cancelled: false, tty: false, error: `could not start ${shell}: ${(e as Error).message}` });
    return deadHandle(done, fallbackReason, opts);
  }
  const pid = child.pid;
  let spawnError: Error | undefined;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const out = new OutputCoalescer(
    opts,
    () => {
      child.stdout!.pause();
      child.stderr!.pause();
    },
    () => {
      child.stdout!.resume();
      child.stderr!.resume();
    },
  );
  child.stdout!.on('data', (c: Buffer) => out.push(c, 'stdout'));
  child.stderr!.on('data', (c: Buffer) => out.push(c, 'stderr'));
  // A program that exits without reading its input closes the pipe: that is not an error.
  child.stdin?.on('error', () => {});
  const finish = () => {
    if (ended) return;
    ended = true;
    life.end();
    if (spawnError && pid === undefined) {
      resolveDone({ exitCode: null, signal: null, cancelled: false, tty: false, error: `could not start ${shell}: ${spawnError.message}` });
      return;
    }
    out.flushAll();
    resolveDone({ exitCode: exit?.code ?? null, signal: exit?.signal ?? null, cancelled: life.cancelled, tty: false });
  };
  const life = lifecycle(pid, opts.killGraceMs ?? 2000, () => {
    child.stdout?.destroy();
    child.stderr?.destroy();
    if (exit) finish();
  });
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
  return {
    pid,
    tty: false,
    fallbackReason,
    cols: opts.cols,
    rows: opts.rows,
    write(data) {
      if (ended || !child.stdin || !child.stdin.writable) return false;
      child.stdin.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      return true;
    },
    resize(c, r) {
      checkTerminalSize(c, r);
      return false;
    },
    cancel: () => life.cancel(ended),
    done,
  };
}

function deadHandle(done: Promise<PtyCommandResult>, fallbackReason: string | undefined, opts: PtyCommandOptions): PtyCommand {
  return {
    pid: undefined,
    tty: false,
    fallbackReason,
    cols: opts.cols,
    rows: opts.rows,
    write: () => false,
    resize: () => false,
    cancel: () => {},
    done,
  };
}
