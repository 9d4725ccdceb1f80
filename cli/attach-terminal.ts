// The raw screen of `astra attach` while a command runs in a pseudo-terminal: the program's bytes go
// to the user's terminal as they come (partial lines and `\r` progress bars show right), through
// OutputFilter (no title, palette or clipboard changes) and StatusRowGuard, inside a scroll region
// that keeps Astra's status line on the last row (the program is told one row fewer). Leaving — the
// command ended, the user detached, a signal, a crash, the process exiting — writes restoreSequence()
// so no mode the program set (mouse tracking, alternate screen, bracketed paste, hidden cursor,
// keypad) outlives it. Pure: it returns the bytes to write; AttachView writes them.
import fs from 'node:fs';
import { OutputFilter, restoreSequence } from '../terminal/modes.js';
import { StatusRowGuard, drawStatusLine, enterStatusLayout, leaveStatusLayout, setRegion } from './terminal/scroll-region.js';
import { visible } from './terminal/width.js';

/** What RawScreen needs of a running command's screen (client/index.ts ScreenSnapshot has it). */
export interface ScreenImage {
  cols: number;
  rows: number;
  /** Draws the screen (and the modes the program set) on a cleared cols × rows terminal. */
  data: Uint8Array;
  /** Up to the last 1,000 lines that left the top, '\n'-separated. */
  scrollback: string;
  alternate: boolean;
}

const PRIVATE_MODE = Buffer.from('\x1b[?');

/** Status lines this short or terminals this low get no scroll region: the program has the screen. */
const MIN_ROWS = 3;

