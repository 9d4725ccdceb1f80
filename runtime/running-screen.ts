// RunningScreen: the one owner of a session's command screen — the CommandScreen (pty/screen.ts)
// of the command running in a pseudo-terminal now, if any. The session host hands it every event as
// it is appended: command.started with tty: true creates the screen at the session's terminal size;
// each command.output feeds it the same bytes, noting their seq; command.completed, turn.completed
// and the host's close dispose it. command/resize reaches it through the host (after the terminal
// took the size). A subscription made with `screen: true` captures it: the screen exactly as the
// output through `atSeq` left it.
//
// The emulator parses on a worker thread where the built package has its script
// (pty/remote-screen.ts), else on the event loop, in slices. So that a flood neither blocks the
// daemon nor grows its memory, the screen is `full` once HIGH_MARK bytes wait to be parsed: the engine
// is held (EngineContext.emit answers false) and its drained() waits for the parser too, as a real
// terminal holds back a program writing faster than it draws. Past GIVE_UP
// (an engine that ignores backpressure) the screen is given up: subscribers then get the command's
// output as events, as without `screen`.
import type { EventType } from '../protocol/index.js';
import type { RuntimeLogger } from './logger.js';
import { openScreen, warmScreenWorker, type ScreenHandle } from '../pty/remote-screen.js';
import { DAEMON_BOUNDS } from '../flow/index.js';

/** Bytes waiting for the emulator at which the engine is held (flow/daemon-bounds.ts screenHighMark). */
const HIGH_MARK = DAEMON_BOUNDS.screenHighMark.value;
/** Bytes waiting for the emulator past which the screen is given up (screenGiveUp). */
const GIVE_UP = DAEMON_BOUNDS.screenGiveUp.value;
/** The scrollback text sent with a screen is cut to about this many bytes (the frame limit is 8 MiB). */
const MAX_SCROLLBACK_CHARS = 2 * 1024 * 1024;

/** A running command's screen as captured for one subscription (the wire's session/screen, less sessionId). */
export interface ScreenCapture {
  turnId: string;
  /** The command's command.started: the output it stands for is the turn's command.output in (fromSeq, atSeq]. */
  fromSeq: number;
  atSeq: number;
  cols: number;
  rows: number;
  data: Buffer;
  scrollback: string;
  alternate: boolean;
}

interface Current {
  turnId: string;
  fromSeq: number;
  /** The seq of the last command.output written to the screen (fromSeq before any). */
  atSeq: number;
  /** Counts resizes: a capture taken before one is not the screen after it, at the same atSeq. */
  sizeGen: number;
  screen: ScreenHandle;
  /**
   * The last capture asked for: another subscriber asking for the same screen (same atSeq, size and
   * scrollback) shares it — two attached clients getting frames of a flood take one snapshot a frame.
   */
  last?: { atSeq: number; sizeGen: number; withScrollback: boolean; capture: Promise<ScreenCapture | undefined> };
}

export class RunningScreen {
  private current: Current | undefined;
  /**
   * The screen the last command left, for subscribers that were behind when it ended: they catch
   * up with it instead of every byte they missed (see SubscriptionFeed). Until the next command.
   */
  private finished: Promise<ScreenCapture | undefined> | undefined;

  constructor(
    private readonly sessionId: string,
    private readonly logger: RuntimeLogger,
    /** true: on the screen worker thread where it can run (remote-screen.ts); 'inline': on this thread; false: no screens. */
    private readonly enabled: boolean | 'inline',
    /** Some subscriber may catch up with a screen (one made with `screen: true`): the last command's screen is then kept. */
    private readonly catchUpWanted: () => boolean = () => true,
  ) {}

  /** Every appended event but command.output (see output). */
  onEvent(type: EventType, seq: number, data: { turnId?: string; tty?: boolean }, size: { cols: number; rows: number }): void {
    if (type === 'command.started') {
      this.dispose();
      this.finished = undefined;
      if (this.enabled === false || data.tty !== true || data.turnId === undefined) return;
      try {
        this.current = { turnId: data.turnId, fromSeq: seq, atSeq: seq, sizeGen: 0, screen: openScreen(size, this.enabled === 'inline' ? 'inline' : 'worker') };
      } catch (e) {
        this.logger.warn({ sessionId: this.sessionId, err: (e as Error).message }, 'no screen for this command; subscribers get its output as events');
      }
    } else if (type === 'command.completed' || type === 'turn.completed') this.finish();
  }

