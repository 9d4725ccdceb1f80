// The harness of the terminal end-to-end suites (test/cli/terminal-e2e-*.test.ts, issue 17): one real
// daemon per file (its own ASTRA_HOME, started by `astra daemon start`, killed by pid after the file),
// a private tmux server per test whose panes run `astra attach` / `astra log`, a session per test,
// and the readings a test asserts on: the visible rows of a pane, its last row (the status line),
// the cursor, and the terminal modes tmux tracks for the pane.
import { afterAll, beforeAll, expect, onTestFinished } from 'vitest';
import { AstraClient } from '../../client/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { cleanupHome, envFor, makeHome, runCli, waitFor } from '../helpers/processes.js';
import { Tmux } from './tmux.js';

export const ROWS = 40;

/**
 * What `astra attach` shows, in one place (the attach view owns the words; the tests follow them).
 * While a command runs in a pseudo-terminal the status line is the pane's last row; when idle it is
 * the footer's first line, above the input line.
 */
export const UI = {
  /** The status line of the session's controller (idle: "you control this session", running: "you control"). */
  controlling: /^ ?(.* │ )?you control\b/,
  /** The status line of an observer. */
  observing: /^ ?(.* │ )?observing\b/,
  /** The hint an observer gets when it types while a command runs. */
  observerHint: /you are observing[^\n]*(Ctrl-\]|Ctrl-T|--take)/,
  /** The status line while a command runs in a pseudo-terminal (a narrow one cuts the keys). */
  running: / │ running /,
  /** The prefix key is shown while a command runs (in a wide enough pane). */
  prefixShown: / │ running .* │ .*Ctrl-\] c cancel/,
  turnCompleted: (exit = 0) => new RegExp(`turn completed \\(exit ${exit}\\)`),
  turnCancelled: /turn cancelled/,
};

export interface Daemon {
  home: string;
  env: NodeJS.ProcessEnv;
}

/**
 * One daemon for the whole file. `extraEnv` goes to the daemon (and every CLI process of the file).
 * Tests do not share sessions or panes; they share only the daemon.
 */
export function sharedDaemon(extraEnv: Record<string, string> = {}): Daemon {
  const d = { home: '', env: {} as NodeJS.ProcessEnv };
  beforeAll(async () => {
    d.home = makeHome('ate');
    d.env = envFor(d.home, { ASTRA_IDLE_TIMEOUT_MS: '0', ...extraEnv });
    // The default (pseudo-terminals) is what these tests are about, unless a file asks otherwise.
    if (!('ASTRA_TERMINAL' in extraEnv)) delete d.env.ASTRA_TERMINAL;
    const r = await runCli(['daemon', 'start'], d.env, 30_000);
    if (r.code !== 0) throw new Error(`astra daemon start exited with ${r.code}: ${r.stderr}`);
  });
  afterAll(async () => {
    if (d.home) await cleanupHome(d.home);
  });
  return d;
}

/** A tmux server of this test's own (-L socket); killed with its panes when the test ends. */
export function tmuxFor(d: Daemon): TermPanes {
  const t = new TermPanes(d.env);
  onTestFinished(() => t.destroy());
  return t;
}

