// The input line of `astra attach`: a pure editor fed the raw bytes of the user's keys (in raw mode)
// and asked to render itself for a width. It knows arrows, Home/End, Ctrl-A/E/B/F/W/K/U/D, word moves,
// Backspace and Delete by whole graphemes (an emoji with modifiers goes at once), a history of sent
// lines (Up/Down, keeping the line being typed), and bracketed paste (ESC[200~ … ESC[201~) taken as
// ONE input even with newlines (Enter then sends it all). Keys it does not edit with (Ctrl-C, Ctrl-],
// Tab, Escape, function keys, Ctrl-D on an empty line) come back as actions for the caller.
// Input split anywhere (inside UTF-8, an escape sequence or a paste marker) is put back together.
import { StringDecoder } from 'node:string_decoder';
import { displayWidth, graphemes, visible } from './width.js';

export type EditorAction =
  | { type: 'submit'; text: string }
  | { type: 'key'; key: string }
  | { type: 'change' };

const PASTE_START = '\x1b[200~';
const PASTE_END = '\x1b[201~';
const MAX_HISTORY = 500;

/** Escape sequences → editing key names (xterm, VT220 and rxvt forms). */
const SEQUENCES: Record<string, string> = {
  '\x1b[A': 'up', '\x1bOA': 'up', '\x1b[B': 'down', '\x1bOB': 'down',
  '\x1b[C': 'right', '\x1bOC': 'right', '\x1b[D': 'left', '\x1bOD': 'left',
  '\x1b[H': 'home', '\x1bOH': 'home', '\x1b[1~': 'home', '\x1b[7~': 'home',
  '\x1b[F': 'end', '\x1bOF': 'end', '\x1b[4~': 'end', '\x1b[8~': 'end',
  '\x1b[3~': 'delete',
  '\x1b[1;5C': 'wordRight', '\x1b[1;3C': 'wordRight', '\x1bf': 'wordRight',
  '\x1b[1;5D': 'wordLeft', '\x1b[1;3D': 'wordLeft', '\x1bb': 'wordLeft',
};

const CONTROL_KEYS: Record<string, string> = {
  '\x01': 'home', '\x05': 'end', '\x02': 'left', '\x06': 'right', '\x10': 'up', '\x0e': 'down',
  '\x7f': 'backspace', '\x08': 'backspace', '\x17': 'deleteWordBefore', '\x0b': 'killToEnd', '\x15': 'killToStart',
};

export interface RenderedLine {
  /** The visible line (prompt + the part of the text around the cursor), within the width. */
  line: string;
  /** The 0-based column of the cursor. */
  cursorColumn: number;
  /** Bytes that redraw the input on the current row and put the cursor in place. */
  sequence: string;
}

export class LineEditor {
  private text = '';
  /** UTF-16 offset of the cursor, always on a grapheme boundary. */
  private cursor = 0;
  private readonly history: string[] = [];
  /** Position while browsing history (history.length = the line being typed). */
  private historyAt = 0;
  private draft = '';
  private readonly decoder = new StringDecoder('utf8');
  /** Bytes of an escape sequence (or paste marker) not yet complete. */
  private pending = '';
  private paste: string | undefined;
  /** First grapheme shown when the line is wider than the screen. */
  private viewStart = 0;

  get value(): string {
    return this.text;
  }

  /** The cursor as a count of graphemes from the start. */
  get cursorIndex(): number {
    return graphemes(this.text.slice(0, this.cursor)).length;
  }

  get sentLines(): readonly string[] {
    return this.history;
  }

