// `astra attach` as a terminal (issue 17), in real terminals (tmux) on a real daemon whose commands
// run in pseudo-terminals: the controller types into programs, observers watch them live, the
// prefix key gets Astra's keys, the status line stays on the last row, and the pane's modes are put
// back when a program ends or attach is killed. Each test: its own ASTRA_HOME and tmux server.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupHome, envFor, makeHome, runCli, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { sessionRows } from './cli-helpers.js';
import { Tmux } from './tmux.js';

const skipTmux = skipWithout(TMUX);
/** Any mouse tracking, the alternate screen, a visible cursor. */
const MODES = '#{mouse_any_flag} #{alternate_on} #{cursor_flag}';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(): { env: NodeJS.ProcessEnv; tmux: Tmux } {
  const home = makeHome('atty');
  // Pseudo-terminals for every command (the daemon's default; said so these tests never run on pipes).
  const env = envFor(home, { ASTRA_TERMINAL: 'auto' });
  const tmux = new Tmux(env);
  cleanups.push(() => cleanupHome(home));
  cleanups.push(() => tmux.destroy());
  return { env, tmux };
}

async function newSession(env: NodeJS.ProcessEnv, args: string[] = []): Promise<string> {
  const r = await runCli(['new', '--approval', 'auto', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

async function controllerPid(env: NodeJS.ProcessEnv, id: string): Promise<number> {
  const s = (await sessionRows(env)).find((x) => x.id === id) as { controller: { pid: number } | null } | undefined;
  expect(s?.controller?.pid).toEqual(expect.any(Number));
  return s!.controller!.pid;
}

describe.skipIf(skipTmux)('astra attach: programs in a pseudo-terminal', () => {
  it('the controller types into cat and sees the echo, the observer sees it live and is refused with a hint, Ctrl-] c cancels', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--title', 'cat']);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing │/);

    tmux.type('a', 'cat -v', true);
    await tmux.waitLastRow('a', /^ you control │ running cat -v │ keys go to the program · Ctrl-\] c cancel/);
    await tmux.waitLastRow('b', /^ observing │ running cat -v │ Ctrl-\] t \(or Ctrl-T\) take/);
    tmux.type('a', 'hello from the keyboard', true);
    // The terminal's echo and cat's copy: the line twice, on both screens.
    for (const pane of ['a', 'b']) await tmux.waitScreen(pane, /^hello from the keyboard\nhello from the keyboard$/m);
    tmux.type('a', 'partial');
    await tmux.waitScreen('b', /^hello from the keyboard\npartial$/m);

    // The prefix twice sends it once: the terminal's echo and cat -v show it as ^].
    tmux.key('a', 'C-]');
    tmux.key('a', 'C-]');
    tmux.key('a', 'Enter');
    await tmux.waitScreen('b', /^partial\^\]\npartial\^\]$/m);

    tmux.type('b', 'sneaky', true);
    await tmux.waitLastRow('b', /astra: you are observing \(astra attach \(pid \d+\) controls this session\): press Ctrl-T/);
    expect(tmux.screen('a')).not.toMatch(/sneaky/);

    tmux.key('a', 'C-]');
    await tmux.waitLastRow('a', /Ctrl-\] pressed: c cancel · d detach · t take/);
    tmux.type('a', 'c');
    for (const pane of ['a', 'b']) await tmux.waitScreen(pane, /turn cancelled/);
    await tmux.waitStatus('a', /^ you control this session │ idle │/);
    // Back on the input line: the next turn runs.
    tmux.type('a', 'echo after cat', true);
    await tmux.waitScreen('b', /^after cat$/m);
  });

  it('a python3 REPL evaluates 1+1 typed by the controller, and the observer screen shows 2; Ctrl-] Ctrl-C cancels', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', '--observe', id]);
    await tmux.waitStatus('b', /^ observing \(read-only\)/);
    tmux.type('a', 'python3 -q', true);
    await tmux.waitScreen('a', /^>>> $/m);
    tmux.type('a', '6*7', true);
    await tmux.waitScreen('a', /^42$/m);
    tmux.type('a', '1+1', true);
    await tmux.waitScreen('b', /^>>> 1\+1\n2\n>>>/m);
    // Ctrl-C goes to the program: Python prints KeyboardInterrupt and stays.
    tmux.key('a', 'C-c');
    await tmux.waitScreen('a', /KeyboardInterrupt/);
    await tmux.waitLastRow('a', /running python3 -q/);
    tmux.key('a', 'C-]');
    tmux.key('a', 'C-c');
    await tmux.waitScreen('b', /turn cancelled/);
    await tmux.waitStatus('a', /│ idle │/);
  });

  it('keeps the status line on the last row while output scrolls, and a partial line and a \\r progress bar show right live', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    // The partial line stays until the test has seen it and lets the command go on.
    const go = path.join(env.ASTRA_HOME!, 'go');
    tmux.type('a', `for i in $(seq 1 150); do echo "line $i"; done; printf "Downloading... "; while [ ! -e ${go} ]; do sleep 0.05; done; echo done; printf "10%%\\r50%%\\r100%%\\n"; sleep 30`, true);
    await tmux.waitScreen('a', /^Downloading\.\.\.\s*$/m);
    fs.writeFileSync(go, '');
    await tmux.waitScreen('a', /^100%$/m);
    const rows = await tmux.waitLastRow('a', /^ you control │ running for i in/);
    expect(rows).toHaveLength(40);
    const shown = rows.filter((r) => r.trim() !== '');
    expect(shown.slice(-5, -1)).toEqual(['line 149', 'line 150', 'Downloading... done', '100%']);
    // What scrolled off went into the pane's own scrollback, in order, once.
    const all = tmux.screen('a');
    expect(all).toMatch(/^line 1\n(line \d+\n)+line 150\nDownloading\.\.\. done\n100%$/m);
    expect(all.match(/^line 75$/gm)).toHaveLength(1);
    tmux.key('a', 'C-]');
    tmux.type('a', 'c');
    await tmux.waitStatus('a', /│ idle │/);
  });

  it('after a program turns on mouse tracking and the alternate screen and exits, the pane\'s modes are off and its title unchanged', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    const title = tmux.format('a', '#{pane_title}');
    // The program exits once the test has seen its modes on the pane.
    const go = path.join(env.ASTRA_HOME!, 'go');
    tmux.type('a', String.raw`printf '\033[?1049h\033[?1002h\033[?1006h\033[?2004h\033[?25l\033]2;EVIL\007full screen'; while [ ! -e ` + go + ' ]; do sleep 0.05; done', true);
    await waitFor('the program\'s modes on the pane', () => tmux.format('a', MODES) === '1 1 0' || undefined);
    fs.writeFileSync(go, '');
    await tmux.waitScreen('a', /turn completed \(exit 0\)/);
    expect(tmux.format('a', MODES)).toBe('0 0 1');
    expect(tmux.format('a', '#{pane_title}')).toBe(title);
    await tmux.waitStatus('a', /^ you control this session │ idle │/);
  });

  it('attach killed with SIGTERM while a program has the screen leaves the pane\'s modes off', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', String.raw`printf '\033[?1049h\033[?1000h\033[?25l'; sleep 30`, true);
    await waitFor('the program\'s modes on the pane', () => tmux.format('a', MODES) === '1 1 0' || undefined);
    process.kill(await controllerPid(env, id), 'SIGTERM');
    await tmux.waitScreen('a', /detached from ses_\w+ \(received SIGTERM\); the turn keeps running[\s\S]*\[exited 0\]/);
    expect(tmux.format('a', MODES)).toBe('0 0 1');
    // The region is the whole pane again: the last row is not kept for a status line.
    expect(tmux.visibleRows('a').filter((r) => / │ /.test(r))).toEqual([]);
    await runCli(['cancel', id], env);
  });
});

