// The running program's terminal, from `astra attach`'s side: which turn's command has the screen
// (a command.started with tty, or a screen snapshot of one attached to mid-way), its bytes to the
// view, the controller's keys to it (InputSender), and its size — the controller's terminal less
// the status row, sent with command/resize when a turn starts, when its command starts, when the
// terminal is resized and when this terminal takes control.
import type { AstraClient, ScreenSnapshot } from '../../client/index.js';
import { isAstraError } from '../../protocol/index.js';
import { InputSender } from './attach-input.js';
import type { AttachView } from './attach-view.js';

export interface ProgramHost {
  readonly client: AstraClient;
  readonly id: string;
  readonly view: AttachView;
  readonly isController: boolean;
  readonly runningTurnId: string | undefined;
  isLive(): boolean;
  hint(text: string, always: boolean): void;
  /** The program gave the screen back (the prefix key's state goes with it). */
  left(): void;
}

export class ProgramTerminal {
  /** The command that runs in a pseudo-terminal and has the screen. */
  private current: { turnId: string; command: string } | undefined;
  private readonly sender: InputSender;

  constructor(private readonly host: ProgramHost) {
    this.sender = new InputSender({
      send: async (turnId, data) => {
        await host.client.command.input({ sessionId: host.id, turnId, data });
      },
      refused: (e) => {
        // A turn that ended meanwhile takes the keys typed after it: nothing to say.
        if (isAstraError(e, 'not_controller') || isAstraError(e, 'stale_epoch')) host.hint('your keys were not sent: this terminal no longer controls the session', true);
      },
    });
  }

  get turnId(): string | undefined {
    return this.current?.turnId;
  }

  get command(): string | undefined {
    return this.current?.command;
  }

  /** A command of `turnId` got a pseudo-terminal (of `size`, when the daemon says): it takes the screen. */
  started(turnId: string, command: string, size?: { cols?: number | undefined; rows?: number | undefined }): void {
    this.current = { turnId, command };
    this.host.view.enterScreen(size?.cols !== undefined && size.rows !== undefined ? { cols: size.cols, rows: size.rows } : undefined);
    this.sendSize();
  }

  /** Output of a turn: true when it was this program's (and went to the screen). */
  output(turnId: string, data: Uint8Array): boolean {
    if (this.current?.turnId !== turnId) return false;
    this.host.view.screenOutput(data);
    return true;
  }

  /** The current screen of the command running when this terminal attached (then its live bytes). */
  snapshot(s: ScreenSnapshot): void {
    if (this.current?.turnId !== s.turnId) this.started(s.turnId, this.current?.command ?? '');
    this.host.view.screenSnapshot(s);
  }

  /** The turn's command (or the turn) ended: the screen goes back to lines. */
  ended(turnId: string): void {
    if (this.current?.turnId !== turnId) return;
    this.current = undefined;
    this.sender.clear();
    this.host.view.leaveScreen();
    this.host.left();
  }

  /** The controller's key bytes. */
  write(turnId: string, data: Buffer): void {
    this.sender.write(turnId, data);
  }

  /** The controller tells the daemon its size (less the status row) for the running turn's command. */
  sendSize(): void {
    const h = this.host;
    const turnId = this.current?.turnId ?? h.runningTurnId;
    if (!h.isLive() || !h.isController || !turnId || !h.view.tty) return;
    const { cols, rows } = h.view.programSize();
    // The copy of the program's screen takes the size at once (the daemon's screen at it follows).
    h.view.programResized({ cols, rows });
    h.client.command.resize({ sessionId: h.id, turnId, cols, rows }).catch(() => {
      // The turn ended meanwhile, or control moved: the next command gets the size then.
    });
  }
}