/** A new session of this test; `auto` approvals unless told otherwise. */
export async function newSession(d: Daemon, title: string, approval: 'auto' | 'ask' = 'auto'): Promise<string> {
  const r = await runCli(['new', '--approval', approval, '--title', title], d.env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

/** Every event of a session so far, read with an in-process client. */
export async function sessionEvents(d: Daemon, sessionId: string): Promise<SessionEvent[]> {
  const c = await AstraClient.connect({ clientName: 'terminal-e2e', env: d.env, reconnect: false, autoStart: false });
  try {
    const out: SessionEvent[] = [];
    let since = 0;
    for (;;) {
      const r = await c.session.read({ sessionId, sinceSeq: since, limit: 1000 });
      out.push(...r.events);
      if (r.nextSeq === undefined || r.events.length === 0) return out;
      since = r.events[r.events.length - 1]!.seq;
    }
  } finally {
    await c.close();
  }
}

/** Waits for an event of the session that `pred` accepts. */
export async function waitEvent(d: Daemon, sessionId: string, what: string, pred: (e: SessionEvent) => boolean, deadlineMs = 15_000): Promise<SessionEvent> {
  return waitFor(what, async () => (await sessionEvents(d, sessionId)).find(pred), deadlineMs);
}

export interface PaneModes {
  mouseAny: boolean;
  mouseButton: boolean;
  mouseStandard: boolean;
  mouseSgr: boolean;
  alternate: boolean;
  cursorVisible: boolean;
  keypad: boolean;
  keypadCursor: boolean;
}

/** The Tmux helper with the readings of a terminal test. */
export class TermPanes extends Tmux {
  /** `astra attach <args>` in a new pane of `cols` × 40. */
  attach(name: string, sessionId: string, extra: string[] = [], cols = 120): number {
    return this.start(name, ['attach', sessionId, ...extra], {}, cols);
  }

  /** The visible rows of the pane, exactly `pane_height` of them (blank rows as ''). */
  rows(name: string): string[] {
    const height = Number(this.run(['display', '-p', '-t', name, '#{pane_height}']).trim());
    const lines = this.run(['capture-pane', '-p', '-t', name]).replace(/\n$/, '').split('\n');
    while (lines.length < height) lines.push('');
    return lines.slice(0, height).map((l) => l.replace(/\s+$/, ''));
  }

  /** The visible screen as text (no scrollback). */
  visible(name: string): string {
    return this.rows(name).join('\n');
  }

  /**
   * The status line: the last visible row with the status line's separators (while a command runs,
   * the last row; when idle, the row above the input line).
   */
  override statusLine(name: string): string {
    const rows = this.rows(name);
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i]!.includes(' │ ')) return rows[i]!;
    return '';
  }

  /** The pane's last row: where `astra attach` keeps its status line while a command runs. */
  lastRow(name: string): string {
    const r = this.rows(name);
    return r[r.length - 1]!;
  }

  cursor(name: string): { x: number; y: number } {
    const [x, y] = this.run(['display', '-p', '-t', name, '#{cursor_x} #{cursor_y}']).trim().split(' ').map(Number);
    return { x: x!, y: y! };
  }

  size(name: string): { cols: number; rows: number } {
    const [cols, rows] = this.run(['display', '-p', '-t', name, '#{pane_width} #{pane_height}']).trim().split(' ').map(Number);
    return { cols: cols!, rows: rows! };
  }

  /** The modes a program can leave on a terminal, as tmux tracks them for the pane. */
  modes(name: string): PaneModes {
    const f = this.run([
      'display', '-p', '-t', name,
      '#{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag} #{mouse_sgr_flag} #{alternate_on} #{cursor_flag} #{keypad_flag} #{keypad_cursor_flag}',
    ]).trim().split(' ').map((v) => v === '1');
    return { mouseAny: f[0]!, mouseButton: f[1]!, mouseStandard: f[2]!, mouseSgr: f[3]!, alternate: f[4]!, cursorVisible: f[5]!, keypad: f[6]!, keypadCursor: f[7]! };
  }

  /** Resizes the pane's window (no client is attached to these sessions, so the size is manual). */
  resize(name: string, cols: number, rows: number): void {
    this.run(['resize-window', '-t', name, '-x', String(cols), '-y', String(rows)]);
  }

  async waitVisible(name: string, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    return this.waitOn(name, `visible ${pattern}`, () => this.visible(name), pattern, timeoutMs);
  }

  async waitModes(name: string, what: string, pred: (m: PaneModes) => boolean, timeoutMs = 10_000): Promise<PaneModes> {
    try {
      return await waitFor(`${what} in pane ${name}`, () => {
        const m = this.modes(name);
        return pred(m) ? m : undefined;
      }, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}; modes now ${JSON.stringify(this.modes(name))}\n--- pane ${name} ---\n${this.visible(name)}`);
    }
  }

  private async waitOn(name: string, what: string, read: () => string, pattern: RegExp, timeoutMs: number): Promise<string> {
    try {
      return await waitFor(`${what} in pane ${name}`, () => {
        const s = read();
        return pattern.test(s) ? s : undefined;
      }, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- pane ${name} (visible) ---\n${this.visible(name)}\n--- last row: ${JSON.stringify(this.lastRow(name))}`);
    }
  }
}

/** Escapes text for a RegExp. */
export function re(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
