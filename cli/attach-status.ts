// The two footer lines of `astra attach` from its state: what is happening and which keys act come
// first, names last, so a narrow window cuts the least useful part.
import type { Footer } from './attach-view.js';
import { cleanText, paint } from './output.js';
import { describeHolder, type HolderLike } from './session-util.js';

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
  /** This terminal is asked to answer an approval. */
  approvalAsked: boolean;
  input: string;
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
  let keys: string;
  if (s.connection === 'stopped') keys = 'Enter restart · Ctrl-D leave';
  else if (s.me) keys = s.approvalAsked ? 'y approve · n deny' : s.turn === 'turn running' || s.turn === 'cancelling' ? 'Ctrl-C cancel · Ctrl-D detach' : 'Ctrl-D detach';
  else keys = s.readOnly ? 'Ctrl-D detach' : 'Ctrl-T take · Ctrl-D detach';
  const clean = cleanText(s.title);
  const title = clean.length > 24 ? `${clean.slice(0, 23)}…` : clean;
  const status = ` ${role} │ ${s.turn}${conn} │ ${keys}${detail ? ` │ ${detail}` : ''} │ ${s.id}${title ? ` "${title}"` : ''}`;
  let promptPrefix: string;
  if (s.approvalAsked) promptPrefix = paint(color, 'yellow', 'approve the command above? [y/n] ');
  else if (s.me) promptPrefix = paint(color, 'bold', '❯ ');
  else promptPrefix = paint(color, 'dim', s.readOnly ? '(read-only) ' : '(observing) ');
  return { status, statusColour: colour, promptPrefix, input: s.input };
}
