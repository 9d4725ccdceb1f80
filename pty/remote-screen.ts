// A command's screen parsed on a worker thread (screen-worker.ts), so that the daemon's event loop
// spends on a flood of output only a copy and a message per chunk, and the emulator uses another
// core. `openScreen` gives a RemoteScreen when the worker's script is there (the built package),
// else a CommandScreen on this thread (running from sources, or `inline`). Both are a ScreenHandle.
//
// Exactness: one worker serves every screen; messages reach it in the order they were posted, so a
// snapshot asked for after some writes shows exactly those writes. If the worker dies, its screens
// are `broken`: their snapshots fail, and the owner gives them up (subscribers get events).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CommandScreen, type CommandScreenOptions, type ScreenSnapshot } from './screen.js';
import type { FromWorker, ToWorker } from './screen-worker.js';
import { checkTerminalSize } from './size.js';
import { Level } from '../flow/index.js';

export interface ScreenHandle {
  readonly pendingBytes: number;
  /** True once the screen cannot be trusted any more (its worker died). */
  readonly broken: boolean;
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
  snapshot(withScrollback?: boolean): Promise<ScreenSnapshot>;
  /** Resolves once fewer than `below` written bytes wait to be parsed (or the screen is disposed or broken). */
  drained(below: number): Promise<void>;
  dispose(): void;
}

/** Where the worker's compiled script is: beside this module (dist/pty), or beside the daemon bundle's. */
function workerScript(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const c of [path.join(here, 'screen-worker.js'), path.join(here, '..', 'pty', 'screen-worker.js')]) if (fs.existsSync(c)) return c;
  return undefined;
}

/**
 * A worker with no screen for this long is stopped: its heap grows with the floods it parsed (an
 * emulator's scrollback, V8's grown spaces) and is never given back while the thread lives (issue
 * 26's soak: +80 MiB RSS after the traffic, still there idle). The next screen starts it again.
 * ASTRA_SCREEN_WORKER_IDLE_MS overrides it (tests).
 */
const IDLE_STOP_MS = Number(process.env.ASTRA_SCREEN_WORKER_IDLE_MS) || 30_000;

class ScreenWorker {
  private worker: Worker | undefined;
  private readonly screens = new Map<number, RemoteScreen>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly script: string) {}

  open(screen: RemoteScreen, opts: CommandScreenOptions): number {
    const id = this.nextId++;
    this.screens.set(id, screen);
    this.cancelIdleStop();
    this.post({ op: 'open', id, cols: opts.cols, rows: opts.rows, ...(opts.scrollbackLines ? { scrollbackLines: opts.scrollbackLines } : {}) });
    return id;
  }

  post(m: ToWorker): void {
    if (!this.worker) this.start();
    this.worker!.postMessage(m);
  }

  /** Starts the thread ahead of its first screen (it loads the emulator meanwhile); it keeps no process alive while it has none. */
  warm(): void {
    if (this.worker) return;
    const w = this.start();
    if (this.screens.size === 0) {
      w.unref();
      this.idleStop();
    }
  }

  get running(): boolean {
    return this.worker !== undefined;
  }

  closed(id: number): void {
    this.screens.delete(id);
    if (this.screens.size === 0) {
      this.worker?.unref();
      this.idleStop();
    }
  }

  /** Stops the thread once it has had no screen for IDLE_STOP_MS. */
  private idleStop(): void {
    this.cancelIdleStop();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      const w = this.worker;
      if (!w || this.screens.size > 0) return;
      // Forgotten first: its exit then breaks no screen, and the next post starts a new thread.
      this.worker = undefined;
      void w.terminate();
    }, IDLE_STOP_MS);
    this.idleTimer.unref();
  }

  private cancelIdleStop(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private start(): Worker {
    const w = new Worker(this.script);
    this.worker = w;
    w.on('message', (m: FromWorker) => {
      const s = this.screens.get(m.id);
      if (!s) return;
      if (m.op === 'parsed') s.parsed(m.bytes);
      else s.answered(m.req, m.snapshot, m.error);
    });
    const gone = (why: string) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      for (const s of this.screens.values()) s.break(why);
      this.screens.clear();
    };
    w.on('error', (e) => gone(`the screen worker failed: ${e.message}`));
    w.on('exit', (code) => gone(`the screen worker exited (code ${code})`));
    return w;
  }

  ref(): void {
    this.worker?.ref();
  }
}

