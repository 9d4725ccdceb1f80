// The raw screen of `astra attach` while a command runs in a pseudo-terminal: the program's bytes go
// to the user's terminal as they come (partial lines and `\r` progress bars show right), through
// OutputFilter (no title, palette or clipboard changes) and StatusRowGuard, inside a scroll region
// that keeps Astra's status line on the last row (the program is told one row fewer). Leaving — the
// command ended, the user detached, a signal, a crash, the process exiting — writes restoreSequence()
// so no mode the program set (mouse tracking, alternate screen, bracketed paste, hidden cursor,
// keypad) outlives it. A full-screen program larger than this terminal (an observer's smaller
// window) is drawn from a copy of its screen instead, clipped (see checkClip). Pure: it returns the
// bytes to write; AttachView writes them.
import { OutputFilter, restoreSequence } from '../../tty/modes.js';
import { ProgramMirror } from '../view/program-mirror.js';
import { StatusRowGuard, drawStatusLine, enterStatusLayout, leaveStatusLayout, setRegion } from '../view/scroll-region.js';
import { visible } from '../view/width.js';

export { UserTerminal, type UserTerminalHooks } from './attach-user-terminal.js';

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
  /**
   * A copy of the program's screen at the program's size (cli/view/program-mirror.ts), when that
   * size is known (command.started, a screen snapshot). While the program is larger than the rows and
   * columns it has here (an observer's smaller window) the view draws from it, clipped, instead of
   * passing the program's bytes through (they would be wrapped and clamped over each other and the
   * status row); a redraw draws from it too.
   */
  private mirror: ProgramMirror | undefined;
  private clipped = false;
  /** The program placed its cursor itself on the normal screen (top does; see checkClip). */
  private addressed = false;
  /** Clipped: bytes were fed to the mirror since the last render. */
  private dirty = false;

  /** `tty`: stdout is a terminal (without one there is no region, no status line and nothing to restore). */
  constructor(private readonly tty: boolean) {}

  get isActive(): boolean {
    return this.active;
  }

  /** Starts the raw screen on a terminal of cols × rows (the cursor at the start of a line). */
  enter(cols: number, rows: number): string {
    this.active = true;
    this.filter = new OutputFilter();
    this.atLineStart = true;
    this.alternate = false;
    this.cols = cols;
    this.rows = rows;
    this.dropMirror();
    if (!this.tty) return '';
    this.guard = rows >= MIN_ROWS ? new StatusRowGuard(rows) : undefined;
    // The input line's bracketed paste is Astra's; the program turns it on itself if it wants it.
    return `\x1b[?2004l${this.guard ? enterStatusLayout(rows) + this.statusBytes() : ''}`;
  }

  /**
   * The program's size is known (command.started): the view keeps a copy of its screen, and draws
   * from it, clipped, while this terminal is too small for it. The bytes to write (a clipped screen).
   */
  programSize(size: { cols: number; rows: number }): string;
  /** The size the program should be given: one row fewer than the terminal, for the status line. */
  programSize(cols: number, rows: number): { cols: number; rows: number };
  programSize(a: number | { cols: number; rows: number }, b?: number): string | { cols: number; rows: number } {
    if (typeof a === 'number') return { cols: Math.max(1, a), rows: b! >= MIN_ROWS ? b! - 1 : Math.max(1, b!) };
    if (!this.active || !this.tty) return '';
    if (this.mirror) this.mirror.resize(a.cols, a.rows);
    else this.mirror = ProgramMirror.create(a.cols, a.rows);
    return this.checkClip(true);
  }

  /** A chunk of the program's output, made safe for the user's terminal. */
  output(data: Uint8Array): Buffer {
    if (!this.active) return Buffer.alloc(0);
    const safe = this.filter.push(data);
    if (!this.mirror) return this.pass(safe);
    this.mirror.write(safe);
    if (!this.addressed && !this.mirror.alternate) this.addressed = placesCursor(safe);
    const passed = this.pass(safe);
    const clip = this.checkClip(false);
    return clip ? Buffer.concat([passed, Buffer.from(clip)]) : passed;
  }

  /** Clipped: the rows of the program's screen that changed since the last render (the view asks once a tick). */
  render(): string {
    if (!this.active || !this.clipped || !this.dirty) return '';
    this.dirty = false;
    return this.mirror!.render(this.programSize(this.cols, this.rows), false);
  }

  /** The program's filtered bytes to the user's terminal (nothing while clipped: render() draws them). */
  private pass(safe: Buffer): Buffer {
    if (this.clipped) {
      this.dirty = true;
      return Buffer.alloc(0);
    }
    this.noteLineEnd(safe);
    if (!this.guard) return safe;
    const g = this.guard.push(safe);
    return g.redraw ? Buffer.concat([g.data, Buffer.from(setRegion(this.rows) + this.statusBytes())]) : g.data;
  }

  /**
   * Clipping is on while a full-screen program (on its alternate screen, or one that placed its
   * cursor on the normal screen: top) is larger than the rows and columns it has here; a line program's bytes go through (its
   * lines wrap, as they would in any narrower terminal). Clipped, the program's screen is drawn on
   * this terminal's alternate screen, so leaving it gives back what was there before. Into clipping,
   * out of it while the program stays on its alternate screen (the window grew), or `force` (a new
   * size) while clipped: the whole program screen is drawn from the copy. The bytes to write.
   */
  private checkClip(force: boolean): string {
    const m = this.mirror;
    const view = this.programSize(this.cols, this.rows);
    const clip = m !== undefined && this.guard !== undefined && (m.alternate || this.addressed) && m.clips(view);
    if (clip === this.clipped && !(force && clip)) return '';
    let out = '';
    if (clip && !this.alternate) {
      out += '\x1b[?1049h';
      this.normalAtLineStart = this.atLineStart;
      this.alternate = true;
    }
    const programLeftAlternate = this.clipped && !clip && m !== undefined && m.clips(view);
    this.clipped = clip;
    this.dirty = false;
    if (programLeftAlternate && this.alternate) {
      out += '\x1b[?1049l';
      this.alternate = false;
      this.atLineStart = this.normalAtLineStart;
    } else if (m) out += m.render(view, true);
    return out + setRegion(this.rows) + this.statusBytes();
  }

  private dropMirror(): void {
    this.mirror?.dispose();
    this.mirror = undefined;
    this.clipped = this.dirty = this.addressed = false;
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
    const safe = this.filter.push(s.data);
    if (this.tty) {
      if (this.mirror) this.mirror.reset(s.cols, s.rows, safe);
      else {
        this.mirror = ProgramMirror.create(s.cols, s.rows);
        this.mirror?.write(safe);
      }
      // Too small for it: checkClip draws the screen from the copy (else the snapshot goes as it is).
      this.clipped = false;
      const m = this.mirror;
      if (m && this.guard && (m.alternate || this.addressed) && m.clips(this.programSize(this.cols, this.rows))) {
        parts.push(Buffer.from(this.checkClip(true)));
        return Buffer.concat(parts);
      }
    }
    parts.push(this.pass(safe));
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

  /** Draws the program's screen (from the copy, when there is one) and the status line again (Ctrl-] l). */
  redraw(): string {
    if (!this.active || !this.guard) return '';
    this.dirty = false;
    const screen = this.mirror ? this.mirror.render(this.programSize(this.cols, this.rows), true) : '';
    return screen + setRegion(this.rows) + this.statusBytes();
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
    return out + setRegion(rows) + this.statusBytes() + this.checkClip(true);
  }

  /** Ends the raw screen: the terminal's modes reset, the status row cleared, the cursor on a fresh line. */
  leave(): string {
    if (!this.active) return '';
    this.active = false;
    if (!this.tty) return this.atLineStart ? '' : '\n';
    // Clipped, the program was drawn on the alternate screen, which restoreBytes leaves.
    const atLineStart = this.alternate ? this.normalAtLineStart : this.atLineStart;
    const out = this.restoreBytes() + (atLineStart ? '' : '\r\n');
    this.guard = undefined;
    this.dropMirror();
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
    const m = this.mirror;
    if (!this.clipped || !m) return drawStatusLine(this.status, this.cols, this.rows, this.statusSgr);
    // The marker: this window shows part of the program's screen.
    const v = this.programSize(this.cols, this.rows);
    return drawStatusLine(` clipped ${Math.min(v.cols, m.cols)}×${Math.min(v.rows, m.rows)} of ${m.cols}×${m.rows} │ ${this.status.trimStart()}`, this.cols, this.rows, this.statusSgr);
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

// eslint-disable-next-line no-control-regex
const SCREEN_SWITCH = /\x1b\[\?(?:1049|1047|47)[hl]/g;
// eslint-disable-next-line no-control-regex
const PLACES_CURSOR = /\x1b\[\d*(?:;\d*)?[Hfd]|\x1b\[2J/;

/** The bytes (after their last switch of screens) place the cursor or clear the screen: a full-screen program's. */
function placesCursor(b: Buffer): boolean {
  if (b.indexOf(0x1b) === -1) return false;
  const s = b.toString('latin1');
  let from = 0;
  for (const m of s.matchAll(SCREEN_SWITCH)) from = m.index! + m[0].length;
  return PLACES_CURSOR.test(s.slice(from));
}
