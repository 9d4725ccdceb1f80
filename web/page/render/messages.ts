// Conversation events → text: the user's input, assistant text streamed by message.delta and
// settled by message.completed (one element per model answer: a turn with tool calls has several,
// with the tool cards between them), turn ends and errors. An answer is markdown (markdown.ts:
// DOM nodes built from marked's tokens, never HTML of the model's text).
import type { PageEvent } from '../api.js';
import { MarkdownAnswer } from './markdown.js';

export class MessageRenderer {
  /** Per turn, the answer being streamed now. */
  private readonly streaming = new Map<string, MarkdownAnswer>();

  constructor(private readonly container: HTMLElement) {}

  handles(type: string): boolean {
    return type.startsWith('message.') || type === 'turn.completed' || type === 'error';
  }

  render(e: PageEvent): void {
    const d = e.data;
    const turnId = String(d.turnId ?? '');
    if (e.type === 'message.user') this.line('user', `> ${String(d.text)}`);
    else if (e.type === 'message.delta') {
      let answer = this.streaming.get(turnId);
      if (!answer) {
        answer = new MarkdownAnswer(this.line('assistant streaming', ''));
        this.streaming.set(turnId, answer);
      }
      answer.append(String(d.text));
    } else if (e.type === 'message.completed') {
      const answer = this.streaming.get(turnId) ?? new MarkdownAnswer(this.line('assistant', ''));
      const el = answer.element;
      this.streaming.delete(turnId);
      const text = String(d.text);
      // An answer that only called tools has no text: its cards say what it did.
      if (text === '' && d.finishReason === 'tool_calls') {
        el.remove();
        return;
      }
      el.classList.remove('streaming');
      answer.set(text);
      if (typeof d.finishReason === 'string') el.dataset.finishReason = d.finishReason;
    } else if (e.type === 'turn.completed') {
      // reason: why it ended so when nobody cancelled it and nothing failed (e.g. 'denied: the command was not approved').
      const el = this.line('turn', `turn ${String(d.status)}${d.error ? `: ${String(d.error)}` : ''}${d.reason ? ` (${String(d.reason)})` : ''}`);
      if (typeof d.reason === 'string') el.dataset.reason = d.reason;
    }
    else if (e.type === 'error') this.line('error', String(d.message));
    this.container.scrollTop = this.container.scrollHeight;
  }

  private line(kind: string, text: string): HTMLElement {
    const el = document.createElement('div');
    el.className = `msg ${kind}`;
    el.textContent = text;
    this.container.append(el);
    return el;
  }
}
