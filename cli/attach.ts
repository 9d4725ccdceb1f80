// `astra attach <session> [--observe | --take]`: a live terminal on one session (DESIGN.md §6, §9).
// It replays the history, then streams. The controller types command lines and answers approvals;
// observers watch and can take control (unless attached with --observe: read-only). Keys:
//   Enter      start a turn with the typed line (controller, idle)
//   y / n      answer an approval prompt (controller)
//   Ctrl-C     cancel the running turn; again (or with nothing running and an empty line) detach
//   Ctrl-D     detach (on an empty line, also while a turn runs: it keeps running)
//   Ctrl-T     take control (takeover; refused with --observe)
//   Ctrl-U     clear the line;  Ctrl-L  redraw
// Over 400 lines on purpose: one terminal's state (control, turn, approval, input, leaving) is one
// class with one owner of each piece; the status line (attach-status.ts), key decoding
// (attach-keys.ts) and the screen (attach-view.ts) are apart. Issue 17's terminal work will split
// the key handling further when commands get a pseudo-terminal.
import { AstraError, isAstraError, type Session, type SessionEvent } from '../protocol/index.js';
import type { AstraClient, ApprovalRequest } from '../client/index.js';
import { decodeKeys, type Key } from './attach-keys.js';
import { statusFooter } from './attach-status.js';
import { AttachView, type Footer } from './attach-view.js';
import { renderEvent } from './event-render.js';
import { paint } from './output.js';
import { connectClient, describeHolder, holderOf, mostRecentSession, resolveSession, sessionLabel, type HolderLike } from './session-util.js';

export interface AttachOptions {
  observe?: boolean;
  take?: boolean;
}

export interface AttachIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
}

const CLIENT_NAME = 'astra attach';
const HINT_EVERY_MS = 3_000;

interface PendingApproval {
  request: ApprovalRequest;
  promise: Promise<'approve' | 'deny'>;
  resolve: (d: 'approve' | 'deny') => void;
  reject: (e: AstraError) => void;
}

/** Runs the attach view until the user detaches; resolves with the exit code. */
export async function attach(sessionArg: string | undefined, opts: AttachOptions, io: AttachIo): Promise<number> {
  if (opts.observe && opts.take) throw new AstraError('invalid_params', '--observe and --take contradict each other; pick one');
  const client = await connectClient(io.env, CLIENT_NAME, {
    // A terminal left open should ride out a long daemon outage.
    reconnect: { initialDelayMs: 100, maxDelayMs: 5_000, maxElapsedMs: 15 * 60_000 },
  });
  let session: Session;
  try {
    // Like `tmux attach`: no id means the most recently active session, named so nobody is surprised.
    session = sessionArg === undefined ? await mostRecentSession(client) : await resolveSession(client, sessionArg);
    if (sessionArg === undefined) io.stdout.write(`astra: attaching to the most recent session, ${sessionLabel(session)}\n`);
  } catch (e) {
    await client.close();
    throw e;
  }
  const a = new Attach(client, session, opts, io);
  return a.run();
}