  /** Feeds raw key bytes; returns what happened, in order. */
  feed(chunk: Buffer | string): EditorAction[] {
    const actions: EditorAction[] = [];
    let s = this.pending + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    this.pending = '';
    while (s.length > 0) {
      if (this.paste !== undefined) {
        const end = s.indexOf(PASTE_END);
        if (end < 0) {
          // Keep what could be the start of the end marker for the next chunk.
          const keep = partialSuffix(s, PASTE_END);
          this.paste += s.slice(0, s.length - keep);
          this.pending = s.slice(s.length - keep);
          return actions;
        }
        this.paste += s.slice(0, end);
        this.insert(this.paste.replace(/\r\n?/g, '\n'));
        this.paste = undefined;
        actions.push({ type: 'change' });
        s = s.slice(end + PASTE_END.length);
        continue;
      }
      if (s[0] === '\x1b') {
        const seq = matchSequence(s);
        if (seq === 'incomplete') {
          this.pending = s;
          return actions;
        }
        s = s.slice(seq.length);
        if (seq === PASTE_START) {
          this.paste = '';
          continue;
        }
        const name = SEQUENCES[seq];
        if (name) {
          if (this.edit(name)) actions.push({ type: 'change' });
        } else actions.push({ type: 'key', key: seq === '\x1b' ? 'escape' : seq });
        continue;
      }
      const c = s[0]!;
      if (c === '\r' || c === '\n') {
        s = s.slice(c === '\r' && s[1] === '\n' ? 2 : 1);
        actions.push(this.submit());
        continue;
      }
      const code = c.charCodeAt(0);
      if (code < 0x20 || code === 0x7f) {
        s = s.slice(1);
        const name = CONTROL_KEYS[c];
        if (c === '\x04' && this.text.length > 0) {
          if (this.edit('delete')) actions.push({ type: 'change' });
        } else if (name) {
          if (this.edit(name)) actions.push({ type: 'change' });
        } else actions.push({ type: 'key', key: controlName(code) });
        continue;
      }
      // A run of printable text goes in at once (so a combining mark joins its base).
      let end = 1;
      while (end < s.length && s.charCodeAt(end) >= 0x20 && s.charCodeAt(end) !== 0x7f && s[end] !== '\x1b') end++;
      this.insert(s.slice(0, end));
      actions.push({ type: 'change' });
      s = s.slice(end);
    }
    return actions;
  }

  /** A lone ESC held as a possible sequence start is the Escape key after all (call after a short pause). */
  flushEscape(): EditorAction[] {
    if (this.pending !== '\x1b') return [];
    this.pending = '';
    return [{ type: 'key', key: 'escape' }];
  }

  /** Replaces the line (for example after a refused send, to let the user edit it again). */
  setValue(text: string): void {
    this.text = text;
    this.cursor = text.length;
  }

