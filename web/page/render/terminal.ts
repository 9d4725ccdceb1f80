// command.* events → an xterm.js terminal: the command line, its output bytes (base64 on the wire),
// and how it ended.
import { Terminal } from '@xterm/xterm';
import type { PageEvent } from '../api.js';

function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class TerminalRenderer {
  readonly term: Terminal;
  /** Plain text written so far, for tests and copy (xterm's DOM holds only the visible rows). */
  text = '';

  constructor(container: HTMLElement) {
    this.term = new Terminal({ convertEol: true, rows: 16, cols: 100, scrollback: 5000, disableStdin: true });
    this.term.open(container);
  }

  handles(type: string): boolean {
    return type.startsWith('command.');
  }

  render(e: PageEvent): void {
    const d = e.data;
    if (e.type === 'command.started') this.write(`\x1b[1m$ ${String(d.command)}\x1b[0m\r\n`);
    else if (e.type === 'command.output') {
      const bytes = d.encoding === 'base64' ? base64ToBytes(String(d.data)) : new TextEncoder().encode(String(d.data));
      this.text += new TextDecoder().decode(bytes);
      this.term.write(bytes);
    } else if (e.type === 'command.completed') {
      this.write(`\x1b[2m[exit ${d.exitCode === null ? String(d.signal) : String(d.exitCode)}]\x1b[0m\r\n`);
    }
  }

  private write(s: string): void {
    this.text += s.replace(/\x1b\[[0-9;]*m/g, '');
    this.term.write(s);
  }
}
