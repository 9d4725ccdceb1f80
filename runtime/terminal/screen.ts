// The screen of one running command, kept by a headless terminal emulator fed the same bytes as the
// journal, so a client attaching mid-command can be shown the current screen (then live bytes)
// instead of a replay of every byte since the command began. One per running command; the owner
// resizes it whenever the pseudo-terminal is resized, and disposes it when the command ends.
import { createRequire } from 'node:module';
import type { Terminal as XtermTerminal } from '@xterm/headless';
import type { SerializeAddon as XtermSerializeAddon } from '@xterm/addon-serialize';
import { checkTerminalSize } from './pty-command.js';

// Both packages are CommonJS; createRequire keeps their classes typed without an interop default.
const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');
const { SerializeAddon } = requireCjs('@xterm/addon-serialize') as typeof import('@xterm/addon-serialize');

export const DEFAULT_SCROLLBACK_LINES = 1000;

interface XtermInternals {
  coreService?: { isCursorHidden?: boolean };
  buffer?: { scrollTop?: number; scrollBottom?: number };
}

export type MouseTracking = 'none' | 'x10' | 'vt200' | 'drag' | 'any';

export interface ScreenSnapshot {
  cols: number;
  rows: number;
  /**
   * Bytes that draw the visible screen (text, colours, cursor position, and the modes the program
   * set, alternate screen included) when written to a cleared terminal of cols × rows.
   */
  screen: Buffer;
  /** The lines that scrolled off the top of the normal screen, oldest first, as plain text (bounded). */
  scrollback: string[];
  /** True when the program is on the alternate screen (a full-screen program such as vim or top). */
  alternate: boolean;
  cursor: { x: number; y: number };
  cursorVisible: boolean;
  modes: { mouseTracking: MouseTracking; bracketedPaste: boolean; applicationCursorKeys: boolean; applicationKeypad: boolean };
  /** The visible screen as plain text, one string per row (trailing blanks trimmed). */
  text: string[];
}

export interface CommandScreenOptions {
  cols: number;
  rows: number;
  scrollbackLines?: number;
}

export class CommandScreen {
  private readonly term: XtermTerminal;
  private readonly serializer: XtermSerializeAddon;
  private readonly scrollbackLines: number;
  private disposed = false;

  constructor(opts: CommandScreenOptions) {
    checkTerminalSize(opts.cols, opts.rows);
    this.scrollbackLines = opts.scrollbackLines ?? DEFAULT_SCROLLBACK_LINES;
    this.term = new Terminal({ cols: opts.cols, rows: opts.rows, scrollback: this.scrollbackLines, allowProposedApi: true });
    this.serializer = new SerializeAddon();
    this.term.loadAddon(this.serializer);
  }

  get cols(): number {
    return this.term.cols;
  }

  get rows(): number {
    return this.term.rows;
  }

  /** Feeds output bytes (parsed asynchronously; snapshot() waits for everything written before it). */
  write(data: Uint8Array): void {
    if (this.disposed) return;
    this.term.write(data);
  }

  resize(cols: number, rows: number): void {
    checkTerminalSize(cols, rows);
    if (!this.disposed) this.term.resize(cols, rows);
  }

  async snapshot(): Promise<ScreenSnapshot> {
    if (this.disposed) throw new Error('the screen was disposed: the command has ended');
    // The emulator parses in batches: an empty write's callback runs after all earlier bytes.
    await new Promise<void>((resolve) => this.term.write('', resolve));
    const active = this.term.buffer.active;
    const text: string[] = [];
    for (let y = 0; y < this.term.rows; y++) text.push(active.getLine(active.viewportY + y)?.translateToString(true) ?? '');
    const m = this.term.modes;
    return {
      cols: this.term.cols,
      rows: this.term.rows,
      screen: Buffer.from(this.serializer.serialize({ scrollback: 0 }) + this.extraState(), 'utf8'),
      scrollback: this.scrollbackText(),
      alternate: active.type === 'alternate',
      cursor: { x: active.cursorX, y: active.cursorY },
      cursorVisible: !this.internals()?.coreService?.isCursorHidden,
      modes: {
        mouseTracking: m.mouseTrackingMode,
        bracketedPaste: m.bracketedPasteMode,
        applicationCursorKeys: m.applicationCursorKeysMode,
        applicationKeypad: m.applicationKeypadMode,
      },
      text,
    };
  }

  private internals(): XtermInternals | undefined {
    return (this.term as unknown as { _core?: XtermInternals })._core;
  }

  /**
   * What the serialize addon leaves out and a full-screen program relies on: its scroll region and a
   * hidden cursor (read from the emulator's internals; skipped should they change).
   */
  private extraState(): string {
    const core = this.internals();
    let out = '';
    const top = core?.buffer?.scrollTop;
    const bottom = core?.buffer?.scrollBottom;
    if (typeof top === 'number' && typeof bottom === 'number' && (top !== 0 || bottom !== this.term.rows - 1)) {
      const active = this.term.buffer.active;
      // DECSTBM homes the cursor: put it back where the program left it.
      out += `\x1b[${top + 1};${bottom + 1}r\x1b[${active.cursorY + 1};${active.cursorX + 1}H`;
    }
    if (core?.coreService?.isCursorHidden) out += '\x1b[?25l';
    return out;
  }

  /** Rows above the normal screen's viewport, with soft-wrapped rows joined back into their line. */
  private scrollbackText(): string[] {
    const normal = this.term.buffer.normal;
    const lines: string[] = [];
    for (let y = 0; y < normal.baseY; y++) {
      const row = normal.getLine(y);
      if (!row) continue;
      const t = row.translateToString(true);
      if (row.isWrapped && lines.length > 0) lines[lines.length - 1] += t;
      else lines.push(t);
    }
    return lines.slice(-this.scrollbackLines);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.term.dispose();
  }
}
