// The screen of one running command, kept by a headless terminal emulator fed the same bytes as the
// journal, so a client attaching mid-command can be shown the current screen (then live bytes)
// instead of a replay of every byte since the command began. One per running command; the owner
// resizes it whenever the pseudo-terminal is resized, and disposes it when the command ends.
//
// The emulator parses asynchronously, in slices of the event loop. Everything that must happen at an
// exact point of the byte stream goes through its write queue: a resize applies after the bytes
// written before it, and a snapshot is taken (synchronously) in the queue's callback right after
// the last byte written before it was parsed, so it shows exactly those bytes. `pendingBytes` says
// how far parsing is behind; the owner holds the program back past a limit (drained).
//
// Holding: while the emulator has bytes it has not parsed, later writes (and the resizes and
// snapshots asked for after them) wait here, in order; when its queue is empty the held bytes up to
// the first held resize or snapshot go to it in one write, then that resize or snapshot — at once
// when one of those waits or the bytes are 64 KiB or more, else after up to 16 ms more (nothing
// shows the emulator's state but a snapshot). With nothing pending a write goes straight through. A
// large held run (a flood) may lose the part that can never be on the final screen nor in its
// scrollback — exactly, see unseen-output.ts — when the emulator's state allows it (skipState): its
// bytes count as parsed at once.
import { createRequire } from 'node:module';
import type { Terminal as XtermTerminal } from '@xterm/headless';
import type { SerializeAddon as XtermSerializeAddon } from '@xterm/addon-serialize';
import { checkTerminalSize } from './size.js';
import { useFastLineCopy } from './xterm-line-copy.js';
import { unseenPart } from './unseen-output.js';
import { DAEMON_BOUNDS, Level } from '../flow/index.js';

// Both packages are CommonJS; createRequire keeps their classes typed without an interop default.
const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');
const { SerializeAddon } = requireCjs('@xterm/addon-serialize') as typeof import('@xterm/addon-serialize');

export const DEFAULT_SCROLLBACK_LINES = 1000;

interface XtermInternals {
  coreService?: { isCursorHidden?: boolean; decPrivateModes?: { reverseWraparound?: boolean } };
  buffer?: { scrollTop?: number; scrollBottom?: number };
  _inputHandler?: { _parser?: { currentState?: number }; _utf8Decoder?: { interim?: Uint8Array } };
}

/**
 * Held output shorter than this is fed whole, once it has waited HOLD_MS for more. Measured in the
 * daemon: without the wait, the worker kept up with `seq` in runs of a few KiB and skipped almost
 * nothing (~350 ms of parse for its 16.9 MB, as before).
 */
export const DEFAULT_SKIP_AT_LEAST = 64 * 1024;
const HOLD_MS = DAEMON_BOUNDS.screenHoldMs.value;

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
  /** Told each time a write's bytes have been parsed (the screen's worker reports it to the daemon). */
  onParsed?: (bytes: number) => void;
  /** Held output at least this long may lose what cannot be seen (default 64 KiB; tests use less). */
  skipAtLeast?: number;
}

type HeldOp = () => void;

export class CommandScreen {
  private readonly term: XtermTerminal;
  private readonly serializer: XtermSerializeAddon;
  private readonly scrollbackLines: number;
  private disposed = false;
  /** The size as of the last resize call (the emulator takes it once the bytes before it are parsed). */
  private size: { cols: number; rows: number };
  /** Bytes written (held or in the emulator) and not parsed yet. */
  private pending = 0;
  /** Writes given to the emulator (bytes, or the empty write of a resize or snapshot) whose callback has not run. */
  private inEmulator = 0;
  /** What waits for the emulator's queue to empty, in order: output, and resizes and snapshots. */
  private held: (Uint8Array | HeldOp)[] = [];
  private readonly skipAtLeast: number;
  private skipped = 0;
  private heldBytes = 0;
  /** Resizes and snapshots in `held`. */
  private heldOps = 0;
  /** Set while short held output waits for more (release). */
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The level of pendingBytes, for drained(below). */
  private readonly unparsed = new Level(() => this.pending);
  /** Snapshots asked for and not taken yet: refused if the screen is disposed first. */
  private readonly snapshotWaiters = new Set<(e: Error) => void>();
  private readonly onParsed: ((bytes: number) => void) | undefined;

