// `astra attach` in real terminals (tmux): two panes on one session, approvals, refusal, takeover,
// detach with a running turn and re-attach with replay. Each test: its own ASTRA_HOME and tmux server.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupHome, envFor, isAlive, makeHome, runCli, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { sessionRows } from './cli-helpers.js';
import { Tmux } from './tmux.js';

const skipTmux = skipWithout(TMUX);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(): { home: string; env: NodeJS.ProcessEnv; tmux: Tmux } {
  const home = makeHome('acli');
  const env = envFor(home);
  const tmux = new Tmux(env);
  cleanups.push(() => cleanupHome(home));
  cleanups.push(() => tmux.destroy());
  return { home, env, tmux };
}

async function newSession(env: NodeJS.ProcessEnv, args: string[] = []): Promise<string> {
  const r = await runCli(['new', ...args], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

/** The session's row as `astra sessions --json` prints it, read in-process (cli-helpers sessionRows). */
async function sessionJson(env: NodeJS.ProcessEnv, id: string): Promise<Record<string, unknown>> {
  const s = (await sessionRows(env)).find((x) => x.id === id);
  expect(s).toBeDefined();
  return s!;
}

describe.skipIf(skipTmux)('astra attach in two terminals', () => {
  it('the controller runs and approves a command, the observer sees it all, is refused, and takes control', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--title', 'tour']);

    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', id]);
    // State and keys first, names last: the actionable part survives a narrow window.
    await tmux.waitStatus('b', /^ observing │ idle │ Ctrl-T take · Ctrl-D detach │ controlled by astra attach \(pid \d+\) │ ses_\w+/);
    await tmux.waitScreen('b', /controls ses_\w+; observing — press Ctrl-T/);

    tmux.type('a', 'echo hello; sleep 1; echo done', true);
    await tmux.waitScreen('a', /approve the command above\? (\(\S+ ?\S* left\) )?\[y\/n\]/);
    await tmux.waitStatus('a', /approval needed │ y approve · n deny/);
    // The approval is printed once (it was three times: event, prompt line and footer).
    expect(tmux.screen('a').match(/`echo hello; sleep 1; echo done`/g)).toHaveLength(1);
    // The observer sees the prompt as information only.
    await tmux.waitScreen('b', /approval requested: run `echo hello; sleep 1; echo done`[^\n]* — waiting for astra attach \(pid \d+\) to answer\n/);
    expect(tmux.screen('b').match(/`echo hello; sleep 1; echo done`/g)).toHaveLength(1);
    expect(tmux.screen('b')).not.toMatch(/\[y\/n\]/);

    tmux.type('a', 'y');
    for (const pane of ['a', 'b']) {
      const screen = await tmux.waitScreen(pane, /turn completed \(exit 0\)/);
      expect(screen).toMatch(/approved by astra attach/);
      expect(screen).toMatch(/^hello$/m);
      expect(screen).toMatch(/^done$/m);
      expect(screen.indexOf('hello')).toBeLessThan(screen.lastIndexOf('done'));
    }

    // The observer's typing is refused with the hint, and starts nothing.
    tmux.type('b', 'echo sneaky', true);
    await tmux.waitScreen('b', /you are observing \(astra attach \(pid \d+\) controls this session\): press Ctrl-T to take control, or attach with --take/);
    const before = await sessionJson(env, id);
    expect(before.runningTurnId).toBeUndefined();
    expect(before.observers).toBe(1);
    expect(before.controller).toMatchObject({ clientName: 'astra attach' });
    expect(tmux.screen('a')).not.toMatch(/sneaky/);

    // Take over with the take key: the former controller's status line says who took it.
    tmux.key('b', 'C-t');
    await tmux.waitStatus('b', /you control this session/);
    const bPid = (await sessionJson(env, id)).controller as { pid: number };
    await tmux.waitStatus('a', new RegExp(`^ observing │ idle │ Ctrl-T take · Ctrl-D detach │ control taken over by astra attach \\(pid ${bPid.pid}\\)`));
    await tmux.waitScreen('a', /control taken over by astra attach \(pid \d+\); now observing — Ctrl-T takes it back/);

    // The new controller works; the former one now only watches.
    tmux.type('b', 'echo second', true);
    await tmux.waitScreen('b', /approval requested: run `echo second`[\s\S]*approve the command above\? (\(\S+ ?\S* left\) )?\[y\/n\]/);
    tmux.type('b', 'y');
    await tmux.waitScreen('a', /^second$/m);
    await tmux.waitScreen('a', /turn completed \(exit 0\)[\s\S]*turn completed \(exit 0\)/);
    tmux.type('a', 'x');
    await tmux.waitScreen('a', /you are observing/);

    for (const pane of ['a', 'b']) tmux.key(pane, 'C-d');
    for (const pane of ['a', 'b']) await tmux.waitScreen(pane, /detached from ses_\w+ \(Ctrl-D\)[\s\S]*\[exited 0\]/);
    // The daemon notices the closed connections on its own time.
    await waitFor('no controller and no observers', async () => {
      const after = await sessionJson(env, id);
      return after.controller === null && after.observers === 0 ? true : undefined;
    });
  });

  it('detaching during a running turn leaves it running, and re-attaching replays everything', async () => {
    const { home, env, tmux } = setup();
    const go = path.join(home, 'go');
    const id = await newSession(env, ['--approval', 'auto', '--title', 'long']);

    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', `echo first; while [ ! -e ${go} ]; do sleep 0.05; done; echo second`, true);
    await tmux.waitScreen('a', /^first$/m);
    // "turn running" on the input line's footer; "running <command>" while a pseudo-terminal has the screen.
    await tmux.waitStatus('a', /turn running| │ running echo first/);
    // The prefix key detaches whether the command has a terminal (where Ctrl-D is the program's) or pipes.
    tmux.key('a', 'C-]');
    tmux.type('a', 'd');
    await tmux.waitScreen('a', /detached from ses_\w+ \(Ctrl-\] d\); the turn keeps running[\s\S]*\[exited 0\]/);

    const s = await sessionJson(env, id);
    expect(s.runningTurnId).toEqual(expect.any(String));
    expect(s.controller).toBeNull(); // released on detach, not left in grace

    tmux.start('b', ['attach', id]);
    // Live: "── live ──" after the replay on pipes; the status line while the command has the screen.
    await tmux.waitStatus('b', /you control this session │ turn running │ Ctrl|^ you control │ running echo first[^│]*│ keys/);
    const replayed = tmux.screen('b');
    expect(replayed).toMatch(/session created: "long"/);
    expect(replayed).toMatch(/❯ echo first;/);
    expect(replayed).toMatch(/^first$/m);
    expect(replayed).not.toMatch(/^second$/m);

    fs.writeFileSync(go, '');
    const screen = await tmux.waitScreen('b', /turn completed \(exit 0\)/);
    expect(screen).toMatch(/^first$[\s\S]*^second$/m);
    expect(screen.match(/^first$/gm)).toHaveLength(1);
    await tmux.waitStatus('b', /│ idle │/);

    // Ctrl-C with nothing running and an empty line detaches too.
    tmux.key('b', 'C-c');
    await tmux.waitScreen('b', /detached from ses_\w+ \(Ctrl-C\)[\s\S]*\[exited 0\]/);
    await waitFor('the daemon to see no subscriber', async () => (await sessionJson(env, id)).observers === 0);
  });

  it('Ctrl-] c cancels the running turn, --observe never takes control, --take does', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);

    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('o', ['attach', '--observe', id.slice(0, 12)]);
    await tmux.waitStatus('o', /^ observing \(read-only\) │ idle │ Ctrl-D detach │ controlled by/);

    tmux.type('a', 'echo begin; sleep 30', true);
    await tmux.waitScreen('a', /\[y\/n\]/);
    tmux.type('a', 'y');
    await tmux.waitScreen('a', /^begin$/m);
    // The prefix key cancels whether the command has a terminal (where Ctrl-C is the program's) or pipes.
    tmux.key('a', 'C-]');
    tmux.type('a', 'c');
    await tmux.waitScreen('a', /cancelling the turn/);
    await tmux.waitScreen('o', /turn cancelled/);
    await tmux.waitStatus('a', /│ idle │/);

    // Ctrl-C at an approval prompt cancels the turn, and the prompt goes with it.
    tmux.type('a', 'echo never', true);
    await tmux.waitStatus('a', /approval needed/);
    tmux.key('a', 'C-c');
    await tmux.waitScreen('o', /turn cancelled[\s\S]*turn cancelled/);
    await tmux.waitStatus('a', /│ idle │/);
    expect(tmux.screen('a')).not.toMatch(/^never$/m);
    tmux.type('a', 'abc');
    await tmux.waitScreen('a', /❯ abc$/);

    tmux.start('t', ['attach', '--take', id]);
    await tmux.waitStatus('t', /you control this session/);
    await tmux.waitStatus('a', /control taken over by astra attach/);
    await tmux.waitStatus('o', /observing \(read-only\) │ idle │ Ctrl-D detach │ controlled by astra attach/);
    expect(tmux.screen('o')).not.toMatch(/you took control|you control/);

    // --observe is read-only, as `tmux attach -r`: Ctrl-T is refused with a hint, and control stays put.
    const holder = (await sessionJson(env, id)).controller as { pid: number };
    tmux.type('o', 'x');
    await tmux.waitScreen('o', /read-only \(--observe\): typing is ignored/);
    tmux.key('o', 'C-t');
    await tmux.waitScreen('o', /this terminal is read-only \(--observe\); to control the session, detach and run `astra attach ses_\w+`/);
    expect(((await sessionJson(env, id)).controller as { pid: number }).pid).toBe(holder.pid);
    await tmux.waitStatus('o', /^ observing \(read-only\)/);
  });
});