// Trailing escape sequences say nothing about where the cursor is in the line.
// eslint-disable-next-line no-control-regex
const TRAILING_CSI = /(?:\x1b\[[0-?]*[ -/]*[@-~]|\x1b[78=>])+$/;

export class RawScreen {
  private filter = new OutputFilter();
  private guard: StatusRowGuard | undefined;
  private cols = 80;
  private rows = 24;
  private status = '';
  private statusSgr = '7';
  /** The program's last visible byte ended a line (so leaving needs no newline of its own). */
  private atLineStart = true;
  private active = false;
  /** The program is on the alternate screen (the last switch it made). */
  private alternate = false;
  /** atLineStart of the normal screen while the program is on the alternate one. */
  private normalAtLineStart = true;

  /** `tty`: stdout is a terminal (without one there is no region, no status line and nothing to restore). */
  constructor(private readonly tty: boolean) {}

  get isActive(): boolean {
    return this.active;
  }

  /** The size the program should be given: one row fewer than the terminal, for the status line. */
  programSize(cols: number, rows: number): { cols: number; rows: number } {
    return { cols: Math.max(1, cols), rows: rows >= MIN_ROWS ? rows - 1 : Math.max(1, rows) };
  }

  /** Starts the raw screen on a terminal of cols × rows (the cursor at the start of a line). */
  enter(cols: number, rows: number): string {
    this.active = true;
    this.filter = new OutputFilter();
    this.atLineStart = true;
    this.alternate = false;
    this.cols = cols;
    this.rows = rows;
    if (!this.tty) return '';
    this.guard = rows >= MIN_ROWS ? new StatusRowGuard(rows) : undefined;
    // The input line's bracketed paste is Astra's; the program turns it on itself if it wants it.
    return `\x1b[?2004l${this.guard ? enterStatusLayout(rows) + this.statusBytes() : ''}`;
  }

  /** A chunk of the program's output, made safe for the user's terminal. */
  output(data: Uint8Array): Buffer {
    if (!this.active) return Buffer.alloc(0);
    const safe = this.filter.push(data);
    this.noteLineEnd(safe);
    if (!this.guard) return safe;
    const g = this.guard.push(safe);
    return g.redraw ? Buffer.concat([g.data, Buffer.from(setRegion(this.rows) + this.statusBytes())]) : g.data;
  }

  /**
   * The current screen of a command attached to mid-way: the lines that left its top (into the
   * terminal's own scrollback), the region emptied by scrolling what it showed away, then the screen.
   */
  snapshot(s: ScreenImage): Buffer {
    if (!this.active) return Buffer.alloc(0);
    const parts: Buffer[] = [];
    const lines = s.scrollback === '' ? [] : s.scrollback.split('\n');
    if (this.tty) {
      let head = lines.map((l) => `${visible(l)}\r\n`).join('');
      // Scroll what the region shows up and out (into the terminal's scrollback: the cursor is on an
      // empty row at the start of a line), then clear it, so the snapshot draws on an empty region.
      head += '\r\n'.repeat(Math.max(0, this.programSize(this.cols, this.rows).rows - 1)) + '\x1b[0m\x1b[H\x1b[J';
      parts.push(Buffer.from(head));
    } else if (lines.length) parts.push(Buffer.from(lines.join('\n') + '\n'));
    parts.push(this.output(s.data));
    if (this.guard) parts.push(Buffer.from(setRegion(this.rows) + this.statusBytes()));
    return Buffer.concat(parts);
  }

  /** New status text; the bytes that draw it (nothing when unchanged or not active). */
  setStatus(text: string, sgr = '7'): string {
    if (text === this.status && sgr === this.statusSgr) return '';
    this.status = text;
    this.statusSgr = sgr;
    return this.active && this.guard ? this.statusBytes() : '';
  }

  /** Draws the status line again (Ctrl-] l). */
  redraw(): string {
    return this.active && this.guard ? setRegion(this.rows) + this.statusBytes() : '';
  }

  /** The user's terminal changed size: the region and the status line move with it. */
  resize(cols: number, rows: number): string {
    if (!this.active || !this.tty) return '';
    const oldRows = this.rows;
    this.cols = cols;
    this.rows = rows;
    if (rows < MIN_ROWS) {
      const had = this.guard !== undefined;
      this.guard = undefined;
      return had ? '\x1b7\x1b[r\x1b8' : '';
    }
    // The terminal has resized its screen its own way before this runs: a shorter one (tmux, most
    // that reflow) pushes lines into its history and can leave the cursor on the new last row — the
    // status row, outside the region, where the program's next line would be written and wiped. With
    // the whole screen as the region, an index then a step up scrolls everything up one row when the
    // cursor is on the last row (and moves it nowhere otherwise), so the cursor's row is the program's.
    let out = '\x1b7\x1b[r\x1b8\x1bD\x1b[1A';
    if (!this.alternate) {
      // On the normal screen a narrower terminal may have rewrapped the old status line into rows
      // below the cursor, and a taller one left it there: what is below the cursor's row goes (a line
      // program has nothing there; a full-screen one redraws on the size change).
      out += '\x1b7\x1b[1B\r\x1b[J\x1b8';
    } else if (this.guard && oldRows < rows) {
      // The alternate screen is not rewrapped: a taller terminal leaves the old status row to the program; wipe it.
      out += `\x1b7\x1b[${oldRows};1H\x1b[2K\x1b8`;
    }
    if (this.guard) this.guard.resize(rows);
    else this.guard = new StatusRowGuard(rows);
    return out + setRegion(rows) + this.statusBytes();
  }

  /** Ends the raw screen: the terminal's modes reset, the status row cleared, the cursor on a fresh line. */
  leave(): string {
    if (!this.active) return '';
    this.active = false;
    if (!this.tty) return this.atLineStart ? '' : '\n';
    const atLineStart = this.alternate ? this.normalAtLineStart : this.atLineStart;
    const out = this.restoreBytes() + (atLineStart ? '' : '\r\n');
    this.guard = undefined;
    return out;
  }

  /** What a process leaving in a hurry (exit, crash) must still write: nothing unless a program had the screen. */
  emergencyBytes(): string {
    if (!this.active || !this.tty) return '';
    return this.restoreBytes() + '\r\n';
  }

  /**
   * The modes reset with the cursor left where the program put it: resetting the scroll region and
   * origin mode homes the cursor, so DECSC/DECRC go around them. Leaving the alternate screen is sent
   * only when the program is on it: it restores the cursor of the normal screen (tmux does that even
   * when not on the alternate screen, which would move the cursor to an old place).
   */
  private restoreBytes(): string {
    const alt = this.alternate ? '\x1b[?1049l\x1b[?1047l\x1b[?47l' : '';
    this.alternate = false;
    return `${alt}\x1b7${restoreSequence({ leaveAlternateScreen: false })}\x1b8\x1b[0m${this.guard ? leaveStatusLayout(this.rows) : ''}`;
  }

  private statusBytes(): string {
    return drawStatusLine(this.status, this.cols, this.rows, this.statusSgr);
  }

  private noteLineEnd(b: Buffer): void {
    if (b.length === 0) return;
    if (b.indexOf(PRIVATE_MODE) >= 0) {
      // eslint-disable-next-line no-control-regex
      for (const m of b.toString('latin1').matchAll(/\x1b\[\?([\d;]+)([hl])/g)) {
        if (!/(^|;)(1049|1047|47)(;|$)/.test(m[1]!)) continue;
        const on = m[2] === 'h';
        if (on && !this.alternate) this.normalAtLineStart = this.atLineStart;
        if (!on && this.alternate) this.atLineStart = this.normalAtLineStart;
        this.alternate = on;
      }
    }
    const tail = b.subarray(Math.max(0, b.length - 256)).toString('latin1');
    // Back from the alternate screen: where the normal screen's cursor was is known already.
    if (/\x1b\[\?(?:1049|1047|47)l$/.test(tail)) return;
    const text = tail.replace(TRAILING_CSI, '');
    if (text.length > 0) this.atLineStart = text.endsWith('\n');
  }
}

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
