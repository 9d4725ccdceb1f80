// Issue 26, end to end in tmux: an observer whose window is smaller than the controller's, while a
// full-screen program (vim) runs at the controller's size. Before the fix its bytes went through as
// they were: lines wrapped and clamped over each other, the status line overwritten, and Ctrl-] l
// redrew only the status line. Now the observer draws the program's screen clipped to its window
// (the top-left part, or the part with the cursor), says so in the status line, which stays on the
// last row, and a redraw draws it again exactly. One daemon for the file; each test its own session.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { TMUX, TOP, VIM, skipWithout, vimCommand } from '../helpers/system-tools.js';
import { UI, newSession, sharedDaemon, tmuxFor, type TermPanes } from './terminal-e2e-harness.js';

const skipTmux = skipWithout(TMUX);
const skip = skipTmux || skipWithout(VIM);
const skipTop = skipTmux || skipWithout(TOP);

/** The controller's program rows (all but its status row) cut to the observer's columns and rows. */
function clippedView(t: TermPanes, from: string, cols: number, rows: number, top = 0): string[] {
  return t.rows(from).slice(top, top + rows).map((l) => [...l].slice(0, cols).join('').replace(/\s+$/, ''));
}

async function waitSame(t: TermPanes, observer: string, controller: string, cols: number, rows: number, what: string, followCursor = false): Promise<void> {
  try {
    await waitFor(what, () => {
      // The rows ending with the program's cursor, when it is below what fits.
      const y = followCursor ? t.cursor(controller).y : 0;
      const want = clippedView(t, controller, cols, rows, y >= rows ? y - rows + 1 : 0);
      const got = t.rows(observer).slice(0, rows);
      return want.some((l) => l !== '') && JSON.stringify(got) === JSON.stringify(want) ? true : undefined;
    }, 20_000);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- controller ---\n${t.visible(controller)}\n--- observer ---\n${t.visible(observer)}`);
  }
}

describe.skipIf(skipTmux)('an observer smaller than the controller', () => {
  const d = sharedDaemon();

  it.skipIf(skipTop)('sees top (a full-screen program on the normal screen) clipped to the rows with its cursor, the status line kept', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'small observer top');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.start('b', ['attach', id], {}, 80);
    t.resize('b', 80, 15);
    await t.waitStatus('b', UI.observing);
    // Once drawn, top waits 30 s before it draws again: both panes hold still to be compared.
    t.type('a', 'top -d 30', true);
    await t.waitVisible('a', /PID USER/);
    await t.waitLastRow('b', /clipped 80×14 of 120×39 │ observing/);
    await waitSame(t, 'b', 'a', 80, 14, 'the observer showing 80×14 of top', true);
    t.key('a', 'q');
    for (const pane of ['a', 'b']) await t.waitScreen(pane, UI.turnCompleted(0));
    await t.waitStatus('b', UI.observing);
  });

  it.skipIf(skip)('sees vim clipped to its window with a marker, keeps its status line, and Ctrl-] l repairs its screen exactly', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'small observer');
    const file = path.join(d.home, `wide-${id}.txt`);
    // Lines wider than the observer, so wrapping them would show.
    fs.writeFileSync(file, Array.from({ length: 80 }, (_, i) => `line ${String(i + 1).padStart(2, '0')} ${'abcdefghij'.repeat(10)} end`).join('\n') + '\n');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.start('b', ['attach', id], {}, 80);
    t.resize('b', 80, 20);
    await t.waitStatus('b', UI.observing);

    t.type('a', `${vimCommand()} -u NONE -N ${file}`, true);
    await t.waitVisible('a', /^line 01 abcdefghij/m);
    // 80 columns and 19 rows of a program of 120 × 39, said on the observer's last row.
    await t.waitLastRow('b', /clipped 80×19 of 120×39 │ observing/);
    await waitSame(t, 'b', 'a', 80, 19, 'the observer showing the top-left 80×19 of vim');
    expect(t.lastRow('b')).toMatch(/clipped 80×19 of 120×39/);

    // The controller moves and edits: the observer follows, still clipped.
    t.type('a', 'ddjx');
    await t.waitVisible('a', /^line 02 abcdefghij/m);
    await waitSame(t, 'b', 'a', 80, 19, 'the observer after an edit');

    // Something else writes over the observer's terminal; Ctrl-] l draws the program again exactly.
    const tty = t.format('b', '#{pane_tty}');
    fs.writeFileSync(tty, '\x1b[2J\x1b[5;5Hgarbage over the screen\x1b[20;1Hgarbage on the status row');
    await t.waitVisible('b', /garbage on the status row/);
    t.key('b', 'C-]');
    t.key('b', 'l');
    await waitSame(t, 'b', 'a', 80, 19, 'the observer after Ctrl-] l');
    await t.waitLastRow('b', /clipped 80×19 of 120×39 │ observing/);
    expect(t.visible('b')).not.toMatch(/garbage/);

    // A taller, still narrow observer shows more rows; one as large as the program gets its bytes again.
    t.resize('b', 100, 30);
    await t.waitLastRow('b', /clipped 100×29 of 120×39 │ observing/);
    await waitSame(t, 'b', 'a', 100, 29, 'the observer at 100×30');
    t.resize('b', 130, 45);
    await t.waitLastRow('b', /^ ?observing/);
    await waitSame(t, 'b', 'a', 130, 39, 'the observer at 130×45');

    // The controller's window grows past the observer's: the daemon sends every screen subscriber
    // the screen at the new size, so the observer learns it and clips again.
    t.resize('a', 140, 50);
    await t.waitLastRow('b', /clipped 130×44 of 140×49 │ observing/);
    await waitSame(t, 'b', 'a', 130, 44, 'the observer after the controller grew to 140×50');

    t.type('a', ':q!');
    t.key('a', 'Enter');
    for (const pane of ['a', 'b']) await t.waitScreen(pane, UI.turnCompleted(0));
    await t.waitStatus('b', UI.observing);
    expect(t.modes('b').alternate).toBe(false);
  });

  it('a line program goes through to a smaller observer (its lines wrap), without a clipping marker', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'small observer lines');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.start('b', ['attach', id], {}, 80);
    t.resize('b', 80, 20);
    await t.waitStatus('b', UI.observing);
    t.type('a', `printf 'wide %0100d end\\n' 7; read x`, true);
    await t.waitLastRow('b', UI.running);
    const s = await t.waitScreen('b', /end$/m);
    expect(s).toMatch(/^wide 0{79}\n?0{20}7 end$/m);
    expect(t.lastRow('b')).not.toMatch(/clipped/);
    t.key('a', 'Enter');
    await t.waitScreen('b', UI.turnCompleted(0));
  });
});