describe.skipIf(skipTmux)('astra attach: who controls, and saying so', () => {
  it('closing the window (SIGHUP) releases control at once, and a waiting attach takes it', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    const aPid = ((await sessionJson(env, id)).controller as { pid: number }).pid;
    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing │/);

    tmux.close('a');
    // Well inside the 30 s grace a crash would get: the window was closed on purpose.
    await tmux.waitStatus('b', /^ you control this session │ idle/, 10_000);
    const screen = tmux.screen('b');
    expect(screen, screen).toMatch(new RegExp(`astra attach \\(pid ${aPid}\\) released control`));
    expect(screen).not.toMatch(/lost its connection/);
    expect(screen).toMatch(/you control ses_\w+/);
    expect(((await sessionJson(env, id)).controller as { pid: number }).pid).not.toBe(aPid);
    // And the closed window's attach is gone, not left behind writing to a dead terminal.
    await waitFor('the hung-up attach to exit', () => !isAlive(aPid) || undefined);
    tmux.type('b', 'echo from b', true);
    await tmux.waitScreen('b', /^from b$/m);
  });

  it('after a crash, a terminal attached meanwhile takes control when the grace period ends', async () => {
    const { env: base, tmux } = setup();
    // The grace must outlast a CLI read and a second attach's start and first draw on a loaded CI
    // machine (about 0.35 s here under a CPU hog): 5 s, not the 1.5 s it was.
    const env = { ...base, ASTRA_LEASE_GRACE_MS: '5000' };
    const id = await newSession(env, ['--approval', 'auto']);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    const aPid = ((await sessionJson(env, id)).controller as { pid: number }).pid;
    process.kill(aPid, 'SIGKILL'); // a crash: no release, the lease waits in grace
    await waitFor('the lease to be in grace', async () => ((await sessionJson(env, id)).controller as { graceUntil?: number } | null)?.graceUntil !== undefined || undefined);

    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing │ idle │ Ctrl-T take · Ctrl-D detach │ controlled by astra attach \(pid \d+\) \(disconnected; reserved until/);
    await tmux.waitStatus('b', /^ you control this session │ idle/, 20_000);
    expect(tmux.screen('b')).toMatch(/did not come back; control is free/);
  });

  it('a terminal whose control was taken shows the current state once the taker leaves, and does not grab control back; a 100-column status line keeps state and keys', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--approval', 'auto', '--title', 'a rather long title for the status line']);
    tmux.start('a', ['attach', id], {}, 100);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', '--take', id]);
    await tmux.waitStatus('b', /you control this session/);
    const taken = await tmux.waitStatus('a', /^ observing │ idle │ Ctrl-T take · Ctrl-D detach │ control taken over by astra attach \(pid \d+\)/);
    expect(taken.length).toBeLessThanOrEqual(100);

    tmux.key('b', 'C-d');
    await tmux.waitScreen('b', /\[exited 0\]/);
    await tmux.waitScreen('a', /control is free — press Ctrl-T to take it/);
    const now = await tmux.waitStatus('a', /^ observing │ idle │ Ctrl-T take · Ctrl-D detach │ no controller │ ses_\w+/);
    expect(now).not.toMatch(/taken over/);
    expect((await sessionJson(env, id)).controller).toBeNull();

    tmux.key('a', 'C-t');
    await tmux.waitStatus('a', /^ you control this session │ idle │ Ctrl-D detach │ ses_\w+ "a rather/);
  });

  it('control that comes to a watching terminal brings the pending approval, said once, and it answers it', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing │/);
    tmux.type('a', 'echo handed over', true);
    await tmux.waitScreen('b', /approval requested: run `echo handed over`[^\n]* — waiting for astra attach/);
    tmux.key('a', 'C-d');
    await tmux.waitScreen('b', /you control ses_\w+ now: the approval of `echo handed over` is yours to answer \(y or n\)/);
    await tmux.waitStatus('b', /^ you control this session │ approval needed │ y approve · n deny/);
    tmux.type('b', 'y');
    await tmux.waitScreen('b', /^handed over$/m);
  });

  it('a denied command is reported as denied, not as a cancelled turn', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'echo nope', true);
    await tmux.waitStatus('a', /approval needed/);
    tmux.type('a', 'n');
    const screen = await tmux.waitScreen('a', /✘ turn denied: the command was not run/);
    expect(screen).toMatch(/^denied by astra attach$/m);
    expect(screen).not.toMatch(/turn cancelled/);
    expect(screen).not.toMatch(/^nope$/m);
  });
});

