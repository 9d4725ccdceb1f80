// Issue 17, end to end in tmux: CJK and emoji lay out right in `astra attach` — a wide title keeps the
// status line on the last row without wrapping (in a narrow pane too), the input line puts the cursor
// where the text ends, Backspace removes a whole emoji, and no keystroke leaves a stale copy behind.
// Widths are checked with string-width, the library the CLI lays text out with.
import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { UI, newSession, re, sharedDaemon, tmuxFor, type TermPanes } from './terminal-e2e-harness.js';

const skip = skipWithout(TMUX);

/**
 * The status line is one whole row within the width: it starts with the role (a wrapped one would
 * leave its tail on the next row), and below it is the input line (idle) or nothing (a command has
 * the screen, the status line is the last row).
 */
function expectStatusRow(t: TermPanes, pane: string, cols: number, running: boolean, titleStart?: string): void {
  const rows = t.rows(pane);
  const i = rows.findLastIndex((r) => r.includes(' │ '));
  const status = rows[i]!;
  expect(status, 'the status line starts with the role').toMatch(UI.controlling);
  expect(stringWidth(status), `status line ${JSON.stringify(status)} fits ${cols} columns`).toBeLessThanOrEqual(cols);
  expect(status).not.toContain('\ufffd');
  if (running) expect(i, 'the status line is the last row').toBe(rows.length - 1);
  else expect(rows[i + 1], 'the input line right below the status line').toMatch(/^❯/);
  if (titleStart) expect(status).toContain(titleStart);
}

describe.skipIf(skip)('wide characters in astra attach', () => {
  const d = sharedDaemon();

  for (const cols of [200, 60]) {
    it(`a CJK and emoji title keeps the status line on one row of a ${cols}-column pane, idle and while a command runs`, async () => {
      const t = tmuxFor(d);
      const title = '日本語のセッション 🚀🎉 とても長いタイトルです、テスト用の名前 👨‍👩‍👧 終わり';
      const id = await newSession(d, title);
      t.attach('a', id, [], cols);
      await t.waitStatus('a', UI.controlling);
      const titleStart = cols >= 200 ? '日本語のセッション' : undefined;
      expectStatusRow(t, 'a', cols, false, titleStart);
      t.type('a', 'seq 1 60; cat', true);
      await t.waitLastRow('a', UI.running);
      expectStatusRow(t, 'a', cols, true, titleStart);
      t.key('a', 'C-d');
      await t.waitScreen('a', UI.turnCompleted(0));
      await t.waitStatus('a', UI.controlling);
      expectStatusRow(t, 'a', cols, false, titleStart);
    });
  }

  it('the input line: the cursor ends where the wide text ends, Backspace removes a whole emoji, no stale copies', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'ウィンドウ 🪟');
    t.attach('a', id, [], 80);
    await t.waitStatus('a', UI.controlling);

    const text = 'echo 漢字かな😀テスト';
    for (const ch of text) t.type('a', ch);
    const row = await t.waitVisible('a', new RegExp(`${re(text)}$`, 'm'));
    const line = row.split('\n').find((l) => l.endsWith(text))!;
    const cur = t.cursor('a');
    expect(t.rows('a')[cur.y], 'the cursor is on the input line').toBe(line);
    expect(cur.x, `cursor after ${JSON.stringify(line)}`).toBe(stringWidth(line));

    t.type('a', ' 👍🏽');
    await t.waitVisible('a', /👍/);
    t.key('a', 'BSpace');
    await t.waitVisible('a', new RegExp(`${re(text)}$`, 'm'));
    expect(t.visible('a')).not.toMatch(/👍|🏽/);
    expect(t.cursor('a').x, 'the space before the emoji is still there').toBe(stringWidth(line) + 1);
    t.key('a', 'BSpace');
    // The screen looks the same with or without the trailing space: the cursor says the key was drawn
    // (the copies were counted at once, possibly before or during that redraw).
    try {
      await waitFor('the cursor back at the end of the text after the second Backspace', () => t.cursor('a').x === stringWidth(line) || undefined);
    } catch (e) {
      throw new Error(`${(e as Error).message}; cursor ${JSON.stringify(t.cursor('a'))}\n--- pane a ---\n${t.visible('a')}`);
    }

    // One copy of the input on the screen: nothing left behind by the redraws.
    expect(t.visible('a').split(text).length - 1).toBe(1);
    t.key('a', 'Enter');
    const s = await t.waitScreen('a', UI.turnCompleted(0));
    expect(s).toMatch(/^漢字かな😀テスト$/m);
    await t.waitStatus('a', UI.controlling);
    expectStatusRow(t, 'a', 80, false);
  });
});
