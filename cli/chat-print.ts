// A chat answer printed once rather than drawn live: the final answer of `astra send --wait`, every
// answer in `astra log`. On a terminal it is laid out as `astra attach` lays it out — markdown,
// wrapped between words at the terminal's width less one column (chat-markdown.ts, streamed through
// chat-answer.ts) — with no second renderer. To a pipe or a file, or with --raw, it is the text as
// the model sent it, unchanged: scripts read that.
import type { SessionEvent } from '../protocol/index.js';
import { AgentThought } from './acp-render.js';
import { renderEvent } from './event-render.js';
import { StreamedAnswer, endsAnswer } from './chat-answer.js';
import { renderMarkdown } from './chat-markdown.js';

export interface AnswerLayout {
  /** Columns a line may take. */
  width: number;
  color: boolean;
}

/** How answers print on `stdout`: laid out when it is a terminal and `raw` is not asked for; undefined for the text as it came. */
export function answerLayout(stdout: NodeJS.WriteStream, color: boolean, raw = false): AnswerLayout | undefined {
  if (raw || !stdout.isTTY) return undefined;
  // One column spare, as in attach: a line that fills the row would leave the cursor in a pending wrap.
  return { width: Math.max(10, (stdout.columns || 80) - 1), color };
}

/** A whole answer as the lines to print. */
export function answerLines(text: string, layout: AnswerLayout | undefined): string[] {
  if (!layout) return [text.replace(/\n$/, '')];
  return renderMarkdown(text, layout.width, layout.color);
}

/**
 * The answers in a run of events (`astra log`), laid out: each block is given back as soon as a
 * later one began, the rest when the answer ends — at its message.completed, or when its turn goes
 * on to something else (a tool call, a command, the turn's end), or with `end()` when the events
 * stop in the middle of one (a turn still running, a journal cut short).
 */
export class AnswerBlocks {
  private readonly answer: StreamedAnswer;
  private turnId: string | undefined;

  constructor(private readonly layout: AnswerLayout) {
    this.answer = new StreamedAnswer(layout.color);
  }

  /** The lines a delta finished. */
  delta(turnId: string, text: string): string[] {
    const before = this.turnId !== undefined && this.turnId !== turnId ? this.end() : [];
    this.turnId = turnId;
    return [...before, ...this.answer.push(text, this.layout.width)];
  }

  /** The rest of the answer when `event` ends it (to print before the event itself), else nothing. */
  before(event: SessionEvent): string[] {
    if (this.turnId === undefined) return [];
    return endsAnswer(event.type) ? this.end() : [];
  }

  /** What is left of the answer being read, if any. */
  end(): string[] {
    if (this.turnId === undefined) return [];
    this.turnId = undefined;
    return this.answer.end(this.layout.width);
  }
}

const AGENT_PROGRESS = new Set(['thought.delta', 'plan.updated', 'tool.call', 'tool.updated', 'message.completed', 'turn.completed']);

/**
 * What `astra send --wait` writes to stderr while an ACP agent works (its answer goes to stdout at
 * the end): its thoughts, plan and tool calls as `astra attach` and `astra log` show them. Called
 * with each event of the turn; a thought's line is ended by the next event shown or the turn's end.
 */
export function agentProgress(color: boolean): (event: SessionEvent) => string {
  const thought = new AgentThought();
  const toolTitles = new Map<string, string>();
  return (event) => {
    if (!AGENT_PROGRESS.has(event.type)) return '';
    if (event.type === 'message.completed' || event.type === 'turn.completed') return thought.close();
    return renderEvent(event, color, { thought, toolTitles })
      .map((r) => (r.kind === 'line' ? `${r.text}\n` : r.text))
      .join('');
  };
}
