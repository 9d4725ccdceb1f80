// The terminal side of `astra attach`, the one writer to stdout. Two modes:
// - lines (no command owns the screen): output scrolls normally (so the terminal's own scrollback,
//   resizing and copying work), and only a two-line footer — status and the input line — is
//   redrawn at the bottom;
// - screen (a command runs in a pseudo-terminal): its bytes go raw through RawScreen
//   (attach-terminal.ts), the status line sits on the last row, and lines of information wait until
//   the command gives the screen back.
// Writes made in one tick go out as one write, so a flood of output stays cheap. Widths are display
// columns (CJK and emoji take two), never UTF-16 units.
import { OutputFilter, restoreSequence } from '../../tty/modes.js';
import { RawScreen, type ScreenImage } from './attach-terminal.js';
import type { RenderedLine } from '../view/line-editor.js';
import { displayWidth, fitWidth } from '../view/width.js';

export interface Footer {
  /** Plain text; coloured by the view after fitting it to the width. */
  status: string;
  statusColour: 'green' | 'yellow' | 'red' | 'cyan' | 'gray';
  /** The prompt's fixed part, e.g. "❯ " or "approve? [y/n] " (may be coloured). */
  promptPrefix: string;
  /** What is shown after the prompt when nobody edits (observers, approvals). */
  input: string;
  /** The input line being edited: laid out for the columns left after the prompt. */
  editor?: { render(cols: number): RenderedLine; readonly value: string; readonly cursorIndex: number } | undefined;
}

/** The cursor's column after `text` is written from column `from` (0-based), or undefined when unsure (tabs, escapes). */
function columnAfter(from: number, text: string): number | undefined {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0a-\x0c\x0e-\x1f\x7f\t]/.test(text)) return undefined;
  const cr = text.lastIndexOf('\r');
  return cr >= 0 ? displayWidth(text.slice(cr + 1)) : from + displayWidth(text);
}

const SGR: Record<Footer['statusColour'], string> = { green: '42;30', yellow: '43;30', red: '41;97', cyan: '46;30', gray: '100;97' };

/** Partial output lines are shown after this long without their newline (a prompt, a progress dot). */
const PARTIAL_FLUSH_MS = 250;

export class AttachView {
  private pending: (string | Buffer)[] = [];
  private partial = '';
  private partialTimer: NodeJS.Timeout | undefined;
  private footer: Footer = { status: '', statusColour: 'gray', promptPrefix: '', input: '' };
  private footerKey = '';
  /** Visible widths of the footer lines (and the live lines above it) on screen, to erase them even after a resize rewrapped them. */
  private drawn: { status: number; prompt: number; live?: number[] } | undefined;
  /** Lines drawn again at each flush between the output and the footer (a chat answer's unfinished block: attach-chat.ts). */
  private liveLines: ((cols: number) => string[]) | undefined;
  private scheduled = false;
  private closed = false;
  private readonly raw: RawScreen;
  /** Lines of information that came while a command had the screen: printed when it gives it back. */
  private deferred: string[] = [];
  /** Output on the line view (pipes, chat) passes the same filter: no title or clipboard changes. */
  private lineFilter = new OutputFilter();
  /** Escape sequences went through on the line view since the last command ended. */
  private lineEscapes = false;
  /**
   * A partial output line is on screen, shown after PARTIAL_FLUSH_MS: the column where it stopped.
   * On a TTY it was ended by a line end of our own (the footer goes below it), so the rest of the line
   * goes back up to this column; without a TTY nothing ended it. Cleared by anything else printed.
   */
  private openLine: number | undefined;
  private readonly onResize = (): void => {
    // The terminal may have rewrapped the open line: its rest starts a new one.
    this.openLine = undefined;
    if (this.raw.isActive) this.push(this.raw.resize(this.cols, this.rows));
    this.schedule();
    this.resized?.();
  };

