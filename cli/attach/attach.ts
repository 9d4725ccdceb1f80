// `astra attach <session> [--observe | --take] [--prefix KEY]`: a live terminal on one session
// (docs/terminal.md). It shows the recent history, then streams. A command that
// runs in a pseudo-terminal gets the screen: its bytes go to this terminal raw (title changes and
// the like filtered out) above a status line kept on the last row, and the controller's keys go to
// it — every key, Ctrl-C included. The prefix key (Ctrl-] by default; ASTRA_PREFIX_KEY or --prefix)
// then a key is Astra's:
//   Ctrl-] c  cancel the turn      Ctrl-] d  detach      Ctrl-] t  take control
//   Ctrl-] l  redraw the status    Ctrl-] ?  show these  Ctrl-] Ctrl-]  send Ctrl-] itself
// With no such command running (idle, a chat answer, a command on pipes) the controller edits the
// input line (arrows, Home/End, Ctrl-A/E/W/K/U, history, a bracketed paste is one input):
//   Enter    start a turn with the line        y / n   answer an approval prompt
//   Ctrl-C   cancel the running turn; again (or on an empty idle line) detach
//   Ctrl-D   detach on an empty line (a running turn keeps running)      Ctrl-L  redraw
// Observers see everything live and read-only; their typing is refused with a hint; Ctrl-T (or
// Ctrl-] t) takes control unless attached with --observe. The user's terminal is put back
// (restoreSequence) when a command ends, on detach, on SIGTERM/SIGHUP, on a crash and at exit.
// The parts, one concern a file: docs/architecture.md lists them (cli/attach-*.ts).
// This file: one terminal's state, its events and its leaving.
import { AstraError, isAstraError, type Session, type SessionEvent } from '../../protocol/index.js';
import type { AstraClient, SubscribeOptions } from '../../client/index.js';
import { AttachChat } from './attach-chat.js';
import { ApprovalClock, lateKeyMsFrom } from './attach-approval.js';
import { AttachConnection } from './attach-connection.js';
import { AttachControl } from './attach-control.js';
import { AttachLeaseFile, terminalName } from './attach-resume.js';
import { DEFAULT_PREFIX_KEY, parsePrefixKey } from './attach-input.js';
import { ProgramTerminal } from './attach-program.js';
import { AttachKeys, type KeyHost } from './attach-keys.js';
import { screenStatus, statusFooter } from './attach-status.js';
import { UserTerminal } from './attach-terminal.js';
import { AttachView } from './attach-view.js';
import { renderEvent } from '../event-render.js';
import { paint } from '../output.js';
import { connectClient, describeHolder, mostRecentSession, resolveSession, sessionLabel } from '../session-util.js';

export interface AttachOptions {
  observe?: boolean;
  take?: boolean;
  /** The prefix key, e.g. "C-]" (default: ASTRA_PREFIX_KEY, else Ctrl-]). */
  prefix?: string;
}

export interface AttachIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
}

const CLIENT_NAME = 'astra attach';
const HINT_EVERY_MS = 3_000;
/** How long a hint stays in the status line while a command has the screen. */
const NOTE_MS = 4_000;
/** Lines of finished turns' output shown on attach; `astra log ID` prints the rest. */
const HISTORY_LINES = 1_000;

/** Runs the attach view until the user detaches; resolves with the exit code. */
export async function attach(sessionArg: string | undefined, opts: AttachOptions, io: AttachIo): Promise<number> {
  if (opts.observe && opts.take) throw new AstraError('invalid_params', '--observe and --take contradict each other; pick one');
  const prefix = parsePrefixKey(opts.prefix ?? io.env.ASTRA_PREFIX_KEY ?? DEFAULT_PREFIX_KEY);
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
  return new Attach(client, session, opts, io, prefix).run();
}

