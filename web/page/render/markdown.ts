// A chat answer's markdown as DOM nodes: marked's lexer reads it, and each token becomes elements
// made here (document.createElement, text nodes) — never HTML from the model's text, which is
// untrusted: a tag in it shows as text, a link goes only to http(s) or mailto, an image is a link
// to it (the page's CSP loads none from elsewhere). While the answer streams, the blocks that are
// over (a later block began) stay as they are; the block still being written is built again for
// each delta, from its own text only.
import { Lexer, type Token, type Tokens } from 'marked';

function lex(text: string): Token[] {
  return new Lexer({ gfm: true }).lex(text);
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, children: (Node | string)[] = [], className?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  e.append(...children);
  return e;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', '#39': "'" };
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|nbsp|#39);/g, (m, e: string) => ENTITIES[e] ?? m);
}

/** A URL a link may go to: http(s) and mailto only (no javascript:, data:, …). */
function safeHref(href: string): string | undefined {
  try {
    const u = new URL(href, 'http://invalid/');
    if (u.origin === 'http://invalid') return undefined; // relative: nothing of the page's
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'mailto:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

function inline(tokens: Token[] | undefined): (Node | string)[] {
  const out: (Node | string)[] = [];
  for (const t of tokens ?? []) {
    switch (t.type) {
      case 'strong':
        out.push(el('strong', inline(t.tokens)));
        break;
      case 'em':
        out.push(el('em', inline(t.tokens)));
        break;
      case 'del':
        out.push(el('del', inline(t.tokens)));
        break;
      case 'codespan':
        out.push(el('code', [decode(t.text)]));
        break;
      case 'br':
        out.push(el('br'));
        break;
      case 'link': {
        const l = t as Tokens.Link;
        const href = safeHref(l.href);
        if (!href) {
          out.push(...inline(l.tokens));
          break;
        }
        const a = el('a', inline(l.tokens));
        a.href = href;
        a.target = '_blank';
        a.rel = 'noopener noreferrer';
        out.push(a);
        break;
      }
      case 'image': {
        const i = t as Tokens.Image;
        const href = safeHref(i.href);
        const label = `[image: ${decode(i.text)}]`;
        if (!href) out.push(label);
        else {
          const a = el('a', [label], 'image');
          a.href = href;
          a.target = '_blank';
          a.rel = 'noopener noreferrer';
          out.push(a);
        }
        break;
      }
      case 'checkbox':
        break; // drawn by the list item
      case 'escape':
        out.push(t.text);
        break;
      case 'html':
        out.push(/^<br\s*\/?>$/i.test(t.raw.trim()) ? el('br') : t.raw);
        break;
      default:
        if ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length > 0) out.push(...inline(t.tokens));
        else out.push(decode('text' in t ? String(t.text) : t.raw));
    }
  }
  return out;
}

function block(t: Token): Node[] {
  switch (t.type) {
    case 'space':
    case 'def':
    case 'checkbox':
      return [];
    case 'heading': {
      const h = t as Tokens.Heading;
      return [el(`h${Math.min(6, Math.max(1, h.depth))}` as 'h1', inline(h.tokens))];
    }
    case 'paragraph':
      return [el('p', inline((t as Tokens.Paragraph).tokens))];
    case 'text': {
      const x = t as Tokens.Text;
      return [el('span', x.tokens ? inline(x.tokens) : [decode(x.text)])];
    }
    case 'code': {
      const c = t as Tokens.Code;
      const code = el('code', [c.text]);
      if (c.lang) code.dataset.lang = c.lang.split(/\s/)[0]!;
      return [el('pre', [code])];
    }
    case 'blockquote':
      return [el('blockquote', blocks((t as Tokens.Blockquote).tokens))];
    case 'hr':
      return [el('hr')];
    case 'list': {
      const l = t as Tokens.List;
      const list = l.ordered ? el('ol') : el('ul');
      if (l.ordered && typeof l.start === 'number' && l.start !== 1) (list as HTMLOListElement).start = l.start;
      for (const item of l.items) {
        const li = el('li', blocks(item.tokens));
        if (item.task) {
          const box = el('input');
          box.type = 'checkbox';
          box.checked = !!item.checked;
          box.disabled = true;
          li.prepend(box, ' ');
          li.className = 'task';
        }
        list.append(li);
      }
      return [list];
    }
    case 'table': {
      const tt = t as Tokens.Table;
      const cell = (tag: 'th' | 'td', c: Tokens.TableCell, i: number) => {
        const e = el(tag, inline(c.tokens));
        const align = tt.align[i];
        if (align) e.className = `align-${align}`;
        return e;
      };
      return [
        el('table', [
          el('thead', [el('tr', tt.header.map((c, i) => cell('th', c, i)))]),
          el('tbody', tt.rows.map((r) => el('tr', r.map((c, i) => cell('td', c, i))))),
        ]),
      ];
    }
    default:
      // html blocks and anything else: its text, as text.
      return [el('p', [t.raw.trimEnd()])];
  }
}

function blocks(tokens: Token[]): Node[] {
  return tokens.flatMap(block);
}

/** Markdown text as DOM nodes. */
export function markdownNodes(text: string): Node[] {
  return blocks(lex(text));
}

/** An element whose content is a markdown answer, streamed in by deltas or set whole. */
export class MarkdownAnswer {
  /** The text from the first block not yet final. */
  private tail = '';
  /** The nodes of that text: replaced at each delta. */
  private live: Node[] = [];

  constructor(readonly element: HTMLElement) {}

  append(delta: string): void {
    this.tail += delta;
    const tokens = lex(this.tail);
    let last = tokens.length - 1;
    while (last >= 0 && tokens[last]!.type === 'space') last--;
    for (const n of this.live) n.parentNode?.removeChild(n);
    this.live = [];
    let rest = tokens;
    // The blocks before the last are over: built once, for good (their raw text must be the tail's exactly).
    if (last > 0 && tokens.reduce((n, t) => n + t.raw.length, 0) === this.tail.length) {
      const done = tokens.slice(0, last);
      this.element.append(...blocks(done));
      this.tail = this.tail.slice(done.reduce((n, t) => n + t.raw.length, 0));
      rest = tokens.slice(last);
    }
    this.live = blocks(rest);
    this.element.append(...this.live);
  }

  /** The whole answer (message.completed): built again from it. */
  set(text: string): void {
    this.tail = '';
    this.live = [];
    this.element.replaceChildren(...markdownNodes(text));
  }
}