describe.skipIf(skipTmux)('astra attach: attaching while a program runs', () => {
  it('shows the program\'s current screen, not a replay of every byte, and says where the earlier history is', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    // History beyond the 1,000 lines attach shows.
    for (let i = 0; i < 3; i++) expect((await runCli(['send', id, 'seq 1 600', '--wait'], env)).code).toBe(0);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session │ idle/);
    // A full-screen program that redrew its screen many times: only the last one is current.
    tmux.type('a', String.raw`printf '\033[?1049h'; for i in $(seq 1 50); do printf '\033[H\033[2Jframe %s\033[5;10Hsame place' $i; done; sleep 30`, true);
    await tmux.waitScreen('a', /frame 50/);
    tmux.start('b', ['attach', '--observe', id]);
    // The history comes first (the status line may already say running printf), then the screen.
    const rows = await waitFor('the screen below the observer\'s status line', () => {
      const r = tmux.visibleRows('b');
      return /^ observing \(read-only\) │ running printf/.test(r[r.length - 1] ?? '') && r[0] === 'frame 50' ? r : undefined;
    }, 15_000);
    expect(rows[4]).toBe('         same place');
    expect(tmux.format('b', '#{alternate_on}')).toBe('1');
    const all = tmux.screen('b');
    expect(all).not.toMatch(/frame 49/);
    expect(all).toMatch(new RegExp(`earlier history is not shown here: \`astra log ${id}\` prints all of it`));
    // The observer's screen follows the program live, and gives the terminal back when it ends.
    tmux.key('a', 'C-]');
    tmux.type('a', 'c');
    await tmux.waitScreen('b', /turn cancelled/);
    expect(tmux.format('b', '#{alternate_on}')).toBe('0');
  });
});

