// The two sides of the terminal benchmark: a private tmux server (its own -L socket, no config) whose
// clients are `tmux attach` processes, and a real Astra daemon (its own ASTRA_HOME) whose clients are
// `astra attach` processes — each client in a pseudo-terminal of its own (term-proc.ts).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DaemonProc } from '../daemon-proc.js';
import { CLI } from '../lib.js';
import { TermProc } from './term-proc.js';

export const COLS = 120;
export const ROWS = 40;
export const TITLE = 'benchterm';

// ---- tmux ----

export class TmuxServer {
  readonly socket = `astra-bench-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;

  run(args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }

  newSession(name: string, command: string): void {
    this.run(['new-session', '-d', '-s', name, '-x', String(COLS), '-y', String(ROWS), command]);
    this.run(['set', '-g', 'status', 'off']);
  }

  attach(name: string, what: string, readOnly = false): TermProc {
    return new TermProc(what, 'tmux', ['-u', '-L', this.socket, 'attach', ...(readOnly ? ['-r'] : []), '-t', name], process.env, COLS, ROWS);
  }

  serverPid(): number {
    return Number(this.run(['display', '-p', '#{pid}']).trim());
  }

  kill(): void {
    try {
      this.run(['kill-server']);
    } catch {
      // no server left
    }
    const dir = path.join(process.env.TMUX_TMPDIR || os.tmpdir(), `tmux-${process.getuid?.() ?? 0}`);
    fs.rmSync(path.join(dir, this.socket), { force: true });
  }
}

// ---- astra ----

export class AstraSide {
  readonly daemon = new DaemonProc();

  async start(): Promise<void> {
    await this.daemon.start();
  }

  async session(title: string): Promise<string> {
    const c = await this.daemon.client('bench-terminal');
    try {
      const { session } = await c.session.create({ title, engine: 'shell', approvalPolicy: 'auto', cwd: this.daemon.home });
      return session.id;
    } finally {
      await c.close();
    }
  }

  attach(id: string, what: string): TermProc {
    return new TermProc(what, process.execPath, [CLI, 'attach', id], this.daemon.env, COLS, ROWS);
  }

  /** The controller's and an observer's `astra attach`, both showing the session. */
  async pair(id: string): Promise<[TermProc, TermProc]> {
    const ctl = this.attach(id, 'the controller\'s astra attach');
    await ctl.next(TITLE, 20_000, true);
    const c = await this.daemon.client('bench-terminal-probe');
    try {
      await waitUntil('the controller\'s astra attach holding control', 20_000, async () => (await c.session.read({ sessionId: id, limit: 1 })).session.controller != null);
    } finally {
      await c.close();
    }
    const obs = this.attach(id, 'the observer\'s astra attach');
    await obs.next(TITLE, 20_000, true);
    return [ctl, obs];
  }

  async stop(): Promise<void> {
    await this.daemon.stop();
  }
}

export async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
