// Issue 17, end to end in tmux: the pipe fallback. A daemon told ASTRA_TERMINAL=pipes runs commands on
// pipes as before pseudo-terminals: `command.started` says `tty: false`, the command has no terminal,
// stdout and stderr both reach the attached panes, and the turn ends as usual.
import { describe, expect, it } from 'vitest';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { UI, newSession, sessionEvents, sharedDaemon, tmuxFor } from './terminal-e2e-harness.js';

const skip = skipWithout(TMUX);

describe.skipIf(skip)('commands on pipes (ASTRA_TERMINAL=pipes)', () => {
  const d = sharedDaemon({ ASTRA_TERMINAL: 'pipes' });

  it('a command runs without a terminal, says tty: false, and its output reaches controller and observer', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'pipes');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);
    // stderr first, and well before stdout: two pipes are read apart, so their order is not kept.
    t.type('a', 'echo to-stderr >&2; sleep 0.3; tty || echo "no terminal here"; echo on-stdout', true);
    for (const pane of ['a', 'b']) {
      const s = await t.waitScreen(pane, UI.turnCompleted(0));
      expect(s, `pane ${pane}`).toMatch(/^not a tty$/m);
      expect(s, `pane ${pane}`).toMatch(/^no terminal here$/m);
      expect(s, `pane ${pane}`).toMatch(/^to-stderr$/m);
      expect(s, `pane ${pane}`).toMatch(/^on-stdout$/m);
    }
    const events = await sessionEvents(d, id);
    expect(events.find((e) => e.type === 'command.started')?.data).toMatchObject({ tty: false });
    const streams = new Set(events.filter((e) => e.type === 'command.output').map((e) => (e.data as { stream: string }).stream));
    expect([...streams].sort()).toEqual(['stderr', 'stdout']);
  });

  // A partial line shown after its wait is continued in place when the rest comes (it used to be
  // ended by a line end of the view's own, so "done" came on the next row; replay was right).
  it('a partial line finished later is one line live on pipes too', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'pipes partial');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);
    t.type('a', 'printf "Downloading... "; sleep 1; echo done', true);
    for (const pane of ['a', 'b']) {
      const s = await t.waitScreen(pane, UI.turnCompleted(0));
      expect(s, `pane ${pane}`).toMatch(/^Downloading\.\.\. done$/m);
    }
  });
});
