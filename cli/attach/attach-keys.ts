// What each key does in `astra attach`. The bytes of the user's terminal (raw mode) go first
// through the prefix router (attach-input.ts), then:
// - a command runs in a pseudo-terminal: the controller's bytes go to it, every key (Ctrl-C too);
//   an observer's typing is refused with a hint (Ctrl-T takes control, Ctrl-D detaches);
// - otherwise the controller edits the input line (LineEditor: arrows, Home/End, Ctrl-A/E/W/K/U,
//   history, bracketed paste as one input) and Enter starts a turn; an approval takes y or n;
//   observers get a hint.
// The prefix key's commands (cancel, detach, take, redraw) work in every state.
import { KeyRouter, type PrefixKey } from './attach-input.js';
import { LineEditor } from '../view/line-editor.js';

/** The keys of line mode (observers, approvals, a stopped daemon): printable characters, or a named key. */
export type Key = 'enter' | 'backspace' | 'ctrl-c' | 'ctrl-d' | 'ctrl-t' | 'ctrl-u' | 'ctrl-l';

const CONTROL: Record<string, Key> = { '\x7f': 'backspace', '\b': 'backspace', '\x03': 'ctrl-c', '\x04': 'ctrl-d', '\x14': 'ctrl-t', '\x15': 'ctrl-u', '\x0c': 'ctrl-l' };

/** Splits terminal input into printable characters (length 1) and keys; escape sequences are dropped. */
export function decodeKeys(text: string): (Key | string)[] {
  const keys: (Key | string)[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\x1b') {
      // An escape sequence (arrows, function keys, a mouse report): skip it whole.
      const next = text[i + 1];
      if (next === '[' || next === 'O') {
        i += 2;
        while (i < text.length && !/[@-~]/.test(text[i]!)) i++;
      }
      continue;
    }
    if (ch === '\r' || ch === '\n') {
      // "\r\n" from a pasted line is one Enter.
      if (ch === '\r' && text[i + 1] === '\n') i++;
      keys.push('enter');
    } else if (CONTROL[ch]) keys.push(CONTROL[ch]);
    else if (ch.charCodeAt(0) >= 0x20) keys.push(ch);
  }
  return keys;
}

/** What the keys act on: the attach view's state and actions. */
export interface KeyHost {
  readonly ending: boolean;
  readonly isController: boolean;
  readonly readOnly: boolean;
  readonly daemonStopped: boolean;
  /** This terminal is asked to answer an approval. */
  readonly approvalAsked: boolean;
  readonly runningTurnId: string | undefined;
  readonly cancelRequested: boolean;
  /** The turn whose command runs in a pseudo-terminal and has the screen. */
  readonly screenTurnId: string | undefined;
  sendToProgram(turnId: string, data: Buffer): void;
  /** y/n, or an agent's option by number (false: no such option). */
  answerApproval(choice: 'approve' | 'deny' | number): boolean;
  /** A key typed just after the approval prompt vanished: true when it was a late answer, swallowed and explained. */
  lateApprovalKey(text: string): boolean;
  startTurn(text: string): void;
  cancelTurn(): void;
  take(): void;
  detach(why: string): void;
  restartDaemon(): void;
  redraw(): void;
  hint(text: string, always: boolean): void;
  observerHint(always: boolean): void;
  /** The prefix state or the input line changed: draw the status again. */
  refresh(): void;
}