  /** The command ended: its last screen is kept (without scrollback) for subscribers still catching up, if any may. */
  private finish(): void {
    const c = this.current;
    if (!c) return;
    if (!this.catchUpWanted()) {
      this.dispose();
      return;
    }
    const last = this.capture(false);
    this.current = undefined;
    this.finished = last.catch(() => undefined);
    void this.finished.finally(() => c.screen.dispose());
  }

  /** For a subscriber catching up (no scrollback): the running command's screen, or the one the last command left. */
  captureCatchUp(): Promise<ScreenCapture | undefined> {
    return this.current ? this.capture(false) : (this.finished ?? Promise.resolve(undefined));
  }

  /** A command.output as it is appended. */
  output(seq: number, turnId: string, data: Uint8Array): void {
    const c = this.current;
    if (!c || c.turnId !== turnId) return;
    c.screen.write(data);
    c.atSeq = seq;
    if (c.screen.broken) {
      this.logger.warn({ sessionId: this.sessionId, turnId }, 'the command screen was lost (its worker stopped); subscribers get the output as events');
      this.dispose();
    } else if (c.screen.pendingBytes > GIVE_UP) {
      this.logger.warn({ sessionId: this.sessionId, turnId, pendingBytes: c.screen.pendingBytes }, 'the command screen fell too far behind its output; given up (subscribers get the output as events)');
      this.dispose();
    }
  }

  /** The running command's terminal took a new size. */
  resize(turnId: string, cols: number, rows: number): void {
    const c = this.current;
    if (c && c.turnId === turnId) {
      c.screen.resize(cols, rows);
      c.sizeGen++;
    }
  }

  /** A subscriber that will want screens came: the screen worker is started now rather than at the first command (see warmScreenWorker). */
  prepare(): void {
    if (this.enabled === true) warmScreenWorker();
  }

  /** A command with a screen is running. */
  get running(): boolean {
    return this.current !== undefined;
  }

  /** As much output waits for the emulator as it may: the engine is held. */
  get full(): boolean {
    return (this.current?.screen.pendingBytes ?? 0) >= HIGH_MARK;
  }

  /** Resolves once the emulator is below the high mark (at once without a screen). */
  drained(): Promise<void> {
    return this.current ? this.current.screen.drained(HIGH_MARK) : Promise.resolve();
  }

  /**
   * The running command's screen through the last output appended so far; undefined without one (or
   * if it ends first). `withScrollback: false`: scrollback '' (a catch-up sends none).
   */
  capture(withScrollback = true): Promise<ScreenCapture | undefined> {
    const c = this.current;
    if (!c) return Promise.resolve(undefined);
    const l = c.last;
    if (l && l.atSeq === c.atSeq && l.sizeGen === c.sizeGen && l.withScrollback === withScrollback) return l.capture;
    const capture = this.take(c, withScrollback);
    c.last = { atSeq: c.atSeq, sizeGen: c.sizeGen, withScrollback, capture };
    return capture;
  }

  private async take(c: Current, withScrollback: boolean): Promise<ScreenCapture | undefined> {
    const atSeq = c.atSeq;
    let snap;
    try {
      snap = await c.screen.snapshot(withScrollback);
    } catch {
      // Disposed meanwhile (the command ended: its output is all in events), or lost with its worker.
      if (this.current === c && c.screen.broken) this.dispose();
      return undefined;
    }
    let scrollback = snap.scrollback.join('\n');
    if (scrollback.length > MAX_SCROLLBACK_CHARS) {
      const cut = scrollback.indexOf('\n', scrollback.length - MAX_SCROLLBACK_CHARS);
      scrollback = cut === -1 ? '' : scrollback.slice(cut + 1);
    }
    return { turnId: c.turnId, fromSeq: c.fromSeq, atSeq, cols: snap.cols, rows: snap.rows, data: snap.screen, scrollback, alternate: snap.alternate };
  }

  dispose(): void {
    const c = this.current;
    this.current = undefined;
    c?.screen.dispose();
  }
}
