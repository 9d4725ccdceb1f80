// How session events read in a terminal: shared by `astra attach` and `astra send --wait`.
import type { SessionEvent } from '../protocol/index.js';
import { cleanText, paint } from './output.js';
import { describeHolder } from './session-util.js';

/** A piece of what to print: command output verbatim, or a whole informational line. */
export type Rendered = { kind: 'output'; stream: 'stdout' | 'stderr'; text: string } | { kind: 'line'; text: string };

const LEASE_REASONS: Record<string, string> = {
  acquired: 'took control',
  released: 'released control',
  takeover: 'took over control',
  grace: 'lost its connection; control is reserved for it',
  reclaimed: 'reclaimed control',
  expired: 'did not come back; control is free',
  restart: 'control carried over a daemon restart',
};

/**
 * `denied`: the turn's command was refused at its approval. The engine then ends the turn as
 * `cancelled`, which would read as if someone had pressed Ctrl-C.
 */
export function turnEndText(data: SessionEvent<'turn.completed'>['data'], denied = false): string {
  if (denied && data.status === 'cancelled') return 'turn denied: the command was not run';
  const exit = data.exitCode !== undefined && data.exitCode !== null ? ` (exit ${data.exitCode})` : '';
  const err = data.error ? `: ${data.error}` : '';
  return `turn ${data.status}${exit}${err}`;
}

export function turnEndColour(data: SessionEvent<'turn.completed'>['data']): 'green' | 'yellow' | 'red' {
  if (data.status === 'completed') return data.exitCode === 0 || data.exitCode === undefined ? 'green' : 'yellow';
  return data.status === 'cancelled' ? 'yellow' : 'red';
}

export interface RenderContext {
  /** Turns whose approval was denied (see turnEndText). */
  deniedTurns?: ReadonlySet<string>;
  /** Who held control before this event: a release names nobody in the event itself. */
  previousHolder?: { clientName: string; pid?: number | undefined } | null;
}

/** One event as terminal text. The controller's approval prompt is drawn by attach itself. */
export function renderEvent(event: SessionEvent, color: boolean, ctx: RenderContext = {}): Rendered[] {
  const dim = (s: string) => paint(color, 'dim', s);
  const line = (text: string): Rendered[] => [{ kind: 'line', text }];
  switch (event.type) {
    case 'session.created':
      return line(dim(`session created: "${cleanText(event.data.title)}" in ${event.data.cwd} (engine ${event.data.engine}, approvals ${event.data.approvalPolicy})`));
    case 'session.updated': {
      const parts = [event.data.title !== undefined ? `title "${cleanText(event.data.title)}"` : '', event.data.state !== undefined ? `state ${event.data.state}` : ''].filter(Boolean);
      return parts.length ? line(dim(`session updated: ${parts.join(', ')}`)) : [];
    }
    case 'turn.started':
      return line(paint(color, 'bold', `❯ ${event.data.input.text}`));
    case 'message.user':
      return []; // the same text as turn.started
    case 'message.delta':
      return [{ kind: 'output', stream: 'stdout', text: event.data.text }];
    case 'message.completed':
      return [];
    case 'command.started':
      return line(dim(`$ ${event.data.command}${event.data.pid !== undefined ? `  (pid ${event.data.pid})` : ''}`));
    case 'command.output':
      return [{ kind: 'output', stream: event.data.stream, text: Buffer.from(event.data.data).toString('utf8') }];
    case 'command.completed': {
      const how = event.data.signal ? `killed by ${event.data.signal}` : `exit ${event.data.exitCode ?? '?'}`;
      return line(dim(`[command ${how}]`));
    }
    case 'approval.requested':
      return line(paint(color, 'yellow', `approval requested: run \`${event.data.command}\` in ${event.data.cwd}${event.data.reason ? ` (${event.data.reason})` : ''}`));
    case 'approval.resolved': {
      const by = event.data.by?.clientName ? ` by ${event.data.by.clientName}` : '';
      const why = event.data.reason ? ` (${event.data.reason})` : '';
      // A deny nobody gave is a request withdrawn (the turn was cancelled, the daemon restarted).
      const what = event.data.decision === 'approve' ? 'approved' : event.data.by ? 'denied' : 'approval withdrawn';
      return line(paint(color, event.data.decision === 'approve' ? 'green' : 'yellow', `${what}${by}${why}`));
    }
    case 'lease.changed': {
      const what = LEASE_REASONS[event.data.reason] ?? event.data.reason;
      const before = ctx.previousHolder;
      const who = event.data.holder ? describeHolder(event.data.holder) : before ? describeHolder(before) : 'the controller';
      const until = event.data.graceUntil !== undefined ? ` until ${new Date(event.data.graceUntil).toLocaleTimeString()}` : '';
      return line(paint(color, 'cyan', `· ${who} ${what}${until} (epoch ${event.data.epoch})`));
    }
    case 'turn.completed': {
      const text = turnEndText(event.data, ctx.deniedTurns?.has(event.data.turnId));
      return line(paint(color, turnEndColour(event.data), `${event.data.status === 'completed' ? '✔' : '✘'} ${text}`));
    }
    case 'error':
      return line(paint(color, 'red', `error: ${event.data.message}${event.data.reason ? ` (${event.data.reason})` : ''}`));
    default:
      return [];
  }
}

/** An event as one JSON line: binary output as UTF-8 text. */
export function eventToJson(event: SessionEvent): string {
  if (event.type === 'command.output') {
    return JSON.stringify({ ...event, data: { ...event.data, data: Buffer.from(event.data.data).toString('utf8') } });
  }
  return JSON.stringify(event);
}