  /**
   * `tty`: draw the footer (stdout is a terminal). `color`: colours allowed (a TTY without NO_COLOR).
   * `resized`: told after the terminal changed size.
   */
  constructor(
    private readonly stdout: NodeJS.WriteStream,
    readonly tty: boolean,
    readonly color: boolean,
    private readonly resized?: () => void,
  ) {
    this.raw = new RawScreen(tty);
    if (tty) stdout.on('resize', this.onResize);
  }

  get cols(): number {
    return Math.max(1, this.stdout.columns || 80);
  }

  get rows(): number {
    return Math.max(1, this.stdout.rows || 24);
  }

  /** A command owns the screen (its bytes go raw). */
  get screenMode(): boolean {
    return this.raw.isActive;
  }

  /** The size the running program gets: the terminal less the status row. */
  programSize(): { cols: number; rows: number } {
    return this.raw.programSize(this.cols, this.rows);
  }

  /** This controller gave the program a new size (see RawScreen.programSize). */
  programResized(size: { cols: number; rows: number }): void {
    if (this.closed || !this.raw.isActive) return;
    this.push(this.raw.programSize(size));
    this.schedule();
  }

  /** Command output, verbatim; whole lines are printed at once, a partial line after a short wait. */
  output(text: string): void {
    if (this.closed || text.length === 0) return;
    if (this.raw.isActive) {
      this.push(this.raw.output(Buffer.from(text)));
      return;
    }
    if (text.includes('\x1b')) {
      text = this.lineFilter.push(Buffer.from(text)).toString('utf8');
      this.lineEscapes = true;
    }
    const all = this.partial + text;
    const nl = all.lastIndexOf('\n');
    if (nl >= 0) {
      this.pushOutput(all.slice(0, nl + 1), false);
      this.partial = all.slice(nl + 1);
    } else {
      this.partial = all;
    }
    if (this.partial && !this.partialTimer) {
      this.partialTimer = setTimeout(() => {
        this.partialTimer = undefined;
        this.showPartial();
        this.schedule();
      }, PARTIAL_FLUSH_MS);
      this.partialTimer.unref();
    }
    this.schedule();
  }

  /** A whole line of information (a notice, an event). Ends any partial output line first. */
  line(text: string): void {
    if (this.closed) return;
    if (this.raw.isActive) {
      this.deferred.push(text);
      return;
    }
    this.takePartial();
    this.push(`${text}\n`);
    this.schedule();
  }

  /**
   * A command on the line view ended: if its output carried escape sequences, the modes it may have
   * set (mouse, keypad, cursor) are reset, with the cursor kept where it is.
   */
  commandEnded(): void {
    if (this.closed || this.raw.isActive || !this.lineEscapes) return;
    this.lineEscapes = false;
    this.lineFilter = new OutputFilter();
    if (!this.tty) return;
    this.takePartial();
    this.push(`\x1b7${restoreSequence({ leaveAlternateScreen: false })}\x1b8\x1b[0m\x1b[?2004h`);
    this.schedule();
  }

  // ---- the screen of a command in a pseudo-terminal ----

  /**
   * A command in a pseudo-terminal takes the screen: its bytes go raw from now on. `size`: the
   * program's terminal size, when known (the view then keeps a copy of its screen: see RawScreen).
   */
  enterScreen(size?: { cols: number; rows: number }): void {
    if (this.closed || this.raw.isActive) return;
    this.takePartial();
    // The footer goes and the lines before the command are printed, then the region is set up.
    this.flush(false);
    this.push(this.raw.enter(this.cols, this.rows));
    if (size) this.push(this.raw.programSize(size));
    this.schedule();
  }

  /** Bytes of the command that has the screen. */
  screenOutput(data: Uint8Array): void {
    if (this.closed || data.length === 0) return;
    if (!this.raw.isActive) this.enterScreen();
    this.push(this.raw.output(data));
    this.schedule();
  }