export class AttachKeys {
  readonly router: KeyRouter;
  readonly editor = new LineEditor();
  private lastHintAt = 0;
  private escapeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly host: KeyHost,
    prefix: PrefixKey,
  ) {
    this.router = new KeyRouter(prefix);
  }

  get prefix(): PrefixKey {
    return this.router.prefix;
  }

  /** Bytes from the user's terminal. */
  feed(chunk: Buffer): void {
    for (const r of this.router.feed(chunk)) {
      if (this.host.ending) return;
      switch (r.type) {
        case 'data':
          this.onData(r.data);
          break;
        case 'prefix':
          this.host.refresh();
          break;
        case 'command':
          this.onPrefixCommand(r.command);
          break;
        case 'unknown':
          // Escape leaves prefix mode quietly; another key says what the prefix is for.
          if (r.key === 'Escape') this.host.refresh();
          else this.host.hint(`${r.key} after ${this.prefix.name} does nothing: c cancels the turn, d detaches, t takes control, ${this.prefix.name} sends ${this.prefix.name}`, true);
          break;
      }
    }
  }

  /** The Enter key of a refused turn: the text goes back in the line to edit. */
  restoreInput(text: string): void {
    if (!this.editor.value) this.editor.setValue(text);
  }

  private onPrefixCommand(command: 'cancel' | 'detach' | 'take' | 'redraw' | 'help'): void {
    const h = this.host;
    const p = this.prefix.name;
    switch (command) {
      case 'cancel':
        if (!h.isController) h.observerHint(true);
        else if (!h.runningTurnId) h.hint('no turn is running', true);
        else h.cancelTurn();
        break;
      case 'detach':
        h.detach(`${p} d`);
        break;
      case 'take':
        h.take();
        break;
      case 'redraw':
        h.redraw();
        break;
      case 'help':
        h.hint(`${p} then: c cancel the turn · d detach · t take control · l redraw · ${p} send ${p} itself`, true);
        break;
    }
    h.refresh();
  }

  private onData(data: Buffer): void {
    const h = this.host;
    const screenTurn = h.screenTurnId;
    if (screenTurn !== undefined && h.isController && !h.daemonStopped) {
      h.sendToProgram(screenTurn, data);
      return;
    }
    const text = data.toString('utf8');
    if (h.daemonStopped) {
      for (const k of decodeKeys(text)) {
        if (k === 'enter') h.restartDaemon();
        else if (k === 'ctrl-d' || k === 'ctrl-c') h.detach(k === 'ctrl-d' ? 'Ctrl-D' : 'Ctrl-C');
      }
      return;
    }
    if (!h.isController || h.approvalAsked) {
      for (const k of decodeKeys(text)) this.lineKey(k);
      return;
    }
    // A y or n meant for a prompt that just vanished (expired, answered elsewhere) is not typed in.
    if (!this.editor.value && h.lateApprovalKey(text)) return;
    this.edit(data);
  }

  /** Keys of a terminal that does not edit: an observer, or the controller asked to approve. */
  private lineKey(k: Key | string): void {
    const h = this.host;
    if (h.ending) return;
    if (h.approvalAsked && h.isController) {
      if (k === 'y' || k === 'Y') h.answerApproval('approve');
      else if (k === 'n' || k === 'N') h.answerApproval('deny');
      else if (typeof k === 'string' && /^[1-9]$/.test(k) && h.answerApproval(Number(k))) return;
      else if (k === 'ctrl-c') h.cancelTurn();
      else if (k === 'ctrl-d') h.detach('Ctrl-D');
      else if (k === 'ctrl-l') h.redraw();
      else h.hint('answer the approval first: y approves, n denies (an agent\'s options: their number)', true);
      return;
    }
    switch (k) {
      case 'ctrl-t':
        h.take();
        return;
      case 'ctrl-d':
      case 'ctrl-c':
        h.detach(k === 'ctrl-d' ? 'Ctrl-D' : 'Ctrl-C');
        return;
      case 'ctrl-l':
        h.redraw();
        return;
      case 'enter':
        // The hint for the typing just before this Enter is enough.
        h.observerHint(Date.now() - this.lastHintAt > 500);
        this.lastHintAt = Date.now();
        return;
      default:
        h.observerHint(false);
        this.lastHintAt = Date.now();
    }
  }

  /** The controller's input line. */
  private edit(data: Buffer): void {
    const h = this.host;
    for (const a of this.editor.feed(data)) {
      if (h.ending) return;
      if (a.type === 'change') continue;
      if (a.type === 'submit') {
        const text = a.text.trim();
        if (!text) continue;
        if (h.runningTurnId) {
          this.editor.setValue(a.text);
          h.hint(`a turn is running: wait for it, or press Ctrl-C (or ${this.prefix.name} c) to cancel it`, true);
          continue;
        }
        h.startTurn(text);
        continue;
      }
      switch (a.key) {
        case 'ctrl-c':
          if (h.runningTurnId && !h.cancelRequested) h.cancelTurn();
          else if (this.editor.value) this.editor.setValue('');
          else h.detach('Ctrl-C');
          break;
        case 'ctrl-d':
          h.detach('Ctrl-D');
          break;
        case 'ctrl-t':
          h.hint('you already control this session', true);
          break;
        case 'ctrl-l':
          h.redraw();
          break;
        default:
          break; // Tab, Escape, function keys: nothing to do in a command line
      }
    }
    if (this.escapeTimer) clearTimeout(this.escapeTimer);
    // A lone Escape is held as the start of a sequence; after a pause it is just Escape.
    this.escapeTimer = setTimeout(() => this.editor.flushEscape(), 50);
    this.escapeTimer.unref();
    h.refresh();
  }
}
