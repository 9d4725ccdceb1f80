// What an ACP agent says besides its answer and tool calls (the acp engine, docs/engines.md):
// its thoughts (thought.delta) as a dimmed, collapsible block per run of thinking; its plan
// (plan.updated, the whole plan each time) as a checklist per turn, redrawn in place; and which
// agent and ACP session a turn runs in (acp.session). acp.update (what Astra does not map) is not
// drawn. Agent text is only ever set as textContent.
import type { PageEvent } from '../api.js';

interface Thought {
  el: HTMLDetailsElement;
  body: HTMLElement;
  summary: HTMLElement;
  chars: number;
}

const STATUS_WORDS: Record<string, string> = { pending: 'to do', in_progress: 'in progress', completed: 'done' };

export class AgentRenderer {
  /** Per turn, the thought being streamed now (while it is the last thing shown). */
  private readonly thoughts = new Map<string, Thought>();
  /** Per turn, its plan's checklist. */
  private readonly plans = new Map<string, HTMLElement>();

  constructor(private readonly container: HTMLElement) {}

  handles(type: string): boolean {
    return type === 'thought.delta' || type === 'plan.updated' || type === 'acp.session';
  }

  render(e: PageEvent): void {
    const d = e.data;
    const turnId = String(d.turnId ?? '');
    if (e.type === 'thought.delta') this.thought(turnId, String(d.text ?? ''));
    else if (e.type === 'plan.updated') this.plan(turnId, Array.isArray(d.entries) ? (d.entries as Record<string, unknown>[]) : []);
    else if (e.type === 'acp.session') {
      const line = document.createElement('div');
      line.className = 'msg agent-session';
      line.dataset.how = String(d.how);
      line.textContent = `${String(d.agent)}: ACP session ${String(d.acpSessionId)} (${d.how === 'loaded' ? 'loaded' : 'new'})${typeof d.note === 'string' ? ` — ${d.note}` : ''}`;
      this.container.append(line);
    }
    this.container.scrollTop = this.container.scrollHeight;
  }

  private thought(turnId: string, text: string): void {
    let t = this.thoughts.get(turnId);
    // Thinking after something else was shown (an answer, a tool call) starts a new block.
    if (!t || this.container.lastElementChild !== t.el) {
      const el = document.createElement('details');
      el.className = 'msg thought';
      const summary = document.createElement('summary');
      const body = document.createElement('div');
      body.className = 'thought-text';
      el.append(summary, body);
      this.container.append(el);
      t = { el, body, summary, chars: 0 };
      this.thoughts.set(turnId, t);
    }
    t.body.append(text);
    t.chars += text.length;
    t.summary.textContent = `thought (${t.chars} characters)`;
  }

  private plan(turnId: string, entries: Record<string, unknown>[]): void {
    let list = this.plans.get(turnId);
    if (!list) {
      list = document.createElement('div');
      list.className = 'card plan';
      this.plans.set(turnId, list);
      this.container.append(list);
    }
    list.dataset.turnId = turnId;
    const done = entries.filter((x) => x.status === 'completed').length;
    const title = document.createElement('div');
    title.className = 'plan-head';
    title.textContent = `plan · ${done}/${entries.length} done`;
    const ul = document.createElement('ul');
    for (const entry of entries) {
      const status = String(entry.status ?? '');
      const li = document.createElement('li');
      li.className = 'plan-entry';
      li.dataset.status = status;
      li.dataset.priority = String(entry.priority ?? '');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.disabled = true;
      box.checked = status === 'completed';
      box.indeterminate = status === 'in_progress';
      const content = document.createElement('span');
      content.className = 'plan-content';
      content.textContent = String(entry.content ?? '');
      const meta = document.createElement('span');
      meta.className = 'plan-meta';
      meta.textContent = ` ${STATUS_WORDS[status] ?? status}${entry.priority ? ` · ${String(entry.priority)}` : ''}`;
      li.append(box, ' ', content, meta);
      ul.append(li);
    }
    list.replaceChildren(title, ul);
  }
}