  /** The current screen of a command attached to mid-way (then its live bytes follow). */
  screenSnapshot(image: ScreenImage): void {
    if (this.closed) return;
    if (!this.raw.isActive) this.enterScreen();
    this.push(this.raw.snapshot(image));
    this.schedule();
  }

  /** The status line while a command has the screen. */
  setScreenStatus(text: string, colour: Footer['statusColour']): void {
    if (this.closed) return;
    this.push(this.raw.setStatus(text, this.color ? SGR[colour] : '7'));
    this.schedule();
  }

  /** The command ended: its modes are reset, and the lines that waited are printed. */
  leaveScreen(): void {
    if (this.closed || !this.raw.isActive) return;
    this.push(this.raw.leave());
    if (this.tty) this.push('\x1b[?2004h');
    for (const l of this.deferred.splice(0)) this.push(`${l}\n`);
    this.drawn = undefined;
    this.schedule();
  }

  /**
   * Lines that are not final yet, laid out for the width at each draw: shown below the output and
   * erased and drawn again like the footer (only on a TTY; without one the caller prints lines).
   */
  setLive(render: ((cols: number) => string[]) | undefined): void {
    if (this.closed || (!render && !this.liveLines)) return;
    this.liveLines = render;
    if (this.tty && !this.raw.isActive) this.schedule();
  }

  // ---- the footer ----

  setFooter(footer: Footer): void {
    if (this.closed) return;
    const key = `${footer.status}\0${footer.statusColour}\0${footer.promptPrefix}\0${footer.input}\0${footer.editor ? `${footer.editor.value}\0${footer.editor.cursorIndex}` : ''}`;
    this.footer = { ...footer };
    if (key === this.footerKey) return;
    this.footerKey = key;
    // Without a footer on screen (no TTY) a status change is not news by itself: attach prints notices.
    if (this.tty && !this.raw.isActive) this.schedule();
  }

  /** Draws everything again (Ctrl-L). */
  redraw(): void {
    if (this.closed) return;
    if (this.raw.isActive) this.push(this.raw.redraw());
    else if (this.tty) {
      this.push('\x1b[2J\x1b[H');
      this.drawn = undefined;
    }
    this.schedule();
  }

  /** Starts the input line's bracketed paste (a multi-line paste is then one input). */
  startInput(): void {
    if (this.tty && !this.closed && !this.raw.isActive) this.push('\x1b[?2004h');
  }

  /** Prints what is pending, gives the terminal back as it was, removes the footer and stops. */
  close(finalLines: string[] = []): void {
    if (this.closed) return;
    this.takePartial();
    // What was live stays on screen, for good.
    if (this.tty && this.liveLines) for (const l of this.liveLines(this.cols)) this.push(`${l}\n`);
    this.liveLines = undefined;
    if (this.raw.isActive) this.push(this.raw.leave());
    for (const l of [...this.deferred.splice(0), ...finalLines]) this.push(`${l}\n`);
    if (this.tty) this.push('\x1b[?2004l');
    this.flush(false);
    this.closed = true;
    if (this.partialTimer) clearTimeout(this.partialTimer);
    if (this.tty) this.stdout.off('resize', this.onResize);
  }

  /** Stops without writing anything more: the terminal is gone (closed window, hung-up line). */
  abandon(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    if (this.partialTimer) clearTimeout(this.partialTimer);
    if (this.tty) this.stdout.off('resize', this.onResize);
  }

  /** For the exit and crash hooks: what puts the terminal back, written synchronously. */
  emergencyBytes(): string {
    if (this.closed) return '';
    return this.raw.emergencyBytes() + (this.tty ? '\x1b[?2004l' : '');
  }

  private push(piece: string | Buffer): void {
    if (piece.length === 0) return;
    // Without a TTY an open line has no line end yet: whatever else comes starts on a line of its own.
    if (this.openLine !== undefined && !this.tty) this.pending.push('\n');
    this.openLine = undefined;
    this.pending.push(piece);
  }

