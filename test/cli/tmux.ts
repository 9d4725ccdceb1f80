// Real terminals for CLI tests: a private tmux server (its own -L socket) whose panes run `astra`.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI, waitFor } from '../helpers/processes.js';

/** Single-quotes a word for sh. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export class Tmux {
  readonly socket = `astra-test-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  private readonly panePids: number[] = [];

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  /**
   * Runs a tmux command, `-t NAME` made exact (`=NAME:`, the session of that name): a bare name is
   * also matched against window names and session-name prefixes, and a window tmux renamed after its
   * command (`cat` once astra exited) would answer for a pane named `c`.
   */
  run(args: string[]): string {
    const i = args.indexOf('-t');
    const target = i >= 0 ? args[i + 1] : undefined;
    const exact = target !== undefined && /^[\w-]+$/.test(target) ? [...args.slice(0, i + 1), `=${target}:`, ...args.slice(i + 2)] : args;
    return execFileSync('tmux', ['-L', this.socket, ...exact], { env: this.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /**
   * A `cols`x40 terminal (120 by default) running `astra <args>`. When astra exits the pane prints `[exited N]` and
   * stays open (cat waits on the terminal), so the last screen can still be read.
   */
  start(name: string, astraArgs: string[], extraEnv: Record<string, string> = {}, cols = 120): number {
    const vars = Object.entries({ ASTRA_HOME: this.env.ASTRA_HOME ?? '', ...extraEnv }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const cmd = `${[process.execPath, CLI, ...astraArgs].map(shq).join(' ')}; echo "[exited $?]"; exec cat`;
    this.run(['new-session', '-d', '-x', String(cols), '-y', '40', '-s', name, ...vars, 'sh', '-c', cmd]);
    const pid = Number(this.run(['list-panes', '-t', name, '-F', '#{pane_pid}']).trim());
    this.panePids.push(pid);
    return pid;
  }

  /** Everything the pane printed (scrollback included), trailing blank lines dropped. */
  screen(name: string): string {
    return this.run(['capture-pane', '-p', '-J', '-S', '-', '-t', name]).replace(/\s+$/, '');
  }

  /**
   * The status line: while a command has the screen, the last row of the pane; otherwise the line
   * above the prompt at the bottom of the visible screen.
   */
  statusLine(name: string): string {
    const rows = this.visibleRows(name);
    const last = rows[rows.length - 1] ?? '';
    if (last.startsWith(' ') && last.includes(' │ ')) return last;
    const lines = rows.filter((l) => l.trim() !== '');
    return lines[lines.length - 2] ?? '';
  }

  /** The rows of the visible screen, blank ones included (as many as the pane is high). */
  visibleRows(name: string): string[] {
    const height = Number(this.run(['display', '-p', '-t', name, '#{pane_height}']).trim());
    const rows = this.run(['capture-pane', '-p', '-t', name]).replace(/\n$/, '').split('\n');
    while (rows.length < height) rows.push('');
    return rows;
  }

  /** A tmux format of the pane, e.g. '#{mouse_any_flag} #{alternate_on}'. */
  format(name: string, fmt: string): string {
    return this.run(['display', '-p', '-t', name, fmt]).trim();
  }

  /** Types text literally (no key names), then optionally presses Enter. */
  type(name: string, text: string, enter = false): void {
    this.run(['send-keys', '-t', name, '-l', text]);
    if (enter) this.run(['send-keys', '-t', name, 'Enter']);
  }

  /** Closes the pane as closing a terminal window does: its processes get SIGHUP. */
  close(name: string): void {
    this.run(['kill-pane', '-t', name]);
  }

  key(name: string, key: string): void {
    this.run(['send-keys', '-t', name, key]);
  }

  async waitScreen(name: string, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    try {
      return await waitFor(`${pattern} in pane ${name}`, () => {
        const s = this.screen(name);
        return pattern.test(s) ? s : undefined;
      }, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- pane ${name} ---\n${this.screen(name)}`);
    }
  }

  /** Waits for the last row of the pane (the status line while a program has the screen) to match; returns every visible row. */
  async waitLastRow(name: string, pattern: RegExp, timeoutMs = 15_000): Promise<string[]> {
    try {
      return await waitFor(`${pattern} on the last row of ${name}`, () => {
        const rows = this.visibleRows(name);
        return pattern.test(rows[rows.length - 1] ?? '') ? rows : undefined;
      }, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- pane ${name} ---\n${this.visibleRows(name).join('\n')}`);
    }
  }

  async waitStatus(name: string, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    try {
      return await waitFor(`status ${pattern} in pane ${name}`, () => {
        const s = this.statusLine(name);
        return pattern.test(s) ? s : undefined;
      }, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- pane ${name} status: ${this.statusLine(name)} ---\n${this.screen(name)}`);
    }
  }

  /** Kills the pane processes by pid, then this test's tmux server. */
  destroy(): void {
    for (const pid of this.panePids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    try {
      this.run(['kill-server']);
    } catch {
      // no server left
    }
    // kill-server can leave its socket file behind.
    const dir = path.join(this.env.TMUX_TMPDIR || os.tmpdir(), `tmux-${process.getuid?.() ?? 0}`);
    fs.rmSync(path.join(dir, this.socket), { force: true });
  }
}
