// What an ACP agent sends (the acp engine's events, docs/protocol.md) as terminal lines, shared by
// `astra attach`, `astra log` and `astra send --wait` through event-render.ts: the agent's thoughts
// dimmed, its plan as a checklist (printed whole each time it changes), its tool calls as cards with
// title and status, and a diff as a coloured unified diff (cli/line-diff.ts).
import type { SessionEvent } from '../protocol/index.js';
import { unifiedDiff } from './line-diff.js';
import { cleanText, paint } from './output.js';

type Line = { kind: 'line'; text: string };
type ToolDetail = SessionEvent<'tool.updated'>['data'];

/** Lines of one diff shown at most; the rest is counted (`astra log --json` has all of it). */
const MAX_DIFF_LINES = 200;
/** Lines of a text content shown at most. */
const MAX_TEXT_LINES = 20;

/**
 * A thought streams dimmed, in full, after a "thinking:" label, and ends its line when anything else
 * comes. Shown rather than folded away: a terminal cannot unfold a line later, and what the agent
 * thought is often why it does what follows; dimmed, it does not read as the answer.
 */
export class AgentThought {
  private open = false;

  /** The text to write for a thought's delta. */
  delta(text: string, color: boolean): string {
    const label = this.open ? '' : paint(color, 'dim', paint(color, 'magenta', 'thinking: '));
    this.open = true;
    return label + paint(color, 'dim', cleanKeepLines(text));
  }

  /** "\n" when a thought's line is open (the thought is over), else "". */
  close(): string {
    if (!this.open) return '';
    this.open = false;
    return '\n';
  }
}

/** Escape sequences and control characters out; line breaks, tabs and spacing kept (streamed prose, code lines). */
export function cleanKeepLines(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]?/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}

const PLAN_MARKS: Record<string, string> = { completed: '[x]', in_progress: '[~]', pending: '[ ]' };

/** The whole plan as a checklist: [x] done, [~] in progress, [ ] pending. */
export function planLines(data: SessionEvent<'plan.updated'>['data'], color: boolean): Line[] {
  const head = paint(color, 'cyan', `plan (${data.entries.filter((e) => e.status === 'completed').length}/${data.entries.length} done)`);
  return [
    { kind: 'line', text: head },
    ...data.entries.map((e) => {
      const mark = PLAN_MARKS[e.status] ?? `[${cleanText(e.status)}]`;
      const text = `  ${mark} ${cleanText(e.content)}${e.priority === 'high' ? paint(color, 'dim', ' (high)') : ''}`;
      return { kind: 'line' as const, text: e.status === 'completed' ? paint(color, 'dim', text) : e.status === 'in_progress' ? paint(color, 'bold', text) : text };
    }),
  ];
}

function statusColour(status: string | undefined): 'green' | 'red' | 'yellow' | 'dim' {
  return status === 'completed' ? 'green' : status === 'failed' ? 'red' : status === 'in_progress' ? 'yellow' : 'dim';
}

/** An agent's tool call (tool.call with its ACP details): "┌ edit  Edit a.txt  [pending]", where, and what it carries. */
export function agentToolCallLines(data: SessionEvent<'tool.call'>['data'], color: boolean): Line[] {
  const kind = cleanText(data.kind ?? data.name);
  const head = paint(color, 'cyan', `┌ ${kind}`) + `  ${paint(color, 'bold', cleanText(data.title ?? data.name))}` + statusText(data.status, color) + paint(color, 'dim', `  (${cleanText(data.callId)})`);
  return [{ kind: 'line', text: head }, ...detailLines(data, color)];
}

/** A tool call's progress: "├ Edit a.txt  [completed]" (its title when it says one, else its id), then what it carries. */
export function agentToolUpdateLines(data: ToolDetail, color: boolean): Line[] {
  const name = data.title !== undefined ? cleanText(data.title) : `tool ${cleanText(data.callId)}`;
  return [{ kind: 'line', text: paint(color, 'cyan', '├ ') + name + statusText(data.status, color) }, ...detailLines(data, color)];
}

function statusText(status: string | undefined, color: boolean): string {
  return status ? `  ${paint(color, statusColour(status), `[${cleanText(status)}]`)}` : '';
}

function detailLines(data: ToolDetail, color: boolean): Line[] {
  const out: Line[] = [];
  const dim = (s: string) => paint(color, 'dim', s);
  if (data.locations && data.locations.length > 0) {
    const where = data.locations.map((l) => `${cleanText(l.path)}${typeof l.line === 'number' ? `:${l.line}` : ''}`).join(', ');
    out.push({ kind: 'line', text: dim(`│ at ${where}`) });
  }
  for (const c of data.content ?? []) {
    if (c.type === 'diff' && typeof c.newText === 'string') {
      out.push({ kind: 'line', text: `│ ${paint(color, 'bold', `${c.oldText === null || c.oldText === undefined ? 'new file' : 'diff'} ${cleanText(c.path ?? '')}`)}` });
      for (const l of diffLines(c.path ?? 'file', c.oldText ?? null, c.newText, color)) out.push({ kind: 'line', text: `│ ${l}` });
    } else if (c.type === 'text' && typeof c.text === 'string') {
      const lines = c.text.replace(/\n$/, '').split('\n');
      for (const l of lines.slice(0, MAX_TEXT_LINES)) out.push({ kind: 'line', text: `│ ${cleanKeepLines(l)}` });
      if (lines.length > MAX_TEXT_LINES) out.push({ kind: 'line', text: dim(`│ … ${lines.length - MAX_TEXT_LINES} more lines`) });
    } else if (c.type === 'terminal') {
      out.push({ kind: 'line', text: dim(`│ terminal ${cleanText(c.terminalId ?? '')}`) });
    }
  }
  return out;
}

/** A unified diff, coloured: removed lines red, added green, hunk heads cyan; long ones cut with a count. */
export function diffLines(file: string, oldText: string | null, newText: string, color: boolean): string[] {
  const lines = unifiedDiff(file, oldText, newText);
  const shown = lines.slice(0, MAX_DIFF_LINES).map((l) => {
    const t = cleanKeepLines(l);
    if (l.startsWith('+++') || l.startsWith('---')) return paint(color, 'bold', t);
    if (l.startsWith('@@')) return paint(color, 'cyan', t);
    if (l.startsWith('+')) return paint(color, 'green', t);
    if (l.startsWith('-')) return paint(color, 'red', t);
    return t;
  });
  if (lines.length > MAX_DIFF_LINES) shown.push(paint(color, 'dim', `… ${lines.length - MAX_DIFF_LINES} more diff lines (\`astra log --json\` has the whole texts)`));
  return shown;
}

/** The approval options as a line: "1 Allow once · 2 Always allow · 3 Reject". */
export function optionsText(options: readonly { name: string }[]): string {
  return options.map((o, i) => `${i + 1} ${cleanText(o.name)}`).join(' · ');
}