class Attach implements KeyHost {
  readonly view: AttachView;
  /** The chat answer streaming into the view, laid out as markdown. */
  private readonly chat: AttachChat;
  readonly id: string;
  private title: string;
  readonly control: AttachControl;
  private readonly keys: AttachKeys;
  private readonly program: ProgramTerminal;
  private readonly terminal: UserTerminal;
  runningTurnId: string | undefined;
  cancelRequested = false;
  private readonly connection: AttachConnection;
  private live = false;
  private historyNoted = false;
  private sawEvent = false;
  private lastHintAt = 0;
  private note: { text: string; timer: NodeJS.Timeout } | undefined;
  private finished: ((code: number) => void) | undefined;
  ending = false;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    readonly client: AstraClient,
    session: Session,
    readonly opts: AttachOptions,
    private readonly io: AttachIo,
    prefix: ReturnType<typeof parsePrefixKey>,
  ) {
    const tty = Boolean(io.stdout.isTTY);
    const color = tty && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
    this.view = new AttachView(io.stdout, tty, color, () => {
      this.program.sendSize();
      this.refresh();
    });
    this.chat = new AttachChat(this.view);
    this.id = session.id;
    this.title = session.title;
    this.runningTurnId = session.runningTurnId;
    const leaseFile = new AttachLeaseFile(io.env, session.id, terminalName(io.stdin), (text) => this.notice(text, 'yellow'));
    const clock = new ApprovalClock({ refresh: () => this.refresh(), lateKeyMs: lateKeyMsFrom(io.env) });
    this.control = new AttachControl(this, session, leaseFile, clock);
    this.connection = new AttachConnection(this, io.env);
    this.keys = new AttachKeys(this, prefix);
    this.terminal = new UserTerminal(io, {
      data: (d) => this.keys.feed(d),
      end: () => this.detach('end of input'),
      term: () => this.detach('received SIGTERM'),
      hangup: () => this.detach('the terminal closed (SIGHUP)', true),
      gone: (code) => this.detach(`the terminal went away (${code})`, true),
      emergencyBytes: () => this.view.emergencyBytes(),
    });
    this.program = new ProgramTerminal(this);
  }

  /** The daemon was stopped on purpose; Enter starts it again, Ctrl-D leaves. */
  get daemonStopped(): boolean {
    return this.connection.daemonStopped;
  }

  get isController(): boolean {
    return this.client.heldLeases.has(this.id);
  }

  get readOnly(): boolean {
    return Boolean(this.opts.observe);
  }

  get approvalAsked(): boolean {
    return this.control.approvalAsked;
  }

  isLive(): boolean {
    return this.live;
  }

  get screenTurnId(): string | undefined {
    return this.program.turnId;
  }

  async run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.finished = resolve));
    this.cleanups.push(this.connection.wire());
    this.terminal.watch();
    this.cleanups.push(() => this.terminal.stop());
    // The handler goes in before acquiring: a grant re-offers pending approvals at once.
    this.cleanups.push(this.client.onApproval((req) => this.control.onApprovalRequest(req)), this.client.on('approvalResolved', (r) => this.control.onApprovalResolved(r)));
    if (!this.opts.observe) await this.control.tryAcquire(Boolean(this.opts.take), true);
    else this.notice(`observing ${this.id} read-only (--observe); Ctrl-D detaches`);
    this.refresh();
    const sub: SubscribeOptions = {
      screen: true,
      historyLines: HISTORY_LINES,
      onEvent: (e) => this.onEvent(e),
      onScreen: (s) => {
        this.program.snapshot(s);
        this.refresh();
      },
      onReplayed: (_through, info) => {
        if (info.historyFromSeq !== undefined) this.noteHistory();
        if (!this.live && !this.view.screenMode) this.view.line(paint(this.view.color, 'dim', '── live ──'));
        this.live = true;
        this.program.sendSize();
        this.refresh();
      },
      onEnd: (err) => {
        if (err) void this.end(1, [`astra: the event stream ended: ${err.message}`]);
      },
    };
    try {
      await this.client.subscribe(this.id, sub);
    } catch (e) {
      await this.end(1, [`astra: could not watch ${this.id}: ${e instanceof Error ? e.message : String(e)}`]);
      return done;
    }
    this.terminal.startInput();
    this.view.startInput();
    return done;
  }

  // ---- the session's events ----

  private onEvent(event: SessionEvent): void {
    // A backlog that does not start at the session's beginning was cut to the recent history.
    if (!this.sawEvent && event.seq > 1) this.noteHistory();
    this.sawEvent = true;
    const previousHolder = this.control.controller;
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
        // The daemon keeps the size for the turn's command: sent before it starts, it starts right.
        this.program.sendSize();
        break;
      case 'command.output':
        if (this.program.output(event.data.turnId, event.data.data)) return;
        break;
      case 'command.completed':
        if (this.program.turnId === event.data.turnId) this.program.ended(event.data.turnId);
        else this.view.commandEnded();
        break;
      case 'turn.completed':
        this.program.ended(event.data.turnId);
        if (this.runningTurnId === event.data.turnId) this.runningTurnId = undefined;
        this.cancelRequested = false;
        break;
    }
    this.control.onEvent(event);
    if (this.chat.onEvent(event)) return this.refresh();
    for (const r of renderEvent(event, this.view.color, { deniedTurns: this.control.deniedTurns, previousHolder, toolTitles: this.chat.toolTitles })) {
      // An approval is printed once: observers are told who must answer; the controller's prompt is the footer.
      if (event.type === 'approval.requested' && this.live && !this.isController && r.kind === 'line') {
        this.control.watchedApprovals.add(event.data.approvalId);
        this.view.line(`${r.text}${paint(this.view.color, 'dim', ` — waiting for ${describeHolder(this.control.controller)} to answer`)}`);
      } else if (r.kind === 'line') this.view.line(r.text);
      else if (event.type !== 'message.completed') this.view.output(r.stream === 'stderr' && this.view.color ? paint(true, 'red', r.text) : r.text);
    }
    if (event.type === 'command.started' && event.data.tty) this.program.started(event.data.turnId, event.data.command, event.data);
    this.refresh();
  }

  /** The program gave the screen back. */
  left(): void {
    this.keys.router.disarm();
  }

  private noteHistory(): void {
    if (this.historyNoted) return;
    this.historyNoted = true;
    this.view.line(paint(this.view.color, 'dim', `astra: earlier history is not shown here: \`astra log ${this.id}\` prints all of it`));
  }

  sendToProgram(turnId: string, data: Buffer): void {
    this.program.write(turnId, data);
  }

  // ---- turns ----

  startTurn(text: string): void {
    // A dropped connection mid-call is resolved by the client (mutation/status, same key).
    // The turn's command starts at this terminal's size (less the status row), not 80×24.
    const terminal = this.view.tty ? this.view.programSize() : undefined;
    this.client.startTurn(this.id, text, terminal ? { terminal } : {}).catch((e: unknown) => {
      const msg = e instanceof Error ? e.message : String(e);
      if (isAstraError(e, 'turn_in_progress')) this.notice('a turn is already running: wait for it, or press Ctrl-C to cancel it', 'yellow');
      else this.notice(`could not start the turn: ${msg}`, 'red');
      this.keys.restoreInput(text);
      this.refresh();
    });
  }

  /** Enter after a deliberate stop: start a daemon, reattach, and take control again if this terminal had it. */
  restartDaemon(): void {
    this.connection.restartDaemon();
  }

  cancelTurn(): void {
    this.cancelRequested = true;
    this.notice(`cancelling the turn… (${this.program.turnId ? `${this.keys.prefix.name} d` : 'Ctrl-C again'} detaches; the turn then keeps going until it stops)`, 'yellow');
    this.refresh();
    this.client.turn.cancel({ sessionId: this.id, ...(this.runningTurnId ? { turnId: this.runningTurnId } : {}) }).catch((e: unknown) => {
      this.notice(`could not cancel: ${e instanceof Error ? e.message : String(e)}`, 'red');
    });
  }

  take(): void {
    if (this.opts.observe) this.hint(`this terminal is read-only (--observe); to control the session, detach and run \`astra attach ${this.id}\``, true);
    else if (this.isController) this.hint('you already control this session', true);
    else void this.control.tryAcquire(true, false).then(() => this.program.sendSize());
  }

  answerApproval(choice: 'approve' | 'deny' | number): boolean {
    return this.control.answerApproval(choice);
  }

  lateApprovalKey(text: string): boolean {
    const why = this.control.clock.lateKey(text);
    if (why === undefined) return false;
    this.notice(`${why}: that ${text} was not sent, nor typed into the input line`, 'yellow');
    return true;
  }

  redraw(): void {
    this.view.redraw();
    this.refresh();
  }

  // ---- hints ----

  observerHint(always: boolean): void {
    if (this.opts.observe) {
      this.hint(`this terminal is read-only (--observe): typing is ignored; \`astra attach ${this.id}\` in another terminal controls the session`, always);
      return;
    }
    this.hint(`you are observing (${describeHolder(this.control.controller)} controls this session): press Ctrl-T to take control, or attach with --take`, always);
  }

  hint(text: string, always: boolean): void {
    const now = Date.now();
    if (!always && now - this.lastHintAt < HINT_EVERY_MS) return;
    this.lastHintAt = now;
    this.notice(text, 'yellow', true);
  }

  // ---- output ----

  /** A line of information; while a command has the screen it shows in the status line for a while. */
  notice(text: string, colour: 'green' | 'yellow' | 'red' | 'cyan' = 'cyan', transient = false): void {
    if (this.view.screenMode) {
      if (this.note) clearTimeout(this.note.timer);
      const timer = setTimeout(() => {
        this.note = undefined;
        this.refresh();
      }, NOTE_MS);
      timer.unref();
      this.note = { text: `astra: ${text}`, timer };
      this.refresh();
      // A hint is for now; news (control moved, reconnected) goes in the history after the command.
      if (transient) return;
    }
    this.view.line(paint(this.view.color, colour, `astra: ${text}`));
  }

  refresh(): void {
    const me = this.isController;
    const approvalAsked = this.control.approvalAsked;
    const state = {
      id: this.id,
      title: this.title,
      me,
      readOnly: Boolean(this.opts.observe),
      ...this.control.statusState(),
      turn: this.control.approvalPending ? 'approval needed' : this.runningTurnId ? (this.cancelRequested ? 'cancelling' : 'turn running') : 'idle',
      connection: this.connection.state === 'connected' ? (this.live ? 'live' : 'replaying') : this.connection.state,
      diskFull: this.connection.diskFull,
      approvalAsked,
      input: '',
      editor: me && !approvalAsked && !this.daemonStopped ? this.keys.editor : undefined,
      prefixArmed: this.keys.router.prefixArmed ? this.keys.prefix.name : undefined,
    } as const;
    const command = this.program.command;
    if (this.view.screenMode && command !== undefined) {
      const s = screenStatus({ ...state, prefix: this.keys.prefix.name, prefixArmed: this.keys.router.prefixArmed, note: this.note?.text, command });
      this.view.setScreenStatus(s.text, s.colour);
    }
    this.view.setFooter(statusFooter(state, this.view.color));
  }

  // ---- leaving ----

  detach(why: string, terminalGone = false): void {
    if (this.ending) return;
    const running = this.runningTurnId;
    const lines = [
      paint(this.view.color, 'dim', `astra: detached from ${this.id} (${why})${running ? '; the turn keeps running' : ''} — \`astra attach ${this.id}\` to come back`),
    ];
    void this.end(0, lines, terminalGone);
  }

  async end(code: number, lines: string[], terminalGone = false): Promise<void> {
    if (this.ending) return;
    this.ending = true;
    if (this.note) clearTimeout(this.note.timer);
    for (const c of this.cleanups.splice(0)) c();
    this.control.dropApproval(new AstraError('not_controller', 'the terminal detached'));
    if (terminalGone) this.view.abandon();
    else this.view.close(lines);
    const lease = this.client.heldLeases.get(this.id);
    try {
      // Releasing (not just disconnecting) leaves the turn running and control free at once.
      await this.client.close({ releaseLeases: true });
    } catch {
      // closing anyway
    }
    // Not released (the daemon could not be reached): the token stays, so a re-run reclaims control.
    this.control.forgetLease(!lease || lease.lost === 'released');
    this.finished?.(code);
  }
}