describe.skipIf(skipTmux)('astra attach: commands on pipes', () => {
  it('keeps the line view (Ctrl-C cancels), and its output can neither set the title nor leave a mode on', async () => {
    const home = makeHome('apipe');
    const env = envFor(home, { ASTRA_TERMINAL: 'pipes' });
    const tmux = new Tmux(env);
    cleanups.push(() => cleanupHome(home));
    cleanups.push(() => tmux.destroy());
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    const title = tmux.format('a', '#{pane_title}');
    tmux.type('a', String.raw`printf '\033]2;EVIL\007\033[?1000hon pipes\n'; sleep 1`, true);
    await tmux.waitScreen('a', /^on pipes$/m);
    await tmux.waitScreen('a', /turn completed \(exit 0\)/);
    expect(tmux.format('a', MODES)).toBe('0 0 1');
    expect(tmux.format('a', '#{pane_title}')).toBe(title);
    tmux.type('a', 'echo begin; sleep 30', true);
    await tmux.waitStatus('a', /you control this session │ turn running │ Ctrl-C cancel/);
    tmux.key('a', 'C-c');
    await tmux.waitScreen('a', /turn cancelled/);
  });
});

describe.skipIf(skipTmux)('astra attach: widths', () => {
  it('a CJK and emoji title lays out on one status row, and the input line edits whole characters', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--title', '会话标题很长的名字 🚀🚀 emoji 日本語のタイトル']);
    tmux.start('a', ['attach', id], {}, 110);
    const status = await tmux.waitStatus('a', /you control this session │ idle │ Ctrl-D/);
    const rows = tmux.visibleRows('a').filter((r) => r.trim() !== '');
    // The status row is followed at once by the prompt: it did not wrap.
    expect(rows[rows.length - 1]).toMatch(/^❯/);
    // The title cut at 24 columns (CJK and emoji count two), the whole line within the pane.
    expect(status).toMatch(/ses_\w+ "会话标题很长的名字 🚀🚀…"$/);
    tmux.type('a', '你好👍🏽x');
    await tmux.waitScreen('a', /❯ 你好👍🏽x$/);
    tmux.key('a', 'BSpace');
    tmux.key('a', 'BSpace');
    await tmux.waitScreen('a', /❯ 你好$/);
    tmux.key('a', 'Left');
    tmux.type('a', '们');
    await tmux.waitScreen('a', /❯ 你们好$/);
    tmux.key('a', 'C-a');
    tmux.type('a', 'echo ');
    tmux.key('a', 'Enter');
    await tmux.waitScreen('a', /^你们好$/m);
    await tmux.waitStatus('a', /│ idle │/);
    // A multi-line paste (bracketed) is one input: both lines run in one turn.
    tmux.run(['set-buffer', '-b', 'p', 'echo pasted one\necho pasted two']);
    tmux.run(['paste-buffer', '-p', '-b', 'p', '-t', 'a']);
    await tmux.waitScreen('a', /❯ echo pasted one↵echo pasted two$/);
    tmux.key('a', 'Enter');
    await tmux.waitScreen('a', /^pasted one\npasted two\n/m);
    await tmux.waitStatus('a', /│ idle │/);
    // Up brings back the line sent before.
    tmux.key('a', 'Up');
    await tmux.waitScreen('a', /❯ echo pasted one↵echo pasted two$/);
    tmux.key('a', 'C-u');
    // In the status line of a running program too.
    tmux.type('a', 'sleep 30', true);
    const last = (await tmux.waitLastRow('a', /running sleep 30/)).at(-1)!;
    expect(last).toMatch(/…$/);
    tmux.key('a', 'C-]');
    tmux.type('a', 'c');
    await tmux.waitStatus('a', /│ idle │/);
  });
});