  /**
   * The input laid out for a row of `cols` columns after `prompt`, scrolled horizontally to keep the
   * cursor in view; newlines in a pasted input show as ↵. One column stays free so the cursor at the
   * end never wraps.
   */
  render(cols: number, prompt = ''): RenderedLine {
    const shownPrompt = visible(prompt);
    const promptWidth = displayWidth(shownPrompt);
    const room = Math.max(1, cols - promptWidth - 1);
    const gs = graphemes(this.text).map(visible);
    const widths = gs.map(displayWidth);
    const at = this.cursorIndex;
    if (at < this.viewStart) this.viewStart = at;
    const span = (from: number, to: number) => widths.slice(from, to).reduce((a, b) => a + b, 0);
    // One column for the ‹ marker when scrolled.
    while (this.viewStart < at && span(this.viewStart, at) + (this.viewStart > 0 ? 1 : 0) > room) this.viewStart++;
    if (this.viewStart > 0 && span(0, gs.length) <= room) this.viewStart = 0;
    const marker = this.viewStart > 0 ? '‹' : '';
    let shown = marker;
    let used = displayWidth(marker);
    let cursorColumn = promptWidth + used;
    for (let i = this.viewStart; i < gs.length; i++) {
      if (used + widths[i]! > room) break;
      if (i < at) cursorColumn += widths[i]!;
      shown += gs[i];
      used += widths[i]!;
    }
    const line = shownPrompt + shown;
    return { line, cursorColumn, sequence: `\r${line}\x1b[K\r${cursorColumn > 0 ? `\x1b[${cursorColumn}C` : ''}` };
  }

  private submit(): EditorAction {
    const text = this.text;
    if (text.length > 0 && this.history[this.history.length - 1] !== text) {
      this.history.push(text);
      if (this.history.length > MAX_HISTORY) this.history.shift();
    }
    this.historyAt = this.history.length;
    this.draft = '';
    this.text = '';
    this.cursor = 0;
    this.viewStart = 0;
    return { type: 'submit', text };
  }

  private insert(piece: string): void {
    const before = this.text.slice(0, this.cursor) + piece;
    this.text = before + this.text.slice(this.cursor);
    this.cursor = snapToBoundary(this.text, before.length);
  }

  /** Applies an editing key; false when nothing changed. */
  private edit(name: string): boolean {
    const old = this.text + '\0' + this.cursor;
    const t = this.text;
    switch (name) {
      case 'left':
        this.cursor = prevBoundary(t, this.cursor);
        break;
      case 'right':
        this.cursor = nextBoundary(t, this.cursor);
        break;
      case 'home':
        this.cursor = 0;
        break;
      case 'end':
        this.cursor = t.length;
        break;
      case 'wordLeft':
        this.cursor = wordStartBefore(t, this.cursor);
        break;
      case 'wordRight':
        this.cursor = wordEndAfter(t, this.cursor);
        break;
      case 'backspace': {
        const from = prevBoundary(t, this.cursor);
        this.text = t.slice(0, from) + t.slice(this.cursor);
        this.cursor = from;
        break;
      }
      case 'delete':
        this.text = t.slice(0, this.cursor) + t.slice(nextBoundary(t, this.cursor));
        break;
      case 'deleteWordBefore': {
        const from = wordStartBefore(t, this.cursor);
        this.text = t.slice(0, from) + t.slice(this.cursor);
        this.cursor = from;
        break;
      }
      case 'killToEnd':
        this.text = t.slice(0, this.cursor);
        break;
      case 'killToStart':
        this.text = t.slice(this.cursor);
        this.cursor = 0;
        break;
      case 'up':
        if (this.historyAt === 0) return false;
        if (this.historyAt === this.history.length) this.draft = t;
        this.historyAt--;
        this.setValue(this.history[this.historyAt]!);
        break;
      case 'down':
        if (this.historyAt >= this.history.length) return false;
        this.historyAt++;
        this.setValue(this.historyAt === this.history.length ? this.draft : this.history[this.historyAt]!);
        break;
      default:
        return false;
    }
    return this.text + '\0' + this.cursor !== old;
  }
}

/** Grapheme boundaries of the text as UTF-16 offsets, 0 and text.length included. */
function boundaries(text: string): number[] {
  const out = [0];
  let at = 0;
  for (const g of graphemes(text)) {
    at += g.length;
    out.push(at);
  }
  return out;
}

function prevBoundary(text: string, at: number): number {
  const b = boundaries(text);
  for (let i = b.length - 1; i >= 0; i--) if (b[i]! < at) return b[i]!;
  return 0;
}

function nextBoundary(text: string, at: number): number {
  for (const x of boundaries(text)) if (x > at) return x;
  return text.length;
}

function snapToBoundary(text: string, at: number): number {
  for (const x of boundaries(text)) if (x >= at) return x;
  return text.length;
}

const isSpace = (g: string) => /^\s+$/u.test(g);

/** Start of the word before the cursor (spaces before it skipped first), as readline's Ctrl-W. */
function wordStartBefore(text: string, at: number): number {
  const b = boundaries(text).filter((x) => x <= at);
  let i = b.length - 1;
  while (i > 0 && isSpace(text.slice(b[i - 1], b[i]))) i--;
  while (i > 0 && !isSpace(text.slice(b[i - 1], b[i]))) i--;
  return b[i]!;
}

function wordEndAfter(text: string, at: number): number {
  const b = boundaries(text).filter((x) => x >= at);
  let i = 0;
  while (i < b.length - 1 && isSpace(text.slice(b[i], b[i + 1]))) i++;
  while (i < b.length - 1 && !isSpace(text.slice(b[i], b[i + 1]))) i++;
  return b[i]!;
}

/** The escape sequence at the start of s, or 'incomplete' when s ends inside one. */
function matchSequence(s: string): string | 'incomplete' {
  if (s.length === 1) return 'incomplete';
  const second = s[1]!;
  if (second === '[') {
    // CSI: parameters and intermediates, then a final byte @..~.
    for (let i = 2; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x40 && c <= 0x7e) return s.slice(0, i + 1);
      if (c < 0x20 || c > 0x3f) return s.slice(0, i); // malformed: cut before the odd byte
    }
    return 'incomplete';
  }
  if (second === 'O') return s.length >= 3 ? s.slice(0, 3) : 'incomplete';
  if (second === '\x1b') return '\x1b'; // Escape pressed twice: the first is a key on its own
  return s.slice(0, 2); // Alt + key
}

function partialSuffix(s: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, s.length); n > 0; n--) if (s.endsWith(marker.slice(0, n))) return n;
  return 0;
}

function controlName(code: number): string {
  if (code === 0x09) return 'tab';
  if (code === 0x1d) return 'ctrl-]';
  if (code === 0x1c) return 'ctrl-\\';
  if (code === 0x00) return 'ctrl-space';
  return `ctrl-${String.fromCharCode(code + 0x60)}`;
}
