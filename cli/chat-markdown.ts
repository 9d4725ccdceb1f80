// A chat answer's markdown as terminal lines: marked's lexer reads it (headings, paragraphs,
// **bold**, *italic*, `code`, ~~strike~~, links, lists and task lists, code blocks, quotes, tables,
// rules), and this lays the tokens out word by word for a width in display columns (string-width:
// CJK and emoji take two), styled with SGR when colours are on. Every line is at most `width`
// columns, so the terminal never wraps it by itself; styles are closed at each line's end, so a
// line can be erased and drawn again alone. The model's text is untrusted: control characters and
// escape sequences in it are shown as visible symbols, never sent to the terminal.
import { Lexer, type Token, type Tokens } from 'marked';
import { displayWidth, graphemes, visible } from './view/width.js';

/** Lexes markdown as the renderer reads it (GitHub's flavour: tables, strikethrough, task lists). */
export function lexMarkdown(text: string): Token[] {
  return new Lexer({ gfm: true }).lex(text);
}

/** SGR parameters of a style; '' for plain text. */
type Style = string;
const BOLD = '1';
const ITALIC = '3';
const UNDERLINE = '4';
const STRIKE = '9';
const DIM = '2';
const CODE = '36'; // cyan
const LINK = '4;34';
const QUOTE_MARK = '2';

/** A run of text in one style. */
interface Piece {
  text: string;
  style: Style;
}

const join = (a: Style, b: Style): Style => (a && b ? `${a};${b}` : a || b);

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|nbsp|#39);/g, (_, e: string) => ENTITIES[e] ?? _);
}

/** Text safe to print: no control characters (a newline is kept for the caller to break on). */
function safe(text: string): string {
  return text
    .split('\n')
    .map((l) => visible(l))
    .join('\n');
}

export class MarkdownLayout {
  constructor(private readonly color: boolean) {}

  private paint(style: Style, text: string): string {
    return this.color && style && text ? `\x1b[${style}m${text}\x1b[0m` : text;
  }

