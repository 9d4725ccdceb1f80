// Drives test/fixtures/driver.mjs, a real client process, from a test.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './processes.js';

const SCRIPT = path.join(ROOT, 'test', 'fixtures', 'driver.mjs');

export type Line = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export class Driver {
  readonly child: ChildProcess;
  readonly lines: Line[] = [];
  connectionId = '';
  daemonPid = 0;
  instanceId = '';
  /** The initialize result (ready()). */
  init: Line = {};
  private nextId = 1;
  private waiters: { pred: (l: Line) => boolean; resolve: (l: Line) => void; from: number }[] = [];
  private buf = '';
  stderr = '';

  constructor(env: NodeJS.ProcessEnv, name = 'driver', extraEnv: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [SCRIPT], {
      env: { ...env, DRIVER_NAME: name, ...extraEnv },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.child.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const text = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (!text.trim()) continue;
        const line = JSON.parse(text) as Line;
        this.lines.push(line);
        const index = this.lines.length - 1;
        for (const w of [...this.waiters]) {
          if (index >= w.from && w.pred(line)) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      }
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  async ready(timeoutMs = 15_000): Promise<this> {
    const l = await this.next((x) => x.ready === true, timeoutMs);
    this.connectionId = l.connectionId;
    this.daemonPid = l.daemonPid;
    this.instanceId = l.instanceId;
    this.init = l.init ?? {};
    return this;
  }

  /** The first line (from index `from`) matching pred, waiting up to timeoutMs. */
  next(pred: (l: Line) => boolean, timeoutMs = 15_000, from = 0): Promise<Line> {
    const found = this.lines.slice(from).find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve, from };
      this.waiters.push(w);
      setTimeout(() => {
        const idx = this.waiters.indexOf(w);
        if (idx >= 0) {
          this.waiters.splice(idx, 1);
          reject(new Error(`driver ${this.pid}: no matching line within ${timeoutMs} ms; last lines: ${JSON.stringify(this.lines.slice(-6))}; stderr: ${this.stderr}`));
        }
      }, timeoutMs);
    });
  }

  send(cmd: Record<string, unknown>): void {
    this.child.stdin!.write(JSON.stringify(cmd) + '\n');
  }

  /** Calls a method; resolves with the result or rejects with {reason, message}. */
  async call(method: string, params: Record<string, unknown> = {}, timeoutMs = 15_000): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const id = this.nextId++;
    this.send({ op: 'call', id, method, params });
    const l = await this.next((x) => x.id === id, timeoutMs);
    if (l.error) throw Object.assign(new Error(l.error.message), l.error);
    return l.result;
  }

  async callError(method: string, params: Record<string, unknown> = {}): Promise<{ reason: string; message: string; data?: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
    try {
      await this.call(method, params);
    } catch (e) {
      return e as { reason: string; message: string };
    }
    throw new Error(`${method} succeeded but an error was expected`);
  }

  /** session/event notifications received so far (optionally for one session). */
  events(sessionId?: string): Line[] {
    return this.lines
      .filter((l) => l.note === 'session/event' && (!sessionId || (l.params?.sessionId ?? l.sessionId) === sessionId))
      .map((l) => l.params ?? l);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    try {
      this.child.kill(signal);
    } catch {
      // gone
    }
  }
}
