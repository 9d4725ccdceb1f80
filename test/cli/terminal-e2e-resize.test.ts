// Issue 26, end to end in tmux: a resize of the controller's pane while a command runs in a
// pseudo-terminal on a full screen. Before the fix the cursor could be left on the status row after
// the terminal reflowed (tmux moves it there when a shorter window pushes lines into its history), so
// the command's next line was written on the status row and wiped; and a narrower window rewrapped
// the old status line into the program's rows. One daemon for the file; each test its own session.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { ROWS, UI, newSession, sharedDaemon, tmuxFor } from './terminal-e2e-harness.js';

const skip = skipWithout(TMUX);

describe.skipIf(skip)('a resize while a command runs on a full screen', () => {
  const d = sharedDaemon();

  for (const [cols, rows] of [[100, 30], [90, ROWS], [120, 30], [100, 45]] as const) {
    it(`output after a resize to ${cols}x${rows} shows, below what came before, with the status line alone on the last row`, async () => {
      const t = tmuxFor(d);
      const id = await newSession(d, `resize ${cols}x${rows}`);
      t.attach('a', id);
      await t.waitStatus('a', UI.controlling);
      // A full screen of lines first, so the cursor sits on the last row of the program's region.
      t.type('a', 'seq 1 60', true);
      await t.waitScreen('a', UI.turnCompleted(0));
      await t.waitStatus('a', UI.controlling);
      // The command waits until its terminal has the new size (the pane less the status row), then
      // for the test's go-ahead; the test resizes the pane in between.
      const go = path.join(d.home, `go-${id}`);
      t.type('a', `echo "sz1 $(stty size)"; while [ "$(stty size)" != "${rows - 1} ${cols}" ]; do sleep 0.05; done; while [ ! -e ${go} ]; do sleep 0.05; done; echo "sz2 $(stty size)"; sleep 30`, true);
      await t.waitVisible('a', /^sz1 \d+ \d+$/m);
      await t.waitLastRow('a', UI.running);
      t.resize('a', cols, rows);
      // attach has seen the new size once its status line is on the new last row.
      await t.waitLastRow('a', UI.running);
      expect(t.rows('a')).toHaveLength(rows);
      fs.writeFileSync(go, '');
      const shown = await t.waitVisible('a', new RegExp(`^sz2 ${rows - 1} ${cols}$`, 'm'));
      const lines = shown.split('\n');
      // In order: sz1, then sz2 on a row of the program's (not the status row), nothing of the old
      // status line left anywhere but the last row.
      const sz1 = lines.findIndex((l) => /^sz1 /.test(l));
      const sz2 = lines.findIndex((l) => /^sz2 /.test(l));
      expect(sz1, shown).toBeGreaterThanOrEqual(0);
      expect(sz2, shown).toBeGreaterThan(sz1);
      expect(sz2, shown).toBeLessThan(rows - 1);
      expect(lines.slice(0, -1).filter((l) => / │ running |keys go to the program/.test(l)), shown).toEqual([]);
      expect(t.lastRow('a')).toMatch(UI.running);
      // Cancel the sleep: the turn ends and the screen is given back.
      t.key('a', 'C-]');
      t.key('a', 'C-c');
      await t.waitScreen('a', UI.turnCancelled);
      const after = await t.waitScreen('a', /sz2/);
      expect(after).toMatch(/^sz1 .*\n(.*\n)*sz2 /m);
    });
  }
});