  /** The inline tokens of a paragraph, a heading, a cell as styled pieces. */
  private inline(tokens: Token[] | undefined, style: Style, out: Piece[] = []): Piece[] {
    for (const t of tokens ?? []) {
      switch (t.type) {
        case 'strong':
          this.inline(t.tokens, join(style, BOLD), out);
          break;
        case 'em':
          this.inline(t.tokens, join(style, ITALIC), out);
          break;
        case 'del':
          this.inline(t.tokens, join(style, STRIKE), out);
          break;
        case 'codespan':
          out.push({ text: this.color ? safe(decode(t.text)) : `\`${safe(t.text)}\``, style: join(style, CODE) });
          break;
        case 'br':
          out.push({ text: '\n', style: '' });
          break;
        case 'link': {
          const l = t as Tokens.Link;
          const before = out.length;
          this.inline(l.tokens, join(style, LINK), out);
          const shown = out.slice(before).map((p) => p.text).join('');
          if (shown !== l.href && `mailto:${shown}` !== l.href) out.push({ text: ` (${safe(l.href)})`, style: join(style, DIM) });
          break;
        }
        case 'image': {
          const i = t as Tokens.Image;
          out.push({ text: `[image: ${safe(decode(i.text))}]`, style: join(style, DIM) }, { text: ` (${safe(i.href)})`, style: join(style, DIM) });
          break;
        }
        case 'checkbox': // drawn in the list item's label
          break;
        case 'escape':
          out.push({ text: safe(t.text), style });
          break;
        case 'html':
          // A tag in the text (<br>, <b>): a line break for <br>, the tag itself otherwise.
          out.push(/^<br\s*\/?>$/i.test(t.raw.trim()) ? { text: '\n', style: '' } : { text: safe(t.raw), style });
          break;
        default:
          if ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length > 0) this.inline(t.tokens, style, out);
          else out.push({ text: safe(decode(('text' in t ? String(t.text) : t.raw) ?? '')), style });
      }
    }
    return out;
  }

  /** Pieces laid out in lines of at most `width` columns, broken between words; `first`/`rest` prefix them. */
  private wrap(pieces: Piece[], width: number, first: string, rest: string): string[] {
    const room = Math.max(1, width - displayWidth(first));
    // Words: runs without whitespace, each a list of pieces; `null` is a forced line break.
    const words: (Piece[] | null)[] = [];
    let word: Piece[] = [];
    const endWord = () => {
      if (word.length) words.push(word);
      word = [];
    };
    for (const p of pieces) {
      for (const part of p.text.split(/(\n|[ \t]+)/)) {
        if (part === '') continue;
        if (part === '\n') {
          endWord();
          words.push(null);
        } else if (/^[ \t]+$/.test(part)) endWord();
        else word.push({ text: part, style: p.style });
      }
    }
    endWord();
    const lines: string[] = [];
    let line: Piece[] = [];
    let used = 0;
    const flush = () => {
      lines.push((lines.length === 0 ? first : rest) + this.render(line));
      line = [];
      used = 0;
    };
    for (const w of words) {
      if (w === null) {
        flush();
        continue;
      }
      const ww = w.reduce((n, p) => n + displayWidth(p.text), 0);
      if (used > 0 && used + 1 + ww > room) flush();
      if (used > 0) {
        // Inside one styled run (a bold phrase, a link) the space has its style too: no gap in an underline.
        const before = line[line.length - 1]?.style ?? '';
        line.push({ text: ' ', style: before === w[0]!.style ? before : '' });
        used += 1;
      }
      if (ww <= room - used) {
        line.push(...w);
        used += ww;
        continue;
      }
      // A word longer than the line: cut between graphemes.
      for (const p of w)
        for (const g of graphemes(p.text)) {
          const gw = displayWidth(g);
          if (used > 0 && used + gw > room) flush();
          line.push({ text: g, style: p.style });
          used += gw;
        }
    }
    if (line.length || lines.length === 0) flush();
    return lines;
  }

  /** Pieces as one string, neighbours of one style painted together. */
  private render(pieces: Piece[]): string {
    let out = '';
    let text = '';
    let style: Style | undefined;
    for (const p of pieces) {
      if (p.style !== style) {
        if (style !== undefined) out += this.paint(style, text);
        style = p.style;
        text = '';
      }
      text += p.text;
    }
    if (style !== undefined) out += this.paint(style, text);
    return out;
  }

  /** Block tokens as lines of at most `width` columns, a blank line between blocks. */
  blocks(tokens: Token[], width: number): string[] {
    const out: string[] = [];
    for (const t of tokens) {
      const lines = this.block(t, width);
      if (lines.length === 0) continue;
      if (out.length) out.push('');
      out.push(...lines);
    }
    return out;
  }

  private block(t: Token, width: number): string[] {
    width = Math.max(4, width);
    switch (t.type) {
      case 'space':
      case 'def':
      case 'checkbox': // a task list item's box: its label (see 'list')
        return [];
      case 'heading': {
        const h = t as Tokens.Heading;
        const marks = this.color ? '' : `${'#'.repeat(h.depth)} `;
        return this.wrap(this.inline(h.tokens, h.depth <= 2 ? join(BOLD, UNDERLINE) : BOLD), width, marks, ' '.repeat(marks.length));
      }
      case 'paragraph':
        return this.wrap(this.inline((t as Tokens.Paragraph).tokens, ''), width, '', '');
      case 'text':
        return this.wrap(this.inline((t as Tokens.Text).tokens ?? [{ type: 'text', raw: t.raw, text: t.text } as Token], ''), width, '', '');
      case 'code': {
        const c = t as Tokens.Code;
        const lines: string[] = [];
        if (c.lang) lines.push(this.paint(DIM, `  ${safe(c.lang)}`.slice(0, width)));
        for (const raw of c.text.split('\n')) {
          // Code is not wrapped between words: cut where the line is full, continued after ↪.
          let line = '';
          let used = 0;
          const room = width - 2;
          for (const g of graphemes(visible(raw.replace(/\t/g, '    ')))) {
            const gw = displayWidth(g);
            if (used + gw > room) {
              lines.push(`  ${this.paint(CODE, line)}`);
              line = '';
              used = 0;
            }
            line += g;
            used += gw;
          }
          lines.push(`  ${this.paint(CODE, line)}`);
        }
        return lines;
      }
      case 'blockquote': {
        const mark = this.paint(QUOTE_MARK, '│ ');
        return this.blocks((t as Tokens.Blockquote).tokens, width - 2).map((l) => `${mark}${l}`);
      }
      case 'hr':
        return [this.paint(DIM, '─'.repeat(Math.min(width, 40)))];
      case 'list': {
        const l = t as Tokens.List;
        const start = typeof l.start === 'number' ? l.start : 1;
        const labels = l.items.map((item, i) => (l.ordered ? `${start + i}. ` : '• ') + (item.task ? (item.checked ? '☑ ' : '☐ ') : ''));
        const indent = Math.max(...labels.map((s) => displayWidth(s)));
        const out: string[] = [];
        l.items.forEach((item, i) => {
          const label = labels[i]!.padStart(indent);
          const inner = this.blocks(item.tokens, width - indent);
          // A tight list's items hold text blocks: no blank line inside them.
          const lines = l.loose ? inner : inner.filter((x) => x !== '');
          if (l.loose && i > 0) out.push('');
          lines.forEach((x, j) => out.push(`${j === 0 ? label : ' '.repeat(indent)}${x}`));
          if (lines.length === 0) out.push(label.trimEnd());
        });
        return out;
      }
      case 'table':
        return this.table(t as Tokens.Table, width);
      case 'html':
        return this.wrap([{ text: safe(t.raw.trimEnd()), style: '' }], width, '', '');
      default:
        return this.wrap([{ text: safe(t.raw.trimEnd()), style: '' }], width, '', '');
    }
  }

  /** A table with its columns aligned when it fits the width, else one row a line. */
  private table(t: Tokens.Table, width: number): string[] {
    const rows = [t.header, ...t.rows].map((row) => row.map((cell) => this.inline(cell.tokens, '')));
    const text = (ps: Piece[]) => ps.map((p) => p.text).join('').replace(/\n/g, ' ');
    const cols = t.header.length;
    const widths = Array.from({ length: cols }, (_, c) => Math.max(1, ...rows.map((r) => displayWidth(text(r[c] ?? [])))));
    const sep = this.paint(DIM, ' │ ');
    const total = widths.reduce((a, b) => a + b, 0) + 3 * (cols - 1);
    if (total > width)
      return rows.flatMap((r, i) => this.wrap(r.flatMap((cell, c) => (c ? [{ text: ' │ ', style: DIM }, ...cell] : cell)), width, '', '  ').map((l) => (i === 0 ? this.paint(BOLD, l) : l)));
    const line = (r: Piece[][], header: boolean) =>
      r
        .map((cell, c) => {
          const pad = ' '.repeat(widths[c]! - displayWidth(text(cell)));
          const shown = this.render(cell.map((p) => ({ text: p.text.replace(/\n/g, ' '), style: header ? join(BOLD, p.style) : p.style })));
          return t.align[c] === 'right' ? pad + shown : shown + pad;
        })
        .join(sep)
        .trimEnd();
    return [line(rows[0]!, true), this.paint(DIM, widths.map((w) => '─'.repeat(w)).join('─┼─')), ...rows.slice(1).map((r) => line(r, false))];
  }
}

/** Markdown text as terminal lines of at most `width` columns. */
export function renderMarkdown(text: string, width: number, color: boolean): string[] {
  return new MarkdownLayout(color).blocks(lexMarkdown(text), width);
}
