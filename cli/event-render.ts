// How session events read in a terminal: shared by `astra attach` and `astra send --wait`.
import type { SessionEvent } from '../protocol/index.js';
import { cleanText, paint } from './output.js';
import { describeHolder } from './session-util.js';
import { AgentThought, agentToolCallLines, agentToolUpdateLines, optionsText, planLines } from './acp-render.js';

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
  // A daemon that says why (turn.completed's reason); `denied` for journals written before it did.
  if (data.reason && data.status === 'cancelled' && data.reason.startsWith('denied')) return `turn ${data.reason}`;
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
  /** An agent's thought being printed: labelled once, its line ended when something else comes. */
  thought?: AgentThought;
  /** An agent's tool calls' titles by turn and call id, so an update that names no title shows it (kept until the turn ends). */
  toolTitles?: Map<string, string>;
}

/** One event as terminal text. The controller's approval prompt is drawn by attach itself. */
export function renderEvent(event: SessionEvent, color: boolean, ctx: RenderContext = {}): Rendered[] {
  if (event.type === 'thought.delta') return [{ kind: 'output', stream: 'stdout', text: ctx.thought ? ctx.thought.delta(event.data.text, color) : paint(color, 'dim', event.data.text) }];
  const endThought = ctx.thought?.close();
  if (ctx.toolTitles) rememberTitle(ctx.toolTitles, event);
  const rendered = renderOne(event, color, ctx);
  return endThought ? [{ kind: 'output', stream: 'stdout', text: endThought }, ...rendered] : rendered;
}

function renderOne(event: SessionEvent, color: boolean, ctx: RenderContext): Rendered[] {
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
      // The text came as deltas; end its line (a cancelled or cut answer says so).
      return [
        ...(event.data.text && !event.data.text.endsWith('\n') ? [{ kind: 'output', stream: 'stdout', text: '\n' } as const] : []),
        ...(event.data.finishReason === 'cancelled' || event.data.finishReason === 'error' || event.data.finishReason === 'length'
          ? line(dim(`[answer ${event.data.finishReason === 'length' ? 'cut at the length limit' : event.data.finishReason === 'error' ? 'cut short by an error' : 'cancelled'}]`))
          : []),
      ];
    case 'tool.call':
      // An ACP agent's call says its kind and title; the chat engine's is the shell tool.
      return event.data.kind !== undefined || event.data.title !== undefined ? agentToolCallLines(event.data, color) : toolCallCard(event.data, color);
    case 'tool.updated': {
      const title = event.data.title ?? ctx.toolTitles?.get(`${event.data.turnId} ${event.data.callId}`);
      return agentToolUpdateLines(title !== undefined ? { ...event.data, title } : event.data, color);
    }
    case 'plan.updated':
      return planLines(event.data, color);
    case 'acp.session':
      return line(dim(`agent ${cleanText(event.data.agent)}: ${event.data.how === 'loaded' ? 'its session loaded again' : 'a new session'}${event.data.note ? ` (${cleanText(event.data.note)})` : ''}`));
    case 'tool.result': {
      const exit = event.data.exitCode !== undefined && event.data.exitCode !== null ? `, exit ${event.data.exitCode}` : '';
      const colour = event.data.status === 'succeeded' ? 'green' : event.data.status === 'failed' ? 'red' : 'yellow';
      // The command's output was shown as it ran; a call that did not run says why (its output is that reason).
      const why = event.data.status === 'denied' || event.data.status === 'interrupted' || !/\[exit code|\[killed by/.test(event.data.output) ? ` ${cleanText(lastLine(event.data.output))}` : '';
      return line(paint(color, colour, `└ tool ${event.data.status}${exit}`) + dim(why));
    }
    case 'usage':
      return line(dim(`[tokens: ${event.data.promptTokens} prompt, ${event.data.completionTokens} completion]`));
    case 'command.started':
      return line(dim(`$ ${event.data.command}${event.data.pid !== undefined ? `  (pid ${event.data.pid})` : ''}`));
    case 'command.output':
      return [{ kind: 'output', stream: event.data.stream, text: Buffer.from(event.data.data).toString('utf8') }];
    case 'command.completed': {
      const how = event.data.signal ? `killed by ${event.data.signal}` : `exit ${event.data.exitCode ?? '?'}`;
      return line(dim(`[command ${how}]`));
    }
    case 'approval.requested': {
      // An agent's permission request names its choices (the controller picks one by number).
      const choices = event.data.options?.length ? ` — ${optionsText(event.data.options)}` : '';
      return line(paint(color, 'yellow', `approval requested: run \`${event.data.command}\` in ${event.data.cwd}${event.data.reason ? ` (${event.data.reason})` : ''}${choices}`));
    }
    case 'approval.resolved': {
      const by = event.data.by?.clientName ? ` by ${event.data.by.clientName}` : '';
      const why = event.data.reason ? ` (${event.data.reason})` : event.data.optionId !== undefined ? ` (option ${cleanText(event.data.optionId)})` : '';
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
      return line(paint(color, 'red', `error: ${event.data.message}${event.data.reason ? ` (${event.data.reason})` : event.data.code ? ` (${event.data.code})` : ''}`));
    default:
      return [];
  }
}

function rememberTitle(titles: Map<string, string>, event: SessionEvent): void {
  if ((event.type === 'tool.call' || event.type === 'tool.updated') && event.data.title !== undefined) titles.set(`${event.data.turnId} ${event.data.callId}`, event.data.title);
  else if (event.type === 'turn.completed') for (const k of titles.keys()) if (k.startsWith(`${event.data.turnId} `)) titles.delete(k);
}

function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  return lines[lines.length - 1] ?? '';
}

/** A tool call of the chat engine as a card: the tool, the command line and where it runs. */
function toolCallCard(data: SessionEvent<'tool.call'>['data'], color: boolean): Rendered[] {
  let command: string | undefined;
  let cwd: string | undefined;
  try {
    const a = JSON.parse(data.arguments || '{}') as { command?: unknown; cwd?: unknown };
    if (typeof a.command === 'string') command = a.command;
    if (typeof a.cwd === 'string') cwd = a.cwd;
  } catch {
    // Shown as the model sent it below.
  }
  const head = paint(color, 'cyan', `┌ tool ${cleanText(data.name)}`) + paint(color, 'dim', `  (${data.callId})`);
  const body = command !== undefined ? `│ $ ${cleanText(command)}${cwd ? paint(color, 'dim', `   in ${cleanText(cwd)}`) : ''}` : `│ ${cleanText(data.arguments)}`;
  return [{ kind: 'line', text: head }, { kind: 'line', text: paint(color, 'bold', body) }];
}

/** An event as one JSON line: binary output as UTF-8 text. */
export function eventToJson(event: SessionEvent): string {
  if (event.type === 'command.output') {
    return JSON.stringify({ ...event, data: { ...event.data, data: Buffer.from(event.data.data).toString('utf8') } });
  }
  return JSON.stringify(event);
}
