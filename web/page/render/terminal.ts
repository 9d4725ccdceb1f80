// command.* events → an xterm.js terminal: the command line, its output bytes (base64 on the wire),
// and how it ended. Output of a command with a pseudo-terminal (command.started tty: true) goes to
// xterm as it came — `\r\n`, `\r` redraws and escape sequences are the program's, at the daemon's
// terminal width — while pipe output (plain `\n`) has its line feeds made into new lines.
import { Terminal } from '@xterm/xterm';
import type { PageEvent } from '../api.js';

/** The daemon's pseudo-terminal width until a controller resizes it (docs/terminal.md). */
const PTY_COLS = 80;
const PIPE_COLS = 100;
const ROWS = 16;
/**
 * Back to the normal screen with the modes a new command expects. Leaving the alternate screen
 * (1049) restores the cursor the program saved on entering it; on the normal screen already, it
 * restores the cursor saved just before (DECSC), so it stays where it is. Then no scroll region
 * (setting one homes the cursor: saved and restored around it), autowrap on, cursor shown,
 * attributes reset.
 */
const RESET_MODES = '\x1b7\x1b[?1049l\x1b7\x1b[r\x1b8\x1b[?7h\x1b[?25h\x1b[0m';

function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class TerminalRenderer {
  readonly term: Terminal;
  /** The output as text, for tests and copy (xterm's DOM holds only the visible rows). */
  text = '';
  /** One decoder for the stream: a character split across two chunks decodes whole. */
  private decoder = new TextDecoder();
  /** Whether the cursor is at the start of a line, so the next `$ command` starts on a fresh one. */
  private atLineStart = true;
  /** Commands shown so far (the caption says whether earlier output is there). */
  private commands = 0;

  constructor(
    container: HTMLElement,
    /** A line above the terminal saying whose output it shows: the current turn's command, or that it has none yet. */
    private readonly caption?: HTMLElement,
  ) {
    this.term = new Terminal({ convertEol: true, rows: ROWS, cols: PIPE_COLS, scrollback: 5000, disableStdin: true });
    this.term.open(container);
    this.say('no command has run yet');
  }

  handles(type: string): boolean {
    return type.startsWith('command.') || type === 'turn.started';
  }

  render(e: PageEvent): void {
    const d = e.data;
    if (e.type === 'turn.started') {
      // Until this turn runs a command, the output below is an earlier turn's: say so.
      this.say(`this turn has run no command yet${this.commands > 0 ? '; below: the output of earlier turns' : ''}`);
      return;
    }
    if (e.type === 'command.started') {
      // A program of an earlier turn may have left the terminal in its own state (the alternate
      // screen of a full-screen program that was cancelled, a scroll region, a hidden cursor): the
      // new command starts on the normal screen, and the panel shows its start.
      this.commands++;
      this.term.write(RESET_MODES);
      this.term.scrollToBottom();
      this.say(`$ ${String(d.command)} — running`);
      const tty = d.tty === true;
      // Pipes: "\n" is a new line. A terminal: the program's bytes as they are (its tty wrote "\r\n").
      // xterm parses writes later, in order: switch once what came before is parsed, before what follows.
      const cols = tty ? PTY_COLS : PIPE_COLS;
      this.term.write('', () => {
        this.term.options.convertEol = !tty;
        if (this.term.cols !== cols) this.term.resize(cols, ROWS);
      });
      this.write(`${this.atLineStart ? '' : '\r\n'}\x1b[1m$ ${String(d.command)}\x1b[0m\r\n`);
    } else if (e.type === 'command.output') {
      const bytes = d.encoding === 'base64' ? base64ToBytes(String(d.data)) : new TextEncoder().encode(String(d.data));
      if (bytes.length === 0) return;
      this.text += this.decoder.decode(bytes, { stream: true });
      this.atLineStart = bytes[bytes.length - 1] === 0x0a;
      this.term.write(bytes);
    } else if (e.type === 'command.completed') {
      this.text += this.decoder.decode();
      this.decoder = new TextDecoder();
      // Attributes the program left set (colour, reverse) end with it.
      const how = d.exitCode === null ? String(d.signal) : String(d.exitCode);
      this.write(`\x1b[0m${this.atLineStart ? '' : '\r\n'}\x1b[2m[exit ${how}]\x1b[0m\r\n`);
      if (this.caption) this.say(`${(this.caption.textContent ?? '').replace(/ — running$/, '')} — exit ${how}`);
    }
  }

  private say(text: string): void {
    if (this.caption) this.caption.textContent = text;
  }

  /** The rows the terminal shows now, trailing blanks cut. */
  visibleRows(): string[] {
    const buf = this.term.buffer.active;
    const out: string[] = [];
    for (let i = buf.viewportY; i < buf.viewportY + this.term.rows; i++) out.push(buf.getLine(i)?.translateToString(true) ?? '');
    return out;
  }

  /** The screen as a terminal shows it: every line of the buffer (scrollback included; a line the width wrapped is one), trailing blanks cut. */
  lines(): string[] {
    const buf = this.term.buffer.active;
    const out: string[] = [];
    for (let i = 0; i < buf.length; i++) {
      const line = buf.getLine(i);
      // A row the next one continues keeps its trailing blanks: they are part of the line.
      const text = line?.translateToString(!buf.getLine(i + 1)?.isWrapped) ?? '';
      if (line?.isWrapped && out.length > 0) out[out.length - 1] += text;
      else out.push(text);
    }
    while (out.length > 0 && out[out.length - 1] === '') out.pop();
    return out;
  }

  private write(s: string): void {
    this.text += s.replace(/\x1b\[[0-9;]*m/g, '');
    this.atLineStart = s.endsWith('\n');
    this.term.write(s);
  }
}
