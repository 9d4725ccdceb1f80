// Issue 17, end to end in tmux: what a pane shows of a command's output, live, in a re-attach and in
// `astra log` — a partial line finished later is one line, a `\r` progress bar ends as one line, a
// client attaching during a full-screen redraw gets the current screen rather than the history of
// every frame, and an observer's typing is refused with a hint while the controller's reaches the
// program. One daemon for the file; each test its own session and tmux server.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TMUX, TOP, skipWithout } from '../helpers/system-tools.js';
import { UI, newSession, sharedDaemon, tmuxFor } from './terminal-e2e-harness.js';

const skip = skipWithout(TMUX);
const skipTop = skip || skipWithout(TOP);

describe.skipIf(skip)('command output in attached panes', () => {
  const d = sharedDaemon();

  it('printf "Downloading... ", a wait, then echo done is one line live, on re-attach and in astra log', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'partial line');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);
    // The rest of the line waits for a file the test makes once both panes showed the partial line
    // (it was `sleep 1`: a loaded machine could draw "done" before the second pane was read).
    const go = path.join(d.home, `go-${id}`);
    t.type('a', `printf "Downloading... "; while [ ! -e ${go} ]; do sleep 0.05; done; echo done`, true);
    // Live: the partial line shows before the rest of it comes.
    for (const pane of ['a', 'b']) await t.waitVisible(pane, /^Downloading\.\.\.$/m);
    fs.writeFileSync(go, '');
    for (const pane of ['a', 'b']) {
      const s = await t.waitScreen(pane, UI.turnCompleted(0));
      expect(s, `pane ${pane}`).toMatch(/^Downloading\.\.\. done$/m);
      expect(s, `pane ${pane}`).not.toMatch(/^done$/m);
    }
    t.attach('c', id);
    t.start('log', ['log', id]);
    for (const pane of ['c', 'log']) {
      const s = await t.waitScreen(pane, UI.turnCompleted(0));
      expect(s, `pane ${pane}`).toMatch(/^Downloading\.\.\. done$/m);
      expect(s, `pane ${pane}`).not.toMatch(/^done$/m);
    }
    await t.waitScreen('log', /\[exited 0\]/);
  });

  it('a \\r progress bar ends as one line, live, on re-attach and in astra log', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'progress');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.type('a', 'for i in 1 2 3 4 5 6 7 8; do printf "\\rprogress %d/8" $i; sleep 0.05; done; echo; echo after', true);
    const check = (pane: string, s: string) => {
      expect(s, `pane ${pane}`).toMatch(/^progress 8\/8\nafter$/m);
      expect(s.match(/progress \d\/8/g), `pane ${pane}: one progress line`).toEqual(['progress 8/8']);
    };
    check('a', await t.waitScreen('a', UI.turnCompleted(0)));
    t.attach('c', id);
    t.start('log', ['log', id]);
    for (const pane of ['c', 'log']) check(pane, await t.waitScreen(pane, UI.turnCompleted(0)));
  });

  it('a client attaching during a full-screen redraw sees the current screen at once, not a scroll of history', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'redraw');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    // Like top: home, clear, 30 rows, again every 20 ms. tmux keeps every cleared screen in the pane's
    // history (scroll-on-clear), so a client that is sent every frame shows them all in its scrollback.
    t.type('a', `i=0; while :; do i=$((i+1)); printf '\\033[H\\033[2J'; r=1; while [ $r -le 30 ]; do printf 'frame %d row %d\\n' $i $r; r=$((r+1)); done; sleep 0.02; done`, true);
    // Fifty frames of history before the second client comes.
    await t.waitVisible('a', /^frame ([5-9]\d|\d{3,}) row 30$/m, 30_000);
    const frameAt = (s: string) => Math.max(...[...s.matchAll(/^frame (\d+) row 1$/gm)].map((m) => Number(m[1])));
    const before = frameAt(t.visible('a'));

    t.attach('c', id);
    // The first screen c shows is one whole frame (rows 1 to 30 of one frame number).
    const first = await t.waitVisible('c', /^frame (\d+) row 1\n(frame \1 row \d+\n){28}frame \1 row 30$/m);
    expect(frameAt(first)).toBeGreaterThanOrEqual(before);
    // Nothing older than the frame running when c attached reached c, scrollback included.
    const frames = [...t.screen('c').matchAll(/^frame (\d+) row/gm)].map((m) => Number(m[1]));
    expect(Math.min(...frames), 'the oldest frame c was sent').toBeGreaterThanOrEqual(before);

    t.key('a', 'C-]');
    t.key('a', 'C-c');
    await t.waitScreen('a', UI.turnCancelled);
  });

  it.skipIf(skipTop)('attaching while top runs shows top\'s current screen from the first row, with the modes top set', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'top');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.type('a', 'top -d 0.2', true);
    await t.waitVisible('a', /^top - .*\n(Tasks|Threads):/);
    // top hides the cursor and sets application cursor keys (it draws on the normal screen).
    const topModes = await t.waitModes('a', 'top\'s modes', (m) => !m.cursorVisible && m.keypadCursor);
    t.attach('c', id);
    await t.waitVisible('c', /^top - .*\n(Tasks|Threads):/);
    await t.waitLastRow('c', UI.observing);
    await t.waitModes('c', 'the modes top set, on the client attached after', (m) => m.cursorVisible === topModes.cursorVisible && m.keypadCursor === topModes.keypadCursor && m.alternate === topModes.alternate);
    t.type('a', 'q');
    for (const pane of ['a', 'c']) await t.waitScreen(pane, UI.turnCompleted(0));
    for (const pane of ['a', 'c']) await t.waitModes(pane, 'the modes reset after top quit', (m) => m.cursorVisible && !m.keypadCursor && !m.alternate);
  });

  it('an observer\'s typing is refused with a hint and never reaches the program; the controller\'s does', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'observer typing');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);
    t.type('a', 'cat', true);
    await t.waitLastRow('a', UI.running);

    t.type('b', 'sneaky');
    await t.waitVisible('b', UI.observerHint);
    t.type('a', 'typed by the controller', true);
    // The terminal's echo, then cat's copy: on both panes.
    for (const pane of ['a', 'b']) await t.waitVisible(pane, /^typed by the controller\ntyped by the controller$/m);
    t.key('a', 'C-d');
    for (const pane of ['a', 'b']) await t.waitScreen(pane, UI.turnCompleted(0));
    expect(t.screen('a')).not.toMatch(/sneaky/);
    expect(t.screen('b')).not.toMatch(/^sneaky/m);
  });
});
