// A chat answer as it streams into the terminal, laid out as markdown (chat-markdown.ts): the
// blocks that are over (a later block began after them) are printed once, for good; the block still
// being written is the live part, laid out again for each delta and drawn again in place, so a line
// is broken only between words at the terminal's width and never where a delta happened to end.
// Only the unfinished tail is lexed again: a long answer costs the length of its last block per delta.
import type { Token } from 'marked';
import { MarkdownLayout, lexMarkdown } from './chat-markdown.js';

/** An answer ends with its message.completed; anything else of its turn after the text ends it too. */
export function endsAnswer(type: string): boolean {
  return type === 'message.completed' || type === 'turn.completed' || type === 'tool.call' || type === 'command.started' || type === 'thought.delta' || type === 'plan.updated' || type === 'tool.updated';
}

export class StreamedAnswer {
  private readonly layout: MarkdownLayout;
  /** The text from the first block not yet printed whole. */
  private tail = '';
  private tokens: Token[] = [];
  /** Blocks printed whole: a blank line goes before the next. */
  private printedBlocks = 0;
  /** Lines of the tail's first block already printed (the live part grew taller than allowed). */
  private printedHead = 0;

  constructor(color: boolean) {
    this.layout = new MarkdownLayout(color);
  }

  /** Nothing came yet, or all of it was printed. */
  get empty(): boolean {
    return this.tail.trim() === '';
  }

  /**
   * Adds a delta. Returns the lines to print for good now: the blocks it ended, and the top of the
   * live part beyond `maxLive` lines (a live part taller than the screen could not be drawn again).
   */
  push(delta: string, width: number, maxLive = Infinity): string[] {
    this.tail += delta;
    this.tokens = lexMarkdown(this.tail);
    const out: string[] = [];
    let last = this.tokens.length - 1;
    while (last >= 0 && this.tokens[last]!.type === 'space') last--;
    // Every block before the last one is over; their raw text must account for the tail exactly.
    if (last > 0 && this.tokens.reduce((n, t) => n + t.raw.length, 0) === this.tail.length) {
      const done = this.tokens.slice(0, last);
      out.push(...this.lines(done, width).slice(this.printedHead));
      if (done.some((t) => t.type !== 'space')) this.printedBlocks++;
      this.printedHead = 0;
      this.tail = this.tail.slice(done.reduce((n, t) => n + t.raw.length, 0));
      this.tokens = this.tokens.slice(last);
    }
    const live = this.live(width);
    if (live.length > maxLive) {
      const extra = live.length - maxLive;
      out.push(...live.slice(0, extra));
      this.printedHead += extra;
    }
    return out;
  }

  /** The unfinished block's lines, not yet printed, for `width`. */
  live(width: number): string[] {
    return this.lines(this.tokens, width).slice(this.printedHead);
  }

  /** The answer is over: what is left to print, and a fresh start. */
  end(width: number): string[] {
    const out = this.lines(this.tokens, width).slice(this.printedHead);
    this.tail = '';
    this.tokens = [];
    this.printedBlocks = 0;
    this.printedHead = 0;
    return out;
  }

  private lines(tokens: Token[], width: number): string[] {
    const lines = this.layout.blocks(tokens, width);
    return lines.length && this.printedBlocks > 0 ? ['', ...lines] : lines;
  }
}