  constructor(opts: CommandScreenOptions) {
    this.onParsed = opts.onParsed;
    this.skipAtLeast = opts.skipAtLeast ?? DEFAULT_SKIP_AT_LEAST;
    checkTerminalSize(opts.cols, opts.rows);
    this.scrollbackLines = opts.scrollbackLines ?? DEFAULT_SCROLLBACK_LINES;
    this.term = new Terminal({ cols: opts.cols, rows: opts.rows, scrollback: this.scrollbackLines, allowProposedApi: true });
    useFastLineCopy(this.term);
    this.serializer = new SerializeAddon();
    this.term.loadAddon(this.serializer);
    this.size = { cols: opts.cols, rows: opts.rows };
  }

  get cols(): number {
    return this.size.cols;
  }

  get rows(): number {
    return this.size.rows;
  }

  /** Never: a screen on this thread cannot lose its emulator (a RemoteScreen can, see remote-screen.ts). */
  get broken(): boolean {
    return false;
  }

  /** Bytes written and not parsed yet (held ones included). */
  get pendingBytes(): number {
    return this.pending;
  }

  /** Output bytes never parsed because they could not be seen (see unseen-output.ts). */
  get skippedBytes(): number {
    return this.skipped;
  }

  /** Feeds output bytes (parsed asynchronously; snapshot() shows exactly what was written before it). */
  write(data: Uint8Array): void {
    if (this.disposed || data.length === 0) return;
    this.pending += data.length;
    if (this.inEmulator === 0 && this.held.length === 0) {
      this.feed(data, data.length);
      return;
    }
    this.held.push(data);
    this.heldBytes += data.length;
    if (this.inEmulator === 0) this.release();
  }

  /** Gives bytes to the emulator; `counts` of them are told parsed when it has parsed them. */
  private feed(data: Uint8Array, counts: number): void {
    this.inEmulator++;
    this.term.write(data, () => {
      this.inEmulator--;
      this.parsed(counts);
      this.release();
    });
  }

  /** Runs `op` in the emulator's queue after every byte written before it. */
  private inOrder(op: HeldOp): void {
    if (this.inEmulator === 0 && this.held.length === 0) {
      this.queue(op);
      return;
    }
    this.held.push(op);
    this.heldOps++;
    if (this.inEmulator === 0) this.release();
  }

  private queue(op: HeldOp): void {
    this.inEmulator++;
    this.term.write('', () => {
      this.inEmulator--;
      op();
      this.release();
    });
  }