let shared: ScreenWorker | undefined | null;

function sharedWorker(): ScreenWorker | undefined {
  if (shared === undefined) {
    const script = workerScript();
    shared = script ? new ScreenWorker(script) : null;
  }
  return shared ?? undefined;
}

export class RemoteScreen implements ScreenHandle {
  private readonly id: number;
  private pending = 0;
  private disposed = false;
  private brokenWhy: string | undefined;
  private nextReq = 1;
  private readonly snapshots = new Map<number, { resolve: (s: ScreenSnapshot) => void; reject: (e: Error) => void }>();
  /** The level of pendingBytes, for drained(below). */
  private readonly unparsed = new Level(() => this.pending);

  constructor(
    private readonly worker: ScreenWorker,
    opts: CommandScreenOptions,
  ) {
    checkTerminalSize(opts.cols, opts.rows);
    this.id = worker.open(this, opts);
    worker.ref();
  }

  get pendingBytes(): number {
    return this.pending;
  }

  get broken(): boolean {
    return this.brokenWhy !== undefined;
  }

  write(data: Uint8Array): void {
    if (this.disposed || this.broken || data.length === 0) return;
    this.pending += data.length;
    // Copied by the structured clone: the caller's buffer stays its own (the journal keeps it).
    this.worker.post({ op: 'write', id: this.id, data });
  }

  resize(cols: number, rows: number): void {
    checkTerminalSize(cols, rows);
    if (this.disposed || this.broken) return;
    this.worker.post({ op: 'resize', id: this.id, cols, rows });
  }

  snapshot(withScrollback = true): Promise<ScreenSnapshot> {
    if (this.disposed) return Promise.reject(new Error('the screen was disposed: the command has ended'));
    if (this.brokenWhy) return Promise.reject(new Error(this.brokenWhy));
    const req = this.nextReq++;
    return new Promise((resolve, reject) => {
      this.snapshots.set(req, { resolve, reject });
      this.worker.post({ op: 'snapshot', id: this.id, req, withScrollback });
    });
  }

  drained(below: number): Promise<void> {
    return this.unparsed.wait(below);
  }

  /** @internal From the worker. */
  parsed(bytes: number): void {
    this.pending = Math.max(0, this.pending - bytes);
    this.unparsed.check();
  }

  /** @internal From the worker. */
  answered(req: number, snapshot: ScreenSnapshot | undefined, error: string | undefined): void {
    const p = this.snapshots.get(req);
    if (!p) return;
    this.snapshots.delete(req);
    if (!snapshot) return p.reject(new Error(error ?? 'no snapshot'));
    // The structured clone made the Buffer a plain Uint8Array.
    const screen = snapshot.screen as Uint8Array;
    p.resolve({ ...snapshot, screen: Buffer.from(screen.buffer, screen.byteOffset, screen.byteLength) });
  }

  /** @internal The worker is gone. */
  break(why: string): void {
    this.brokenWhy = why;
    this.settle(why);
  }

  private settle(why: string): void {
    for (const p of this.snapshots.values()) p.reject(new Error(why));
    this.snapshots.clear();
    this.unparsed.release();
    this.unparsed.check();
    this.pending = 0;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.settle('the screen was disposed: the command has ended');
    if (!this.broken) this.worker.post({ op: 'dispose', id: this.id });
    this.worker.closed(this.id);
  }
}

/**
 * Starts the shared screen worker now if it is not running (it takes ~50–250 ms of CPU to start and
 * load the emulator): called when a client that will want screens subscribes, so that the first
 * command's flood is not parsed by a thread still starting. True when the thread runs (false where
 * screens run inline: no worker script).
 */
export function warmScreenWorker(): boolean {
  const w = sharedWorker();
  w?.warm();
  return w?.running ?? false;
}

/** Whether the shared screen worker's thread is running (it is stopped after a while without screens). */
export function screenWorkerRunning(): boolean {
  return shared?.running ?? false;
}

/**
 * A screen for a command: on the shared worker thread when its script is there and `inline` is not
 * asked for, else on this thread.
 */
export function openScreen(opts: CommandScreenOptions, where: 'worker' | 'inline' = 'worker'): ScreenHandle {
  const worker = where === 'worker' ? sharedWorker() : undefined;
  if (worker) return new RemoteScreen(worker, opts);
  return new CommandScreen(opts);
}
