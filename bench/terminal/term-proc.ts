// A terminal client driven by the terminal benchmark: a process (`astra attach`, `tmux attach`) in a
// pseudo-terminal of its own (@lydell/node-pty), whose output the bench reads as a terminal would get
// it. Waits are on text in that output, each with a deadline; the process is killed by its pid.
import { createRequire } from 'node:module';
import type { IPty } from '@lydell/node-pty';

type PtyModule = typeof import('@lydell/node-pty');
const pty = createRequire(import.meta.url)('@lydell/node-pty') as PtyModule;

interface Waiter {
  text: string;
  tail: string;
  resolve: (atMs: number) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

const live = new Set<TermProc>();

/** Kills every terminal process the bench started that is still running (by pid). */
export function killAllTerms(): void {
  for (const t of live) t.kill();
}

export class TermProc {
  readonly proc: IPty;
  /** Bytes (UTF-16 code units of the decoded text, close enough for rates) the terminal received. */
  received = 0;
  /** The first 256 KiB of output, for waits that may already be satisfied when they start. */
  private head = '';
  /** The last 2 KiB of output, for error messages. */
  private recent = '';
  private waiters: Waiter[] = [];
  private exited = false;
  readonly exit: Promise<number>;

  constructor(
    readonly what: string,
    file: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    cols = 120,
    rows = 40,
  ) {
    this.proc = pty.spawn(file, args, { name: 'xterm-256color', cols, rows, cwd: process.cwd(), env: { LANG: 'C.UTF-8', ...env } as Record<string, string> });
    live.add(this);
    this.exit = new Promise((resolve) =>
      this.proc.onExit(({ exitCode }) => {
        this.exited = true;
        live.delete(this);
        for (const w of this.waiters.splice(0)) {
          clearTimeout(w.timer);
          w.reject(new Error(`bench: ${this.what} exited (${exitCode}) before "${w.text}" showed; it printed: ${JSON.stringify(this.recent.slice(-600))}`));
        }
        resolve(exitCode);
      }),
    );
    this.proc.onData((data) => {
      const at = performance.now();
      this.received += data.length;
      if (this.head.length < 256 * 1024) this.head += data;
      this.recent = (this.recent + data).slice(-2048);
      if (this.waiters.length === 0) return;
      for (const w of [...this.waiters]) {
        const s = w.tail + data;
        if (s.includes(w.text)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          clearTimeout(w.timer);
          w.resolve(at);
        } else w.tail = s.slice(-(w.text.length - 1) || s.length);
      }
    });
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** Everything printed so far (the first 256 KiB). */
  get printed(): string {
    return this.head;
  }

  /**
   * Resolves with the time (performance.now()) of the output chunk in which `text` appears: in output
   * from now on, or (`orEarlier`) already in what was printed.
   */
  next(text: string, timeoutMs = 15_000, orEarlier = false): Promise<number> {
    if (orEarlier && this.head.includes(text)) return Promise.resolve(performance.now());
    if (this.exited) return Promise.reject(new Error(`bench: ${this.what} has exited`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`bench: "${text}" did not show on ${this.what} within ${timeoutMs} ms; its last output: ${JSON.stringify(this.recent.slice(-600))}`));
      }, timeoutMs);
      const w: Waiter = { text, tail: '', resolve, reject, timer };
      this.waiters.push(w);
    });
  }

  write(data: string): void {
    this.proc.write(data);
  }

  kill(): void {
    if (this.exited) return;
    try {
      process.kill(this.proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    live.delete(this);
  }

  /** Kills the process and waits for the terminal to report its end. */
  async stop(): Promise<void> {
    this.kill();
    await Promise.race([this.exit, new Promise((r) => setTimeout(r, 2_000))]);
  }
}