  /**
   * The emulator's queue is empty: the held bytes up to the first held op go in one write, then that
   * op. Held bytes shorter than `skipAtLeast` with no op behind them wait up to HOLD_MS for more (a
   * longer run can lose more; the emulator's state is seen only through snapshots, which go at once).
   */
  private release(waited = false): void {
    if (this.inEmulator > 0 || this.disposed || this.held.length === 0) return;
    if (!waited && this.heldOps === 0 && this.heldBytes < this.skipAtLeast) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.release(true);
      }, HOLD_MS);
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let i = 0;
    while (i < this.held.length && typeof this.held[i] !== 'function') i++;
    const chunks = this.held.splice(0, i) as Uint8Array[];
    const op = this.held.length > 0 ? (this.held.shift() as HeldOp) : undefined;
    if (op) this.heldOps--;
    for (const c of chunks) this.heldBytes -= c.length;
    if (chunks.length > 0) this.flush(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    if (op) this.queue(op);
  }

  /** Feeds held output, without the part that cannot be seen when there is one (the emulator's queue is empty here). */
  private flush(h: Uint8Array): void {
    const cut = h.length >= this.skipAtLeast && this.skipState() ? unseenPart(h, this.scrollbackLines + 2 * this.term.rows + 1) : undefined;
    if (!cut) {
      this.feed(h, h.length);
      return;
    }
    const out = new Uint8Array(cut.from + 1 + (h.length - cut.to));
    out.set(h.subarray(0, cut.from), 0);
    out[cut.from] = 0x0d;
    out.set(h.subarray(cut.to), cut.from + 1);
    const dropped = cut.to - cut.from;
    this.skipped += dropped;
    this.parsed(dropped);
    this.feed(out, h.length - dropped);
  }

  /**
   * True when the emulator's state lets output be skipped (unseen-output.ts says why each matters):
   * its parser in the ground state (not inside an escape sequence or an OSC string), no UTF-8 C1
   * half-read, the scroll region the whole screen, reverse wraparound off. Read from its internals:
   * should they not be there, nothing is skipped.
   */
  private skipState(): boolean {
    const core = this.internals();
    const parser = core?._inputHandler?._parser;
    const interim = core?._inputHandler?._utf8Decoder?.interim;
    const modes = core?.coreService?.decPrivateModes;
    return (
      parser?.currentState === 0 &&
      interim instanceof Uint8Array &&
      interim[0] !== 0xc2 &&
      modes?.reverseWraparound === false &&
      core?.buffer?.scrollTop === 0 &&
      core.buffer.scrollBottom === this.term.rows - 1
    );
  }

  private parsed(n: number): void {
    this.pending -= n;
    this.onParsed?.(n);
    this.unparsed.check();
  }

  /** Resolves once fewer than `below` written bytes wait to be parsed (or the screen is disposed). */
  drained(below: number): Promise<void> {
    return this.unparsed.wait(below);
  }

  /** Applies after the bytes written before it (the program drew those at the old size). */
  resize(cols: number, rows: number): void {
    checkTerminalSize(cols, rows);
    if (this.disposed) return;
    this.size = { cols, rows };
    this.inOrder(() => {
      if (!this.disposed) this.term.resize(cols, rows);
    });
  }

  /**
   * The screen as the bytes written before this call left it (later writes are not in it).
   * `withScrollback: false`: `scrollback` is empty (a catch-up frame sends none; walking 1,000 rows costs).
   */
  snapshot(withScrollback = true): Promise<ScreenSnapshot> {
    if (this.disposed) return Promise.reject(new Error('the screen was disposed: the command has ended'));
    // An empty write's callback runs right after every earlier byte was parsed and before any later
    // one is: the capture is synchronous there.
    return new Promise<ScreenSnapshot>((resolve, reject) => {
      this.snapshotWaiters.add(reject);
      this.inOrder(() => {
        this.snapshotWaiters.delete(reject);
        if (this.disposed) reject(new Error('the screen was disposed: the command has ended'));
        else resolve(this.capture(withScrollback));
      });
    });
  }

  private capture(withScrollback: boolean): ScreenSnapshot {
    const active = this.term.buffer.active;
    const text: string[] = [];
    for (let y = 0; y < this.term.rows; y++) text.push(active.getLine(active.viewportY + y)?.translateToString(true) ?? '');
    const m = this.term.modes;
    return {
      cols: this.term.cols,
      rows: this.term.rows,
      screen: Buffer.from(this.serializer.serialize({ scrollback: 0 }) + this.extraState(), 'utf8'),
      scrollback: withScrollback ? this.scrollbackText() : [],
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
    this.held = [];
    if (this.timer) clearTimeout(this.timer);
    this.unparsed.release();
    this.unparsed.check();
    for (const reject of this.snapshotWaiters) reject(new Error('the screen was disposed: the command has ended'));
    this.snapshotWaiters.clear();
    this.term.dispose();
  }
}
