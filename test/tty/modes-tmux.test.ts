// The restore sequence on a real terminal: a tmux pane, whose modes tmux reports.
import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { ROOT, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux, shq } from '../cli/tmux.js';

const MODES = '#{alternate_on} #{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag} #{mouse_sgr_flag} #{keypad_flag} #{keypad_cursor_flag} #{cursor_flag}';

let tmux: Tmux | undefined;
const panePids: number[] = [];
afterEach(() => {
  for (const pid of panePids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  tmux?.destroy();
  tmux = undefined;
});

describe.skipIf(skipWithout(TMUX))('restoring a real terminal', () => {
  it('leaves no mouse tracking, alternate screen, keypad mode or hidden cursor on a tmux pane', async () => {
    tmux = new Tmux({ ...process.env });
    const modes = path.join(ROOT, 'dist', 'tty', 'modes.js');
    // What vim with the mouse on leaves behind when it is killed, then (on Enter) what a client writes.
    const script = [
      `process.stdout.write('\\x1b[?1049h\\x1b[?1002h\\x1b[?1006h\\x1b[?2004h\\x1b[?1h\\x1b=\\x1b[?25l');`,
      `process.stdin.once('data', async () => {`,
      `  const { restoreSequence } = await import(${JSON.stringify(modes)});`,
      `  process.stdout.write(restoreSequence() + 'restored\\n');`,
      `});`,
    ].join('\n');
    const cmd = `${shq(process.execPath)} -e ${shq(script)}; exec cat`;
    tmux.run(['new-session', '-d', '-x', '80', '-y', '20', '-s', 'p', 'sh', '-c', cmd]);
    panePids.push(Number(tmux.run(['list-panes', '-t', 'p', '-F', '#{pane_pid}']).trim()));
    const read = () => tmux!.run(['display', '-p', '-t', 'p', MODES]).trim();
    await waitFor('the program to turn its modes on', () => read() === '1 1 1 0 1 1 1 0' || undefined);
    tmux.key('p', 'Enter');
    await waitFor('restored in the pane', () => tmux!.run(['capture-pane', '-p', '-t', 'p']).includes('restored') || undefined);
    // alternate off, no mouse mode, keypad and cursor keys normal, cursor visible.
    expect(read()).toBe('0 0 0 0 0 0 0 1');
  });
});