  /**
   * Command output on the line view, continuing an open line if there is one. `open`: the text is a
   * partial line shown before its end came (see openLine).
   */
  private pushOutput(text: string, open: boolean): void {
    const from = this.openLine;
    let piece = text;
    if (from !== undefined) {
      this.openLine = undefined;
      // From the row below (the footer was erased there): up one, to where the line stopped.
      if (this.tty) piece = `\x1b[1A\x1b[${from + 1}G${text}`;
      this.pending.push(piece);
    } else this.push(piece);
    if (!open) return;
    if (this.tty) this.pending.push('\n');
    const col = columnAfter(from ?? 0, text);
    // A line that filled the row (or whose width is unknown) is not reopened: its rest starts a new one.
    this.openLine = col !== undefined && col < this.cols - 1 ? col : undefined;
  }

  /** A partial line that waited long enough is shown; its rest continues it. */
  private showPartial(): void {
    if (!this.partial) return;
    const text = this.partial;
    this.partial = '';
    this.pushOutput(text, true);
  }

  /** Ends a partial line: something else is printed after it. */
  private takePartial(): void {
    if (this.partialTimer) clearTimeout(this.partialTimer);
    this.partialTimer = undefined;
    if (this.partial) {
      const text = this.partial;
      this.partial = '';
      this.pushOutput(`${text}\n`, false);
    } else if (this.openLine !== undefined && !this.tty) {
      this.pending.push('\n');
      this.openLine = undefined;
    }
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.closed) this.flush(true);
    });
  }

  private flush(drawFooter: boolean): void {
    const parts: (string | Buffer)[] = [];
    if (this.tty && this.drawn) {
      // The cursor sits on the prompt row. Terminals that reflow on resize (most do, tmux too) may
      // have wrapped the footer over more rows: go up to where the status line starts now.
      const cols = this.cols;
      const rows = (n: number) => Math.max(1, Math.ceil(n / cols));
      const up = rows(this.drawn.prompt) - 1 + rows(this.drawn.status) + (this.drawn.live ?? []).reduce((n, w) => n + rows(w), 0);
      parts.push(`\r\x1b[${up}A\x1b[J`);
    }
    this.drawn = undefined;
    parts.push(...this.pending);
    this.pending = [];
    // A program clipped to this window: the rows its output changed this tick, drawn from its copy.
    if (this.raw.isActive) parts.push(this.raw.render());
    if (this.tty && drawFooter && !this.raw.isActive) {
      const live = this.liveLines?.(this.cols) ?? [];
      if (live.length) parts.push(`${live.join('\n')}\n`);
      parts.push(this.renderFooter());
      if (live.length) this.drawn!.live = live.map((l) => displayWidth(l));
    }
    if (parts.every((p) => p.length === 0)) return;
    this.stdout.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))));
  }

  private renderFooter(): string {
    // One column spare: a line that fills the width would leave the cursor in a pending wrap.
    const width = Math.max(10, this.cols - 1);
    // Not padded to the width: the shorter the line, the less a narrower window rewraps it.
    const status = fitWidth(this.footer.status, width);
    const statusLine = this.color ? `\x1b[${SGR[this.footer.statusColour]}m${status}\x1b[0m` : status;
    const prefixWidth = displayWidth(this.footer.promptPrefix);
    const room = width + 1 - prefixWidth;
    let shown: string;
    let cursor: number;
    if (this.footer.editor && room > 2) {
      const r = this.footer.editor.render(room);
      shown = r.line;
      cursor = prefixWidth + r.cursorColumn;
    } else {
      shown = room > 1 ? fitWidth(this.footer.input, room - 1) : '';
      cursor = prefixWidth + displayWidth(shown);
    }
    const promptWidth = prefixWidth + displayWidth(shown);
    this.drawn = { status: displayWidth(status), prompt: promptWidth };
    const back = promptWidth - cursor;
    return `${statusLine}\n${this.footer.promptPrefix}${shown}${back > 0 ? `\x1b[${back}D` : ''}`;
  }
}
