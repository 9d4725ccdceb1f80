// A chat answer (and an agent's, with its thoughts) in `astra attach`: its deltas laid out as markdown (chat-answer.ts), the finished
// blocks printed as lines, the unfinished one the view's live part, drawn again in place for each
// delta (attach-view.ts `setLive`), so lines break between words at the terminal's width and never
// where a delta ended. Without a TTY nothing is drawn twice: blocks are printed as they end.
import type { SessionEvent } from '../../protocol/index.js';
import type { AttachView } from './attach-view.js';
import { StreamedAnswer, endsAnswer } from '../chat-answer.js';
import { AgentThought } from '../acp-render.js';

/** Rows kept free below a live part: the footer's two and one spare. */
const FOOTER_ROWS = 3;

export class AttachChat {
  private readonly answer: StreamedAnswer;
  /** The turn whose answer is streaming, if one is. */
  private turnId: string | undefined;
  /** An agent's thought streaming (acp): dimmed output, its line ended by whatever comes next. */
  private readonly thought = new AgentThought();
  /** An agent's tool calls' titles, for updates that name none (event-render.ts). */
  readonly toolTitles = new Map<string, string>();

  constructor(private readonly view: AttachView) {
    this.answer = new StreamedAnswer(view.color);
  }

  /** One column spare: a line that fills the row would leave the cursor in a pending wrap. */
  private width(cols = this.view.cols): number {
    return Math.max(10, cols - 1);
  }

  /**
   * Takes the chat events it draws (message.delta; the end of an answer). Returns true when the
   * event needs nothing more from the caller's renderer.
   */
  onEvent(event: SessionEvent): boolean {
    if (this.turnId !== undefined && endsAnswer(event.type)) this.end();
    if (event.type === 'thought.delta') {
      this.view.output(this.thought.delta(event.data.text, this.view.color));
      return true;
    }
    const endThought = this.thought.close();
    if (endThought) this.view.output(endThought);
    if (event.type === 'message.delta') {
      if (this.turnId !== undefined && this.turnId !== event.data.turnId) this.end();
      this.turnId = event.data.turnId;
      const maxLive = this.view.tty ? Math.max(3, this.view.rows - FOOTER_ROWS) : Infinity;
      for (const l of this.answer.push(event.data.text, this.width(), maxLive)) this.view.line(l);
      if (this.view.tty) this.view.setLive((cols) => this.answer.live(this.width(cols)));
      return true;
    }
    return false;
  }

  /** Prints what is left of the answer, for good. */
  end(): void {
    for (const l of this.answer.end(this.width())) this.view.line(l);
    this.view.setLive(undefined);
    this.turnId = undefined;
  }
}
