// A copy of the running program's screen inside `astra attach`: a headless terminal emulator
// (@xterm/headless, loaded on first use) at the program's size, fed the bytes the view gets. It lets
// the view draw the program's screen itself — clipped to a window smaller than the program's (an
// observer's; the program is sized to the controller's window), as tmux draws a smaller client, and
// exactly again on a redraw (Ctrl-] l). No I/O: render() returns the bytes to write.
//
// The emulator is fed with its synchronous write (`_core.writeSync`, internal to @xterm/headless 6):
// a render must show every byte fed before it, in the same tick. Without it there is no mirror
// (ProgramMirror.create answers undefined) and the view passes the program's bytes through as before.
import { createRequire } from 'node:module';
import type { IBufferCell, Terminal as XtermTerminal } from '@xterm/headless';

type TerminalCtor = typeof import('@xterm/headless').Terminal;
interface Core {
  writeSync?(data: string | Uint8Array): void;
  coreService?: { isCursorHidden?: boolean };
}

let ctor: TerminalCtor | null | undefined;
function terminalClass(): TerminalCtor | undefined {
  if (ctor === undefined) {
    try {
      ctor = (createRequire(import.meta.url)('@xterm/headless') as typeof import('@xterm/headless')).Terminal;
    } catch {
      ctor = null;
    }
  }
  return ctor ?? undefined;
}

/** The part of the program's screen a window shows. */
export interface Viewport {
  cols: number;
  rows: number;
}

export class ProgramMirror {
  /** The rows as last rendered (their bytes): a render rewrites only the rows that changed. */
  private drawn: string[] = [];

  private constructor(private term: XtermTerminal) {}

  /** A mirror of a program of cols × rows, or undefined where the emulator cannot be used. */
  static create(cols: number, rows: number): ProgramMirror | undefined {
    const term = ProgramMirror.open(cols, rows);
    return term ? new ProgramMirror(term) : undefined;
  }

  private static open(cols: number, rows: number): XtermTerminal | undefined {
    const Terminal = terminalClass();
    if (!Terminal) return undefined;
    const term = new Terminal({ cols, rows, scrollback: 0, allowProposedApi: true, logLevel: 'off' });
    if (typeof (term as unknown as { _core?: Core })._core?.writeSync !== 'function') {
      term.dispose();
      return undefined;
    }
    return term;
  }

  get cols(): number {
    return this.term.cols;
  }

  get rows(): number {
    return this.term.rows;
  }

  /** The program is on its alternate screen. */
  get alternate(): boolean {
    return this.term.buffer.active.type === 'alternate';
  }

  write(data: Uint8Array | string): void {
    if (data.length > 0) this.core().writeSync!(data);
  }

  /** The program's terminal took a new size (the bytes after this are drawn at it). */
  resize(cols: number, rows: number): void {
    if (cols !== this.term.cols || rows !== this.term.rows) this.term.resize(cols, rows);
  }

  /** Starts again from a screen snapshot: `data` draws it on a cleared terminal of cols × rows. */
  reset(cols: number, rows: number, data: Uint8Array): void {
    // The same emulator, reset (a flood's frames come about 30 times a second).
    this.term.reset();
    this.resize(cols, rows);
    this.write(data);
    this.drawn = [];
  }

  /** Whether a window of `view` shows less than the whole program. */
  clips(view: Viewport): boolean {
    return this.term.cols > view.cols || this.term.rows > view.rows;
  }

  /**
   * Bytes that draw the program's screen on rows 1..view.rows of the user's terminal (the rows the
   * program has there), clipped to view.cols columns: the top rows, or, when the program's cursor is
   * below what fits, the rows ending with the cursor's. Only rows that changed since the last render,
   * unless `full`. The cursor goes where the program's is (hidden when that row or column is cut).
   */
  render(view: Viewport, full: boolean): string {
    const buf = this.term.buffer.active;
    const cursorY = buf.cursorY;
    const top = cursorY >= view.rows ? cursorY - view.rows + 1 : 0;
    let out = '';
    const cell = buf.getNullCell();
    const drawn: string[] = [];
    for (let y = 0; y < view.rows; y++) {
      const line = top + y < this.term.rows ? buf.getLine(buf.baseY + top + y) : undefined;
      const row = line ? renderRow(line, view.cols, cell) : { text: '', width: 0 };
      // A row that fills the width leaves the cursor at its last column: erasing from there would eat its last character.
      const bytes = `${row.text}\x1b[0m${row.width < view.cols ? '\x1b[K' : ''}`;
      drawn.push(bytes);
      if (full || this.drawn[y] !== bytes) out += `\x1b[${y + 1};1H${bytes}`;
    }
    this.drawn = drawn;
    const x = buf.cursorX;
    const hidden = this.core().coreService?.isCursorHidden === true || x >= view.cols;
    return `\x1b[?25l${out}\x1b[${cursorY - top + 1};${Math.min(x, view.cols - 1) + 1}H${hidden ? '' : '\x1b[?25h'}`;
  }

  dispose(): void {
    this.term.dispose();
  }

  private core(): Core {
    return (this.term as unknown as { _core: Core })._core;
  }
}

type BufferLine = NonNullable<ReturnType<XtermTerminal['buffer']['active']['getLine']>>;

/** One row's cells as text and SGR sequences, up to `cols` columns, trailing blanks left out. */
function renderRow(line: BufferLine, cols: number, cell: IBufferCell): { text: string; width: number } {
  // The last cell that shows something (a character, or a colour behind a blank).
  let end = 0;
  for (let x = 0, w = 0; x < line.length && w < cols; x++) {
    line.getCell(x, cell);
    const cw = cell.getWidth();
    if (cw === 0) continue;
    if (w + cw > cols) break;
    w += cw;
    if (cell.getChars() !== '' || !cell.isBgDefault() || cell.isInverse()) end = x + 1;
  }
  let text = '';
  let sgr = '';
  let width = 0;
  for (let x = 0; x < end; x++) {
    line.getCell(x, cell);
    const cw = cell.getWidth();
    if (cw === 0) continue;
    const s = sgrOf(cell);
    if (s !== sgr) {
      text += `\x1b[0${s}m`;
      sgr = s;
    }
    text += cell.getChars() || ' ';
    width += cw;
  }
  return { text, width };
}

function sgrOf(c: IBufferCell): string {
  let s = '';
  if (c.isBold()) s += ';1';
  if (c.isDim()) s += ';2';
  if (c.isItalic()) s += ';3';
  if (c.isUnderline()) s += ';4';
  if (c.isBlink()) s += ';5';
  if (c.isInverse()) s += ';7';
  if (c.isInvisible()) s += ';8';
  if (c.isStrikethrough()) s += ';9';
  s += colour(c.isFgRGB(), c.isFgPalette(), c.getFgColor(), 30);
  s += colour(c.isBgRGB(), c.isBgPalette(), c.getBgColor(), 40);
  return s;
}

function colour(rgb: boolean | number, palette: boolean | number, v: number, base: 30 | 40): string {
  if (rgb) return `;${base + 8};2;${(v >> 16) & 255};${(v >> 8) & 255};${v & 255}`;
  if (!palette) return '';
  if (v < 8) return `;${base + v}`;
  if (v < 16) return `;${base + 60 + v - 8}`;
  return `;${base + 8};5;${v}`;
}
