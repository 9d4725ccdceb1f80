// The terminal side of `astra attach`: output scrolls normally (so the terminal's own scrollback,
// resizing and copying work), and only a two-line footer — status and prompt — is redrawn at the
// bottom. Writes made in one tick go out as one write, so a flood of output stays cheap.

/** Visible length of a string that may hold SGR colour codes. */
function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, '').length;
}

/** Cuts plain text to `width` columns, marking the cut. */
export function fit(text: string, width: number): string {
  if (width <= 1) return '';
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

export interface Footer {
  /** Plain text; coloured by the view after fitting it to the width. */
  status: string;
  statusColour: 'green' | 'yellow' | 'red' | 'cyan' | 'gray';
  /** The prompt's fixed part, e.g. "❯ " or "approve? [y/n] " (may be coloured). */
  promptPrefix: string;
  /** What the user has typed. */
  input: string;
}

const SGR: Record<Footer['statusColour'], string> = { green: '42;30', yellow: '43;30', red: '41;97', cyan: '46;30', gray: '100;97' };

/** Partial output lines are shown after this long without their newline (a prompt, a progress dot). */
const PARTIAL_FLUSH_MS = 250;

export class AttachView {
  private pending = '';
  private partial = '';
  private partialTimer: NodeJS.Timeout | undefined;
  private footer: Footer = { status: '', statusColour: 'gray', promptPrefix: '', input: '' };
  /** Visible widths of the footer lines on screen, to erase them even after a resize rewrapped them. */
  private drawn: { status: number; prompt: number } | undefined;
  private scheduled = false;
  private closed = false;
  private readonly onResize = (): void => this.schedule();

  /**
   * `tty`: draw the footer (stdout is a terminal). `color`: colours allowed (a TTY without NO_COLOR).
   */
  constructor(
    private readonly stdout: NodeJS.WriteStream,
    readonly tty: boolean,
    readonly color: boolean,
  ) {
    if (tty) stdout.on('resize', this.onResize);
  }

  /** Command output, verbatim; whole lines are printed at once, a partial line after a short wait. */
  output(text: string): void {
    if (this.closed || text.length === 0) return;
    const all = this.partial + text;
    const nl = all.lastIndexOf('\n');
    if (nl >= 0) {
      this.pending += all.slice(0, nl + 1);
      this.partial = all.slice(nl + 1);
    } else {
      this.partial = all;
    }
    if (this.partial && !this.partialTimer) {
      this.partialTimer = setTimeout(() => {
        this.partialTimer = undefined;
        this.takePartial();
        this.schedule();
      }, PARTIAL_FLUSH_MS);
      this.partialTimer.unref();
    }
    this.schedule();
  }

  /** A whole line of information (a notice, an event). Ends any partial output line first. */
  line(text: string): void {
    if (this.closed) return;
    this.takePartial();
    this.pending += `${text}\n`;
    this.schedule();
  }

  setFooter(footer: Footer): void {
    if (this.closed) return;
    const f = this.footer;
    if (f.status === footer.status && f.statusColour === footer.statusColour && f.promptPrefix === footer.promptPrefix && f.input === footer.input) return;
    this.footer = { ...footer };
    // Without a footer on screen (no TTY) a status change is not news by itself: attach prints notices.
    if (this.tty) this.schedule();
  }

  /** Draws everything again (Ctrl-L). */
  redraw(): void {
    if (this.tty && !this.closed) this.stdout.write('\x1b[2J\x1b[H');
    this.drawn = undefined;
    this.schedule();
  }

  /** Prints what is pending, removes the footer and stops; later writes are dropped. */
  close(finalLines: string[] = []): void {
    if (this.closed) return;
    this.takePartial();
    for (const l of finalLines) this.pending += `${l}\n`;
    this.flush(false);
    this.closed = true;
    if (this.partialTimer) clearTimeout(this.partialTimer);
    if (this.tty) this.stdout.off('resize', this.onResize);
  }

  /** Stops without writing anything more: the terminal is gone (closed window, hung-up line). */
  abandon(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = '';
    if (this.partialTimer) clearTimeout(this.partialTimer);
    if (this.tty) this.stdout.off('resize', this.onResize);
  }

  private takePartial(): void {
    if (!this.partial) return;
    this.pending += `${this.partial}\n`;
    this.partial = '';
    if (this.partialTimer) clearTimeout(this.partialTimer);
    this.partialTimer = undefined;
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
    let s = '';
    if (this.tty && this.drawn) {
      // The cursor sits at the end of the prompt. Terminals that reflow on resize (most do, tmux
      // too) may have wrapped the footer over more rows: go up to where the status line starts now.
      const cols = Math.max(1, this.stdout.columns || 80);
      const rows = (n: number) => Math.max(1, Math.ceil(n / cols));
      const up = rows(this.drawn.prompt) - 1 + rows(this.drawn.status);
      s += `\r\x1b[${up}A\x1b[J`;
    }
    this.drawn = undefined;
    s += this.pending;
    this.pending = '';
    if (this.tty && drawFooter) s += this.renderFooter();
    if (s) this.stdout.write(s);
  }

  private renderFooter(): string {
    // One column spare: a line that fills the width would leave the cursor in a pending wrap.
    const width = Math.max(10, (this.stdout.columns || 80) - 1);
    // Not padded to the width: the shorter the line, the less a narrower window rewraps it.
    const status = fit(this.footer.status, width);
    const statusLine = this.color ? `\x1b[${SGR[this.footer.statusColour]}m${status}\x1b[0m` : status;
    const prefixLength = visibleLength(this.footer.promptPrefix);
    const room = width - prefixLength;
    const input = this.footer.input;
    // Long input scrolls: the end the user is typing at stays visible.
    const shown = room <= 1 ? '' : input.length < room ? input : `…${input.slice(input.length - room + 2)}`;
    this.drawn = { status: status.length, prompt: prefixLength + shown.length };
    return `${statusLine}\n${this.footer.promptPrefix}${shown}`;
  }
}
