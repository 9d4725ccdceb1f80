// ProgramMirror (issue 26): the attach view's copy of a program's screen. What it renders, drawn on an
// empty terminal of the window's size, shows the program's screen cut to that window: every cell's
// character, colours and attributes, wide characters whole or not at all, the cursor in place.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ProgramMirror } from '../../../cli/view/program-mirror.js';

const { Terminal } = createRequire(import.meta.url)('@xterm/headless') as typeof import('@xterm/headless');

/** Each row of a headless terminal fed `bytes`: its text, and the SGR attributes of each cell. */
async function drawOn(cols: number, rows: number, bytes: string): Promise<{ text: string[]; attrs: string[]; cursor: [number, number] }> {
  const t = new Terminal({ cols, rows, allowProposedApi: true });
  await new Promise<void>((r) => t.write(bytes, r));
  const b = t.buffer.active;
  const text: string[] = [];
  const attrs: string[] = [];
  const cell = b.getNullCell();
  for (let y = 0; y < rows; y++) {
    const line = b.getLine(b.baseY + y)!;
    text.push(line.translateToString(true));
    let a = '';
    for (let x = 0; x < cols; x++) {
      line.getCell(x, cell);
      a += `${cell.getChars() || ' '}${cell.isBold()}${cell.isInverse()}${cell.getFgColorMode()}:${cell.getFgColor()}/${cell.getBgColorMode()}:${cell.getBgColor()}|`;
    }
    attrs.push(a);
  }
  const cursor: [number, number] = [b.cursorX, b.cursorY];
  t.dispose();
  return { text, attrs, cursor };
}

const PROGRAM = [
  '\x1b[?1049h\x1b[H\x1b[2J',
  'plain line that is longer than the small window, it goes on and on to column 70',
  '\r\n\x1b[1;31mbold red\x1b[0m then \x1b[7minverse\x1b[0m and \x1b[38;2;10;20;30;48;5;200mtrue colour on 256\x1b[0m',
  '\r\n\x1b[44m   blue blank cells   \x1b[0m',
  '\r\nwide 漢字漢字漢字 at the edge',
  '\x1b[6;3Hcursor here',
].join('');

describe('ProgramMirror', () => {
  it('renders the whole screen so that drawn on an empty terminal it is the program\'s screen, cell for cell', async () => {
    const m = ProgramMirror.create(80, 10)!;
    expect(m).toBeDefined();
    m.write(Buffer.from(PROGRAM));
    expect(m.alternate).toBe(true);
    const want = await drawOn(80, 10, PROGRAM);
    // Rendered onto the normal screen of a terminal of the same size.
    const got = await drawOn(80, 10, m.render({ cols: 80, rows: 10 }, true));
    expect(got.text).toEqual(want.text);
    expect(got.attrs).toEqual(want.attrs);
    expect(got.cursor).toEqual(want.cursor);
    m.dispose();
  });

  it('clipped to a smaller window: the top-left part, a wide character cut whole, rows ending with the cursor when it is lower', async () => {
    const m = ProgramMirror.create(80, 10)!;
    m.write(Buffer.from(PROGRAM));
    const want = await drawOn(80, 10, PROGRAM);
    expect(m.clips({ cols: 12, rows: 4 })).toBe(true);
    const small = await drawOn(12, 4, m.render({ cols: 12, rows: 4 }, true));
    // The cursor is on row 6: the 4 rows ending with it (rows 3..6), cut at 12 columns.
    expect(want.text.slice(2, 6)).toEqual(['   blue blank cells   ', 'wide 漢字漢字漢字 at the edge', '', '  cursor here']);
    expect(small.text).toEqual(['   blue blan', 'wide 漢字漢', '', '  cursor her']);
    // The program's cursor (after "cursor here", column 13) is cut: the last column, hidden.
    expect(small.cursor).toEqual([11, 3]);
    const narrow = await drawOn(11, 10, m.render({ cols: 11, rows: 10 }, true));
    // "wide " is 5 columns and each 漢 or 字 2: 11 columns take three of them, 10 only two (never half of one).
    expect(narrow.text[3]).toBe('wide 漢字漢');
    const odd = await drawOn(10, 10, m.render({ cols: 10, rows: 10 }, true));
    expect(odd.text[3]).toBe('wide 漢字');
    m.dispose();
  });

  it('renders only the rows that changed, unless asked for all', () => {
    const m = ProgramMirror.create(20, 4)!;
    m.write(Buffer.from('one\r\ntwo\r\nthree'));
    const first = m.render({ cols: 20, rows: 4 }, false);
    expect(first).toContain('one');
    m.write(Buffer.from('\x1b[2;1Htwice'));
    const next = m.render({ cols: 20, rows: 4 }, false);
    expect(next).toContain('twice');
    expect(next).not.toContain('one');
    expect(next).not.toContain('three');
    expect(m.render({ cols: 20, rows: 4 }, true)).toContain('three');
    m.dispose();
  });
});
