import { afterEach, describe, expect, it } from 'vitest';
import {
  StatusRowGuard,
  drawStatusLine,
  enterStatusLayout,
  leaveStatusLayout,
  setRegion,
  statusLayout,
} from '../../../cli/view/scroll-region.js';
import { CommandScreen } from '../../../pty/screen.js';

const COLS = 30;
const ROWS = 8;
const terms: CommandScreen[] = [];
afterEach(() => {
  for (const t of terms.splice(0)) t.dispose();
});

/** A user's terminal (an emulator), with the status layout entered and the status line drawn. */
function userTerminal(): { term: CommandScreen; guard: StatusRowGuard; program(s: string): void } {
  const term = new CommandScreen({ cols: COLS, rows: ROWS });
  terms.push(term);
  term.write(Buffer.from('$ astra attach\r\n'));
  term.write(Buffer.from(enterStatusLayout(ROWS) + drawStatusLine('● running · Ctrl-] for Astra', COLS, ROWS)));
  const guard = new StatusRowGuard(ROWS);
  return {
    term,
    guard,
    program(s) {
      const g = guard.push(Buffer.from(s));
      term.write(g.data);
      if (g.redraw) term.write(Buffer.from(setRegion(ROWS) + drawStatusLine('● running · Ctrl-] for Astra', COLS, ROWS)));
    },
  };
}

describe('the status line on the last row', () => {
  it('gives the program one row fewer', () => {
    expect(statusLayout(80, 24)).toEqual({ programCols: 80, programRows: 23, statusRow: 24 });
    expect(() => statusLayout(80, 1)).toThrow(/at least 2 rows/);
  });

  it('stays on the last row while the program scrolls many lines', async () => {
    const u = userTerminal();
    for (let i = 1; i <= 40; i++) u.program(`line ${i}\r\n`);
    const snap = await u.term.snapshot();
    expect(snap.text[ROWS - 1]).toBe('● running · Ctrl-] for Astra');
    expect(snap.text[ROWS - 2]).toBe('');
    expect(snap.text[ROWS - 3]).toBe('line 40');
  });

  it('survives a program resetting the scroll region, even split across chunks', async () => {
    const u = userTerminal();
    u.program('\x1b[');
    u.program('r');
    u.program('\x1b[1;50r');
    for (let i = 1; i <= 40; i++) u.program(`line ${i}\r\n`);
    expect((await u.term.snapshot()).text[ROWS - 1]).toBe('● running · Ctrl-] for Astra');
  });

  it('is redrawn after a clear of the screen, a full reset or a switch to the alternate screen', async () => {
    for (const wipe of ['\x1b[H\x1b[2J', '\x1b[J', '\x1bc', '\x1b[?1049h']) {
      const u = userTerminal();
      u.program(wipe + 'drawn');
      for (let i = 1; i <= 20; i++) u.program(`\r\nrow ${i}`);
      const snap = await u.term.snapshot();
      expect(snap.text[ROWS - 1], JSON.stringify(wipe)).toBe('● running · Ctrl-] for Astra');
    }
  });

  it('without the guard a program would scroll the status line away', async () => {
    const term = new CommandScreen({ cols: COLS, rows: ROWS });
    terms.push(term);
    term.write(Buffer.from(enterStatusLayout(ROWS) + drawStatusLine('status', COLS, ROWS)));
    term.write(Buffer.from('\x1b[r' + 'x\r\n'.repeat(20)));
    expect((await term.snapshot()).text[ROWS - 1]).not.toBe('status');
  });

  it('fits a status text with CJK to the width', async () => {
    const term = new CommandScreen({ cols: 12, rows: 4 });
    terms.push(term);
    term.write(Buffer.from(enterStatusLayout(4) + drawStatusLine('会话标题很长很长', 12, 4)));
    expect((await term.snapshot()).text[3]).toBe('会话标题很…');
  });

  it('gives the whole screen back on leaving', async () => {
    const u = userTerminal();
    u.program('hello\r\n');
    u.term.write(Buffer.from(leaveStatusLayout(ROWS)));
    for (let i = 1; i <= 20; i++) u.term.write(Buffer.from(`after ${i}\r\n`));
    const snap = await u.term.snapshot();
    expect(snap.text[ROWS - 2]).toBe('after 20');
    expect(snap.text.join('\n')).not.toContain('running');
  });

  it('passes UTF-8 and other sequences through unchanged', () => {
    const g = new StatusRowGuard(ROWS);
    const s = '中文 \x1b[1;31mred\x1b[0m \x1b[5;10H\x1b[?25l';
    expect(g.push(Buffer.from(s))).toEqual({ data: Buffer.from(s), redraw: false });
  });
});
