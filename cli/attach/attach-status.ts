// The status texts of `astra attach` from its state: the two footer lines (idle, line output) and the
// one status line on the last row while a command has the screen. What is happening and which keys
// act come first, names last, so a narrow window cuts the least useful part. Widths are columns.
import type { Footer } from './attach-view.js';
import { cleanText, paint } from '../output.js';
import { fitWidth } from '../view/width.js';
import { describeHolder, type HolderLike } from '../session-util.js';

export interface StatusState {
  id: string;
  title: string;
  /** This terminal controls the session. */
  me: boolean;
  /** Attached with --observe. */
  readOnly: boolean;
  controller: HolderLike | null;
  controllerGraceUntil: number | undefined;
  /** How this terminal lost control, while that is still the state ("taken over by X", "lost (expired)"). */
  leaseNote: string | undefined;
  takenBy: HolderLike | undefined;
  turn: 'approval needed' | 'cancelling' | 'turn running' | 'idle';
  /** `stopped`: the daemon was stopped on purpose (astra daemon stop); nothing reconnects until the user says so. */
  connection: 'live' | 'replaying' | 'reconnecting' | 'stopped';
  /** The session's journal cannot be written (a full disk): its path, until the daemon says it is written again. */
  diskFull?: string | undefined;
  /** This terminal is asked to answer an approval. */
  approvalAsked: boolean;
  /** The time left to answer it ("45s left"), when it has a deadline. */
  approvalLeft?: string | undefined;
  /** The agent's options of the approval (acp): picked by number. */
  approvalOptions?: number | undefined;
  input: string;
  /** The input line being edited (the controller, idle). */
  editor?: Footer['editor'];
  /** The prefix key was pressed (its name): the next key is Astra's. */
  prefixArmed?: string | undefined;
}

/** The status line's part while the session's journal cannot be written (the notice line says the rest). */
function diskFullStatus(path: string): string {
  return `disk full: free space on ${path}`;
}

export function statusFooter(s: StatusState, color: boolean): Footer {
  let role: string;
  let detail = '';
  let colour: Footer['statusColour'];
  if (s.me) {
    role = 'you control this session';
    colour = 'green';
  } else {
    role = s.readOnly ? 'observing (read-only)' : 'observing';
    const who = s.controller ? describeHolder(s.controller) : undefined;
    const grace = s.controllerGraceUntil !== undefined ? ` (disconnected; reserved until ${new Date(s.controllerGraceUntil).toLocaleTimeString()})` : '';
    if (s.leaseNote && s.takenBy) detail = `control ${s.leaseNote}${grace}`;
    else if (s.leaseNote) detail = `control ${s.leaseNote}; ${who ? `controlled by ${who}${grace}` : 'no controller now'}`;
    else detail = who ? `controlled by ${who}${grace}` : 'no controller';
    colour = s.leaseNote ? 'yellow' : 'cyan';
  }
  const conn =
    s.connection === 'reconnecting' ? ' │ reconnecting…' : s.connection === 'stopped' ? ' │ daemon stopped' : s.connection === 'replaying' ? ' │ replaying…' : '';
  if (s.connection === 'reconnecting' || s.connection === 'stopped') colour = 'red';
  const disk = s.diskFull !== undefined ? ` │ ${diskFullStatus(s.diskFull)}` : '';
  if (disk) colour = 'red';
  let keys: string;
  if (s.connection === 'stopped') keys = 'Enter restart · Ctrl-D leave';
  else if (s.me) keys = s.approvalAsked ? `${s.approvalOptions ? `1-${s.approvalOptions} pick · ` : ''}y approve · n deny` : s.turn === 'turn running' || s.turn === 'cancelling' ? 'Ctrl-C cancel · Ctrl-D detach' : 'Ctrl-D detach';
  else keys = s.readOnly ? 'Ctrl-D detach' : 'Ctrl-T take · Ctrl-D detach';
  if (s.prefixArmed) keys = `${s.prefixArmed} pressed: c cancel · d detach · t take · Esc back`;
  const title = fitWidth(cleanText(s.title), 24);
  const status = ` ${role} │ ${s.turn}${conn}${disk} │ ${keys}${detail ? ` │ ${detail}` : ''} │ ${s.id}${title ? ` "${title}"` : ''}`;
  let promptPrefix: string;
  if (s.approvalAsked) promptPrefix = paint(color, 'yellow', `approve the command above?${s.approvalLeft ? ` (${s.approvalLeft})` : ''} [${s.approvalOptions ? `1-${s.approvalOptions}/` : ''}y/n] `);
  else if (s.me) promptPrefix = paint(color, 'bold', '❯ ');
  else promptPrefix = paint(color, 'dim', s.readOnly ? '(read-only) ' : '(observing) ');
  return { status, statusColour: colour, promptPrefix, input: s.input, editor: s.editor };
}

export interface ScreenStatusState extends Omit<StatusState, 'prefixArmed'> {
  /** The prefix key's name ("Ctrl-]"). */
  prefix: string;
  /** The prefix was pressed: the next key is Astra's. */
  prefixArmed: boolean | undefined;
  /** A hint or notice shown for a while instead of the keys (typing refused, control taken). */
  note: string | undefined;
  command: string;
}

/** The one status line while a command runs in a pseudo-terminal and its bytes have the screen. */
export function screenStatus(s: ScreenStatusState): { text: string; colour: Footer['statusColour'] } {
  const f = statusFooter({ ...s, input: '', prefixArmed: undefined }, false);
  const p = s.prefix;
  let keys: string;
  if (s.prefixArmed) keys = `${p} pressed: c cancel · d detach · t take · ${p} sends ${p} · Esc back`;
  else if (s.connection === 'stopped') keys = `daemon stopped · ${p} d leave`;
  else if (s.me) keys = `keys go to the program · ${p} c cancel · ${p} d detach · ${p} ? keys`;
  else keys = s.readOnly ? `read-only · ${p} d detach` : `${p} t (or Ctrl-T) take · ${p} d detach`;
  const role = s.me ? 'you control' : s.readOnly ? 'observing (read-only)' : 'observing';
  const conn = `${s.connection === 'reconnecting' ? ' │ reconnecting…' : s.connection === 'replaying' ? ' │ replaying…' : ''}${s.diskFull !== undefined ? ` │ ${diskFullStatus(s.diskFull)}` : ''}`;
  const who = s.me ? '' : ` │ ${f.status.split(' │ ').find((x) => x.startsWith('controlled by') || x.startsWith('control ') || x === 'no controller') ?? ''}`;
  const cmd = fitWidth(cleanText(s.command), 30);
  const title = fitWidth(cleanText(s.title), 24);
  const head = s.note ? `${s.note} │ ` : '';
  const text = ` ${head}${role} │ ${s.turn === 'cancelling' ? 'cancelling' : `running ${cmd}`}${conn} │ ${keys}${who === ' │ ' ? '' : who} │ ${s.id}${title ? ` "${title}"` : ''}`;
  const colour = s.prefixArmed ? 'yellow' : s.diskFull !== undefined ? 'red' : s.note ? 'yellow' : f.statusColour;
  return { text, colour };
}
