// Conversation events → text: the user's input, assistant text streamed by message.delta and
// settled by message.completed, turn ends and errors.
import type { PageEvent } from '../api.js';

export class MessageRenderer {
  private readonly assistant = new Map<string, HTMLElement>();

  constructor(private readonly container: HTMLElement) {}

  handles(type: string): boolean {
    return type.startsWith('message.') || type === 'turn.completed' || type === 'error';
  }

  render(e: PageEvent): void {
    const d = e.data;
    const turnId = String(d.turnId ?? '');
    if (e.type === 'message.user') this.line('user', `> ${String(d.text)}`);
    else if (e.type === 'message.delta' || e.type === 'message.completed') {
      let el = this.assistant.get(turnId);
      if (!el) {
        el = this.line('assistant', '');
        this.assistant.set(turnId, el);
      }
      el.textContent = e.type === 'message.delta' ? (el.textContent ?? '') + String(d.text) : String(d.text);
    } else if (e.type === 'turn.completed') this.line('turn', `turn ${String(d.status)}${d.error ? `: ${String(d.error)}` : ''}`);
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