class Attach {
  private readonly view: AttachView;
  private readonly id: string;
  private title: string;
  private controller: HolderLike | null = null;
  private controllerGraceUntil: number | undefined;
  /** Why this terminal lost control; shown only while it is still the current state. */
  private leaseNote: string | undefined;
  /** Who took control from this terminal (the note holds while they keep it). */
  private takenBy: HolderLike | undefined;
  /** Control was taken from this terminal on purpose: it does not grab it back by itself. */
  private displaced = false;
  /** Turns whose command was denied: the engine ends them as `cancelled`. */
  private readonly deniedTurns = new Set<string>();
  /** Approvals printed while this terminal only watched: if control comes here, say it is ours now. */
  private readonly watchedApprovals = new Set<string>();
  private runningTurnId: string | undefined;
  private cancelRequested = false;
  private connection: 'connected' | 'reconnecting' | 'stopped' = 'connected';
  private approval: PendingApproval | undefined;
  private input = '';
  private live = false;
  private lastHintAt = 0;
  private finished: ((code: number) => void) | undefined;
  private ending = false;
  /** The daemon was stopped on purpose; Enter starts it again, Ctrl-D leaves. */
  private daemonStopped = false;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    private readonly client: AstraClient,
    session: Session,
    private readonly opts: AttachOptions,
    private readonly io: AttachIo,
  ) {
    const tty = Boolean(io.stdout.isTTY);
    const color = tty && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
    this.view = new AttachView(io.stdout, tty, color);
    this.id = session.id;
    this.title = session.title;
    this.runningTurnId = session.runningTurnId;
    if (session.controller) {
      this.controller = { clientName: session.controller.clientName, connectionId: session.controller.connectionId, ...(session.controller.pid !== undefined ? { pid: session.controller.pid } : {}) };
      this.controllerGraceUntil = session.controller.graceUntil;
    }
  }

  private get isController(): boolean {
    return this.client.heldLeases.has(this.id);
  }

  async run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.finished = resolve));
    this.wireClient();
    this.watchTerminal();
    // The handler goes in before acquiring: a grant re-offers pending approvals at once.
    this.cleanups.push(this.client.onApproval((req) => this.onApprovalRequest(req)));
    if (!this.opts.observe) await this.tryAcquire(Boolean(this.opts.take), true);
    else this.notice(`observing ${this.id} read-only (--observe); Ctrl-D detaches`);
    this.refresh();
    try {
      await this.client.subscribe(this.id, {
        sinceSeq: 0,
        onEvent: (e) => this.onEvent(e),
        onReplayed: () => {
          if (!this.live) this.view.line(paint(this.view.color, 'dim', '── live ──'));
          this.live = true;
          this.refresh();
        },
        onEnd: (err) => {
          if (err) void this.end(1, [`astra: the event stream ended: ${err.message}`]);
        },
      });
    } catch (e) {
      await this.end(1, [`astra: could not watch ${this.id}: ${e instanceof Error ? e.message : String(e)}`]);
      return done;
    }
    this.startInput();
    return done;
  }

  // ---- the client and the session ----

  private wireClient(): void {
    const c = this.client;
    this.cleanups.push(
      c.on('disconnected', ({ daemonShuttingDown }) => {
        this.connection = 'reconnecting';
        this.notice(`connection to the daemon lost${daemonShuttingDown ? ' (it is shutting down)' : ''}; reconnecting…`, 'yellow');
        this.refresh();
      }),
      // daemonRestarted comes just before reconnected, which says it in the same line.
      c.on('reconnected', ({ daemonRestarted, daemonPid }) => {
        this.connection = 'connected';
        this.notice(`reconnected${daemonRestarted ? ` to a restarted daemon (pid ${daemonPid})` : ''}${this.isController ? '; still the controller' : ''}`, 'green');
        this.refresh();
      }),
      c.on('leaseLost', ({ sessionId, reason, holder }) => {
        if (sessionId !== this.id) return;
        const newHolder = holder ?? this.controller ?? undefined;
        const by = reason === 'takeover' && newHolder ? ` by ${describeHolder(newHolder)}` : '';
        this.leaseNote = reason === 'takeover' ? `taken over${by}` : `lost (${reason})`;
        this.takenBy = reason === 'takeover' ? newHolder : undefined;
        if (reason === 'takeover') this.displaced = true;
        this.dropApproval(new AstraError('not_controller', 'control was lost'));
        this.notice(`control ${this.leaseNote}; now observing — Ctrl-T takes it back`, 'yellow');
        this.refresh();
      }),
      // A deliberate stop stays a stop: the client does not respawn the daemon; this terminal asks.
      c.on('stopped', () => {
        this.daemonStopped = true;
        this.connection = 'stopped';
        this.notice('the daemon was stopped (astra daemon stop); press Enter to start it and reattach, or Ctrl-D to leave', 'yellow');
        this.refresh();
      }),
      c.on('error', (e) => {
        if (c.state === 'closed') void this.end(1, [`astra: ${e.message}`]);
      }),
    );
  }

  private async tryAcquire(takeover: boolean, initial: boolean): Promise<void> {
    try {
      await this.client.acquireController(this.id, { takeover });
      this.leaseNote = undefined;
      this.displaced = false;
      if (!initial || takeover) this.notice(takeover ? `you took control of ${this.id}` : `you control ${this.id}`, 'green');
    } catch (e) {
      if (isAstraError(e, 'lease_held')) {
        const h = holderOf(e);
        if (h) this.controller = h;
        if (typeof e.data.graceUntil === 'number') this.controllerGraceUntil = e.data.graceUntil;
        this.leaseNote = undefined;
        this.notice(`${describeHolder(h)} controls ${this.id}; observing — press Ctrl-T (or attach with --take) to take control`, 'yellow');
      } else if (e instanceof AstraError || e instanceof Error) {
        this.notice(`could not take control: ${e.message}`, 'red');
      }
    }
    this.refresh();
  }

  private onEvent(event: SessionEvent): void {
    const previousHolder = this.controller;
    switch (event.type) {
      case 'session.created':
        this.title = event.data.title;
        break;
      case 'session.updated':
        if (event.data.title !== undefined) this.title = event.data.title;
        break;
      case 'turn.started':
        this.runningTurnId = event.data.turnId;
        this.cancelRequested = false;
        break;
      case 'turn.completed':
        if (this.runningTurnId === event.data.turnId) this.runningTurnId = undefined;
        this.cancelRequested = false;
        // A turn cancelled while it waited for approval takes its question with it.
        if (this.approval?.request.turnId === event.data.turnId) this.dropApproval(new AstraError('not_found', 'the turn ended'));
        break;
      case 'lease.changed':
        this.controller = event.data.holder;
        this.controllerGraceUntil = event.data.reason === 'grace' ? event.data.graceUntil : undefined;
        // History replayed is not news: only a change now can make this terminal act.
        if (this.live) this.onControlChanged(event.data.holder);
        break;
      case 'approval.resolved':
        // A withdrawn request (turn cancelled, daemon restarted) is a deny without anyone's name.
        if (event.data.decision === 'deny' && event.data.by) this.deniedTurns.add(event.data.turnId);
        if (this.approval?.request.approvalId === event.data.approvalId) this.dropApproval(new AstraError('not_found', 'the approval was resolved elsewhere'));
        break;
    }
    for (const r of renderEvent(event, this.view.color, { deniedTurns: this.deniedTurns, previousHolder })) {
      // An approval is printed once: observers are told who must answer; the controller's prompt is the footer.
      if (event.type === 'approval.requested' && this.live && !this.isController && r.kind === 'line') {
        this.watchedApprovals.add(event.data.approvalId);
        this.view.line(`${r.text}${paint(this.view.color, 'dim', ` — waiting for ${describeHolder(this.controller)} to answer`)}`);
      }
      else if (r.kind === 'line') this.view.line(r.text);
      else this.view.output(r.stream === 'stderr' && this.view.color ? paint(true, 'red', r.text) : r.text);
    }
    this.refresh();
  }

  /** Control moved (live): drop a note that no longer holds; take control when it is free and wanted. */
  private onControlChanged(holder: HolderLike | null): void {
    if (this.isController) return;
    const stillTaker = holder && this.takenBy?.connectionId !== undefined && holder.connectionId === this.takenBy.connectionId;
    if (this.leaseNote && !stillTaker) {
      this.leaseNote = undefined;
      this.takenBy = undefined;
    }
    if (holder || this.ending) return;
    if (this.opts.observe) return;
    // Someone took control from this terminal on purpose (`astra take` frees it for the next user):
    // grabbing it back unasked would undo that. A terminal that wanted control from the start takes it.
    if (this.displaced) {
      this.notice('control is free — press Ctrl-T to take it');
      return;
    }
    void this.tryAcquire(false, false);
  }

  // ---- approvals ----

  private onApprovalRequest(request: ApprovalRequest): Promise<'approve' | 'deny'> {
    if (request.sessionId !== this.id) return Promise.reject(new AstraError('not_found', 'this terminal only answers for its own session'));
    if (this.approval?.request.approvalId === request.approvalId) return this.approval.promise;
    this.dropApproval(new AstraError('invalid_state', 'a newer approval request replaced this one'));
    let resolve!: (d: 'approve' | 'deny') => void;
    let reject!: (e: AstraError) => void;
    const promise = new Promise<'approve' | 'deny'>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.approval = { request, promise, resolve, reject };
    // The request itself is printed from the event stream; without a footer the prompt needs a line,
    // and one printed as someone else's question needs saying that it is ours now.
    if (!this.view.tty) this.view.line(`approve \`${request.command}\`? press y or n`);
    else if (this.watchedApprovals.has(request.approvalId)) this.notice(`you control ${this.id} now: the approval of \`${request.command}\` is yours to answer (y or n)`, 'yellow');
    this.refresh();
    return promise;
  }

  private answerApproval(decision: 'approve' | 'deny'): void {
    const a = this.approval;
    if (!a) return;
    this.approval = undefined;
    a.resolve(decision);
    this.refresh();
  }

  private dropApproval(err: AstraError): void {
    const a = this.approval;
    if (!a) return;
    this.approval = undefined;
    a.reject(err);
    this.refresh();
  }

  // ---- turns ----

  private async startTurn(text: string): Promise<void> {
    try {
      // A dropped connection mid-call is resolved by the client (mutation/status, same key).
      await this.client.startTurn(this.id, text);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (isAstraError(e, 'turn_in_progress')) this.notice('a turn is already running: wait for it, or press Ctrl-C to cancel it', 'yellow');
      else this.notice(`could not start the turn: ${msg}`, 'red');
      this.input = this.input || text;
      this.refresh();
    }
  }

  /** Enter after a deliberate stop: start a daemon, reattach, and take control again if this terminal had it. */
  private async restartStoppedDaemon(): Promise<void> {
    this.daemonStopped = false;
    this.connection = 'reconnecting';
    const wasController = this.isController;
    this.notice('starting the daemon…', 'yellow');
    this.refresh();
    try {
      await this.client.resume({ timeoutMs: 30_000 });
    } catch (e) {
      await this.end(1, [`astra: could not start the daemon again: ${e instanceof Error ? e.message : String(e)}`]);
      return;
    }
    this.connection = 'connected';
    this.refresh();
    // A lease the new daemon could not reclaim was reported lost: ask for control as attaching does.
    if (wasController && !this.isController && !this.opts.observe) await this.tryAcquire(false, false);
  }

  private async cancelTurn(): Promise<void> {
    this.cancelRequested = true;
    this.notice('cancelling the turn… (Ctrl-C again detaches; the turn then keeps going until it stops)', 'yellow');
    this.refresh();
    try {
      await this.client.turn.cancel({ sessionId: this.id, ...(this.runningTurnId ? { turnId: this.runningTurnId } : {}) });
    } catch (e) {
      this.notice(`could not cancel: ${e instanceof Error ? e.message : String(e)}`, 'red');
    }
  }

  // ---- keys ----

  private startInput(): void {
    const stdin = this.io.stdin;
    if (stdin.isTTY) {
      stdin.setRawMode(true);
      this.cleanups.push(() => {
        try {
          stdin.setRawMode(false);
        } catch {
          // the terminal is gone
        }
      });
    } else {
      // Without raw mode the terminal (or the parent) turns Ctrl-C into SIGINT.
      // Kept until exit, for the reason watchTerminal gives; after leaving, onKey does nothing.
      process.on('SIGINT', () => this.onKey('ctrl-c'));
    }
    const onData = (d: Buffer | string) => this.onData(typeof d === 'string' ? d : d.toString('utf8'));
    const onEnd = () => void this.detach('end of input');
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
    this.cleanups.push(() => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    });
  }

  /**
   * Leaving by signal or a vanished terminal. SIGHUP (the window was closed) is a normal way to
   * leave, like Ctrl-D: control is released at once rather than held for the grace period. Then
   * the terminal is gone, so nothing more is written to it (a write would fail with EIO).
   */
  private watchTerminal(): void {
    const onTerm = () => void this.detach('received SIGTERM');
    const onHup = () => void this.detach('the terminal closed (SIGHUP)', true);
    const onGone = (e: NodeJS.ErrnoException) => {
      if (e.code === 'EIO' || e.code === 'EPIPE' || e.code === 'ENXIO') void this.detach(`the terminal went away (${e.code})`, true);
    };
    process.on('SIGTERM', onTerm);
    process.on('SIGHUP', onHup);
    this.io.stdout.on('error', onGone);
    this.io.stdin.on('error', onGone);
    // These handlers stay until the process exits (detach runs once: later calls do nothing). The
    // error handlers: late errors of a closed terminal must not crash a process on its way out. The
    // signal handlers: proper-lockfile (loaded when this process started the daemon) brings
    // signal-exit, which re-raises a signal that no other listener takes — removing ours at the start
    // of leaving would let a SIGHUP kill the process before it released control.
  }

  private onData(text: string): void {
    for (const k of decodeKeys(text)) {
      if (k.length === 1) this.onChar(k);
      else this.onKey(k as Key);
    }
  }

  private onChar(ch: string): void {
    if (this.ending) return;
    if (this.approval && this.isController) {
      if (ch === 'y' || ch === 'Y') this.answerApproval('approve');
      else if (ch === 'n' || ch === 'N') this.answerApproval('deny');
      else this.hint('answer the approval first: y approves, n denies', true);
      return;
    }
    if (!this.isController) {
      this.observerHint(false);
      return;
    }
    this.input += ch;
    this.refresh();
  }

  private onKey(key: Key): void {
    if (this.ending) return;
    if (this.daemonStopped) {
      if (key === 'enter') void this.restartStoppedDaemon();
      else if (key === 'ctrl-d' || key === 'ctrl-c') void this.detach(key === 'ctrl-d' ? 'Ctrl-D' : 'Ctrl-C');
      return;
    }
    switch (key) {
      case 'enter': {
        if (!this.isController) {
          // The hint for the typing just before this Enter is enough.
          this.observerHint(Date.now() - this.lastHintAt > 500);
          return;
        }
        if (this.approval) {
          this.hint('answer the approval first: y approves, n denies', true);
          return;
        }
        const text = this.input.trim();
        if (!text) return;
        if (this.runningTurnId) {
          this.hint('a turn is running: wait for it, or press Ctrl-C to cancel it', true);
          return;
        }
        this.input = '';
        this.refresh();
        void this.startTurn(text);
        return;
      }
      case 'backspace':
        this.input = [...this.input].slice(0, -1).join('');
        this.refresh();
        return;
      case 'ctrl-u':
        this.input = '';
        this.refresh();
        return;
      case 'ctrl-l':
        this.view.redraw();
        return;
      case 'ctrl-t':
        if (this.opts.observe) {
          this.hint(`this terminal is read-only (--observe); to control the session, detach and run \`astra attach ${this.id}\``, true);
          return;
        }
        if (this.isController) {
          this.hint('you already control this session', true);
          return;
        }
        void this.tryAcquire(true, false);
        return;
      case 'ctrl-d':
        if (this.input) {
          this.hint('Ctrl-D detaches on an empty line (Ctrl-U clears it)', true);
          return;
        }
        void this.detach('Ctrl-D');
        return;
      case 'ctrl-c':
        if (this.isController && this.runningTurnId && !this.cancelRequested) {
          void this.cancelTurn();
          return;
        }
        if (this.input) {
          this.input = '';
          this.refresh();
          return;
        }
        void this.detach('Ctrl-C');
        return;
    }
  }

  private observerHint(always: boolean): void {
    if (this.opts.observe) {
      this.hint(`this terminal is read-only (--observe): typing is ignored; \`astra attach ${this.id}\` in another terminal controls the session`, always);
      return;
    }
    this.hint(`you are observing (${describeHolder(this.controller)} controls this session): press Ctrl-T to take control, or attach with --take`, always);
  }

  private hint(text: string, always: boolean): void {
    const now = Date.now();
    if (!always && now - this.lastHintAt < HINT_EVERY_MS) return;
    this.lastHintAt = now;
    this.notice(text, 'yellow');
  }

  // ---- output ----

  private notice(text: string, colour: 'green' | 'yellow' | 'red' | 'cyan' = 'cyan'): void {
    this.view.line(paint(this.view.color, colour, `astra: ${text}`));
  }

  private refresh(): void {
    this.view.setFooter(this.footer());
  }

  private footer(): Footer {
    const me = this.isController;
    return statusFooter(
      {
        id: this.id,
        title: this.title,
        me,
        readOnly: Boolean(this.opts.observe),
        controller: this.controller,
        controllerGraceUntil: this.controllerGraceUntil,
        leaseNote: this.leaseNote,
        takenBy: this.takenBy,
        turn: this.approval ? 'approval needed' : this.runningTurnId ? (this.cancelRequested ? 'cancelling' : 'turn running') : 'idle',
        connection: this.connection === 'connected' ? (this.live ? 'live' : 'replaying') : this.connection,
        approvalAsked: Boolean(this.approval && me),
        input: me && !this.approval ? this.input : '',
      },
      this.view.color,
    );
  }

  // ---- leaving ----

  private async detach(why: string, terminalGone = false): Promise<void> {
    if (this.ending) return;
    const running = this.runningTurnId;
    const lines = [
      paint(this.view.color, 'dim', `astra: detached from ${this.id} (${why})${running ? '; the turn keeps running' : ''} — \`astra attach ${this.id}\` to come back`),
    ];
    await this.end(0, lines, terminalGone);
  }

  private async end(code: number, lines: string[], terminalGone = false): Promise<void> {
    if (this.ending) return;
    this.ending = true;
    for (const c of this.cleanups.splice(0)) c();
    this.dropApproval(new AstraError('not_controller', 'the terminal detached'));
    if (terminalGone) this.view.abandon();
    else this.view.close(lines);
    try {
      // Releasing (not just disconnecting) leaves the turn running and control free at once.
      await this.client.close({ releaseLeases: true });
    } catch {
      // closing anyway
    }
    this.finished?.(code);
  }
}
