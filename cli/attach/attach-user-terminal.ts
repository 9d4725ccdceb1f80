// The user's terminal as `astra attach` sees it (split from attach-terminal.ts, which re-exports it):
// raw mode, keys, signals, and the last-resort restore when the process exits or crashes while a
// program had the screen.
import fs from 'node:fs';

export interface UserTerminalHooks {
  data(d: Buffer): void;
  /** stdin ended. */
  end(): void;
  /** SIGTERM: leave as detaching does. */
  term(): void;
  /** SIGHUP: the window was closed; nothing more can be written. */
  hangup(): void;
  /** stdin or stdout failed as a vanished terminal does (EIO, EPIPE, ENXIO). */
  gone(code: string): void;
  /** What puts the terminal back, written synchronously if the process exits or crashes. */
  emergencyBytes(): string;
}

/**
 * The user's terminal as a process sees it: raw mode, keys, signals, and the last-resort restore
 * when the process exits or crashes while a program had the screen.
 */
export class UserTerminal {
  private readonly stops: (() => void)[] = [];

  constructor(
    private readonly io: { stdin: NodeJS.ReadStream; stdout: NodeJS.WriteStream },
    private readonly hooks: UserTerminalHooks,
  ) {}

  /**
   * Leaving by signal or a vanished terminal. SIGHUP (the window was closed) is a normal way to
   * leave, like Ctrl-D: control is released at once rather than held for the grace period.
   */
  watch(): void {
    const h = this.hooks;
    const onGone = (e: NodeJS.ErrnoException) => {
      if (e.code === 'EIO' || e.code === 'EPIPE' || e.code === 'ENXIO') h.gone(e.code);
    };
    process.on('SIGTERM', () => h.term());
    process.on('SIGHUP', () => h.hangup());
    this.io.stdout.on('error', onGone);
    this.io.stdin.on('error', onGone);
    // These handlers stay until the process exits (leaving runs once: later calls do nothing). The
    // error handlers: late errors of a closed terminal must not crash a process on its way out. The
    // signal handlers: proper-lockfile (loaded when this process started the daemon) brings
    // signal-exit, which re-raises a signal that no other listener takes — removing ours at the start
    // of leaving would let a SIGHUP kill the process before it released control.
    this.stops.push(installRestoreHooks(() => h.emergencyBytes(), () => this.rawMode(false)));
  }

  startInput(): void {
    const stdin = this.io.stdin;
    if (stdin.isTTY) {
      this.rawMode(true);
      this.stops.push(() => this.rawMode(false));
    } else {
      // Without raw mode the terminal (or the parent) turns Ctrl-C into SIGINT. Kept until exit,
      // for the reason watch() gives; after leaving, keys do nothing.
      process.on('SIGINT', () => this.hooks.data(Buffer.from([3])));
    }
    const onData = (d: Buffer | string) => this.hooks.data(typeof d === 'string' ? Buffer.from(d) : d);
    const onEnd = () => this.hooks.end();
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
    this.stops.push(() => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    });
  }

  /** Input off, raw mode off, the exit hooks removed (the view has put the terminal back itself). */
  stop(): void {
    for (const s of this.stops.splice(0).reverse()) s();
  }

  private rawMode(on: boolean): void {
    const stdin = this.io.stdin;
    if (!stdin.isTTY) return;
    try {
      stdin.setRawMode(on);
    } catch {
      // the terminal is gone
    }
  }
}

/**
 * Puts the user's terminal back if the process exits or crashes while a program had the screen:
 * `bytes()` says what to write (synchronously — nothing async runs at exit). Returns the remover.
 */
function installRestoreHooks(bytes: () => string, restoreInput: () => void): () => void {
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    const b = bytes();
    restoreInput();
    if (b === '') return;
    try {
      fs.writeSync(1, b);
    } catch {
      // the terminal is gone
    }
  };
  const onExit = () => write();
  const onCrash = (e: unknown) => {
    write();
    process.stderr.write(`astra: attach failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  };
  process.on('exit', onExit);
  process.on('uncaughtException', onCrash);
  return () => {
    process.off('exit', onExit);
    process.off('uncaughtException', onCrash);
  };
}
