// Column widths for laying text out in a terminal: string-width (East Asian width, emoji, zero-width
// and combining marks) over grapheme clusters, never UTF-16 units. Text from sessions (titles, input,
// output shown in tables) may hold control characters; `visible()` makes it safe to lay out first.
import stringWidth from 'string-width';

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

export const ELLIPSIS = '…';

/** Columns the text takes in a terminal (escape sequences count zero). */
export function displayWidth(text: string): number {
  return stringWidth(text);
}

/** The user-perceived characters of the text (an emoji with modifiers or ZWJ is one). */
export function graphemes(text: string): string[] {
  return Array.from(segmenter.segment(text), (s) => s.segment);
}

/**
 * The text with control characters (ESC, C0, C1, DEL) shown as visible symbols, so that a session
 * title or pasted text cannot move the cursor or change the terminal: newline → ↵, tab → one space,
 * others → the Unicode control picture (␛ for ESC) or U+FFFD.
 */
export function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (c === '\n') return '↵';
    if (c === '\t') return ' ';
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return '␡';
    return '\ufffd';
  });
}

/** The text cut to at most `cols` columns, the cut marked with … ; whole graphemes only. */
export function fitWidth(text: string, cols: number): string {
  if (cols <= 0) return '';
  if (displayWidth(text) <= cols) return text;
  const room = cols - 1; // the ellipsis takes one column
  let out = '';
  let used = 0;
  for (const g of graphemes(text)) {
    const w = displayWidth(g);
    if (used + w > room) break;
    out += g;
    used += w;
  }
  return out + ELLIPSIS;
}

/** The text fitted to `cols` and padded with spaces to exactly `cols` columns. */
export function padWidth(text: string, cols: number): string {
  const fitted = fitWidth(text, cols);
  return fitted + ' '.repeat(Math.max(0, cols - displayWidth(fitted)));
}

/** Fitted to `cols` and padded on the left to exactly `cols` columns (numbers in tables). */
export function padStartWidth(text: string, cols: number): string {
  const fitted = fitWidth(text, cols);
  return ' '.repeat(Math.max(0, cols - displayWidth(fitted))) + fitted;
}