describe.skipIf(skipTmux)('astra rm on a terminal', () => {
  it('asks before deleting: anything but y keeps the session, y deletes it', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--title', 'precious']);
    tmux.start('k', ['rm', 'precious']);
    await tmux.waitScreen('k', new RegExp(`delete ${id} "precious" and its whole history for good\\? \\[y/N\\]`));
    tmux.type('k', 'no', true);
    await tmux.waitScreen('k', new RegExp(`kept ${id}\\n\\[exited 0\\]`));
    expect(await sessionJson(env, id)).toMatchObject({ title: 'precious' });

    tmux.start('d', ['rm', id]);
    await tmux.waitScreen('d', /\[y\/N\]/);
    tmux.type('d', 'y', true);
    await tmux.waitScreen('d', new RegExp(`deleted ${id} "precious"\\n\\[exited 0\\]`));
    const r = await runCli(['sessions', '--json', '--all'], env);
    expect(JSON.parse(r.stdout)).toEqual([]);
  });
});

describe.skipIf(skipTmux)('astra attach across daemon trouble', () => {
  it('a daemon restart is a one-line notice; the view reconnects, keeps control and goes on', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'echo before', true);
    await tmux.waitScreen('a', /^before$/m);

    const r = await runCli(['daemon', 'restart'], env);
    expect(r.code).toBe(0);
    await tmux.waitScreen('a', /connection to the daemon lost[^\n]*; reconnecting…/);
    await tmux.waitScreen('a', /reconnected to a restarted daemon \(pid \d+\); still the controller/);
    await tmux.waitStatus('a', /you control this session │ idle │/);

    tmux.type('a', 'echo after', true);
    const screen = await tmux.waitScreen('a', /^after$/m);
    // The history is not shown twice after resubscribing.
    expect(screen.match(/^before$/gm)).toHaveLength(1);
  });
});
