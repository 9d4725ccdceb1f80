// Issue 17, end to end in tmux: interactive programs in a session's pseudo-terminal, driven through
// `astra attach` — a python3 REPL, vim (and the modes it leaves), a resize reaching the program, and
// Ctrl-C going to the program while Ctrl-] then Ctrl-C cancels the turn. One daemon for the file;
// each test its own session and tmux server.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TMUX, VIM, skipWithout, vimCommand } from '../helpers/system-tools.js';
import { ROWS, UI, newSession, sessionEvents, sharedDaemon, tmuxFor } from './terminal-e2e-harness.js';

const skip = skipWithout(TMUX);
const skipVim = skip || skipWithout(VIM);

describe.skipIf(skip)('interactive programs through astra attach', () => {
  const d = sharedDaemon();

  it('a python3 REPL evaluates 1+1 typed by the controller, and the observer sees 2', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'repl');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);

    t.type('a', 'python3 -q', true);
    await t.waitVisible('a', /^>>>$/m);
    await t.waitLastRow('a', UI.running);
    t.type('a', '1+1', true);
    for (const pane of ['a', 'b']) await t.waitVisible(pane, /^>>> 1\+1\n2\n>>>$/m);
    t.type('a', 'exit()', true);
    for (const pane of ['a', 'b']) await t.waitScreen(pane, UI.turnCompleted(0));
    const started = (await sessionEvents(d, id)).find((e) => e.type === 'command.started');
    expect(started?.data).toMatchObject({ tty: true });
  });

  it.skipIf(skipVim)('vim opens, edits and writes a file; after it quits no mouse or alternate-screen mode is left on any pane', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'vim');
    const file = path.join(d.home, `vim-${id}.txt`);
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.attach('b', id);
    await t.waitStatus('b', UI.observing);
    const clean = (m: ReturnType<typeof t.modes>) => !m.mouseAny && !m.mouseButton && !m.mouseStandard && !m.mouseSgr && !m.alternate && m.cursorVisible && !m.keypad && !m.keypadCursor;
    for (const pane of ['a', 'b']) expect(clean(t.modes(pane)), `pane ${pane} before vim: ${JSON.stringify(t.modes(pane))}`).toBe(true);

    t.type('a', `${vimCommand()} -u NONE -N ${file}`, true);
    for (const pane of ['a', 'b']) await t.waitModes(pane, 'the alternate screen (vim started)', (m) => m.alternate);
    t.type('a', ':set mouse=a');
    t.key('a', 'Enter');
    // The modes really are on while vim runs, in the controller's and the observer's terminal.
    for (const pane of ['a', 'b']) await t.waitModes(pane, 'mouse tracking (vim :set mouse=a)', (m) => m.mouseAny || m.mouseButton || m.mouseStandard);
    t.type('a', 'ihello from vim');
    t.key('a', 'Escape');
    t.type('a', ':wq');
    t.key('a', 'Enter');
    for (const pane of ['a', 'b']) await t.waitScreen(pane, UI.turnCompleted(0));
    expect(fs.readFileSync(file, 'utf8')).toBe('hello from vim\n');
    for (const pane of ['a', 'b']) await t.waitModes(pane, 'every mode reset after vim quit', clean);

    // A later attach does not get the modes back from the history.
    t.attach('c', id);
    await t.waitScreen('c', UI.turnCompleted(0));
    await t.waitStatus('c', UI.observing);
    expect(t.modes('c'), 'a pane attached after vim quit').toSatisfy(clean);

    // Detaching leaves the terminal as it was found, too.
    t.key('a', 'C-d');
    await t.waitScreen('a', /\[exited 0\]/);
    expect(t.modes('a'), 'the controller pane after astra attach exited').toSatisfy(clean);
  });

  it('a resize of the controller\'s pane reaches the program: stty size is one row fewer than the pane (the status line)', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'resize');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.type('a', 'tty; read x; stty size; read x; stty size', true);
    await t.waitVisible('a', /^\/dev\/pts\/\d+$/m);
    await t.waitLastRow('a', UI.running);
    t.key('a', 'Enter');
    await t.waitVisible('a', new RegExp(`^${ROWS - 1} 120$`, 'm'));

    t.resize('a', 100, 30);
    // attach has seen the new size once its status line is on the new last row.
    await t.waitLastRow('a', UI.running);
    expect(t.rows('a')).toHaveLength(30);
    t.key('a', 'Enter');
    await t.waitVisible('a', /^29 100$/m);
    await t.waitScreen('a', UI.turnCompleted(0));
  });

  // turn/start carries the controller's size (less the status row): before, attach could send it only
  // once turn/start had answered, and `stty size` here sometimes saw 80×24.
  it('the first command of a session starts at the controller\'s size', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'first size');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.type('a', 'stty size', true);
    const s = await t.waitScreen('a', UI.turnCompleted(0));
    expect(s).toMatch(new RegExp(`^${ROWS - 1} 120$`, 'm'));
  });

  it('Ctrl-C goes to the program; Ctrl-] then Ctrl-C cancels the turn', async () => {
    const t = tmuxFor(d);
    const id = await newSession(d, 'cancel');
    t.attach('a', id);
    await t.waitStatus('a', UI.controlling);
    t.type('a', `trap 'echo got-int' INT; echo ready; while :; do sleep 0.1; done`, true);
    await t.waitVisible('a', /^ready$/m);
    await t.waitLastRow('a', UI.prefixShown);

    t.key('a', 'C-c');
    // The terminal echoes the key as ^C, then the trap runs.
    await t.waitVisible('a', /^(\^C)?got-int$/m);
    expect(t.screen('a')).not.toMatch(UI.turnCancelled);

    t.key('a', 'C-]');
    t.key('a', 'C-c');
    await t.waitScreen('a', UI.turnCancelled);
    await t.waitStatus('a', UI.controlling);
    const done = (await sessionEvents(d, id)).find((e) => e.type === 'turn.completed');
    expect(done?.data).toMatchObject({ status: 'cancelled' });
  });
});
