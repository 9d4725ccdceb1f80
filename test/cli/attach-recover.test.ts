// `astra attach` coming back by itself (issue 26), in real terminals (tmux) on a real daemon: run
// again in the same terminal after a crash, it reclaims control within the grace period; after
// `astra daemon stop`, a daemon started elsewhere is noticed and reattached to. Each test: its own
// ASTRA_HOME and tmux server.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cleanupHome, envFor, makeHome, runCli, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux, shq } from './tmux.js';

const skipTmux = skipWithout(TMUX);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(extra: Record<string, string> = {}): { home: string; env: NodeJS.ProcessEnv; tmux: Tmux } {
  const home = makeHome('arec');
  const env = envFor(home, extra);
  const tmux = new Tmux(env);
  cleanups.push(() => cleanupHome(home));
  cleanups.push(() => tmux.destroy());
  return { home, env, tmux };
}

async function newSession(env: NodeJS.ProcessEnv, args: string[] = []): Promise<string> {
  const r = await runCli(['new', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

async function sessionJson(env: NodeJS.ProcessEnv, id: string): Promise<{ controller: { pid: number; graceUntil?: number } | null }> {
  const r = await runCli(['sessions', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { id: string; controller: { pid: number; graceUntil?: number } | null }[]).find((x) => x.id === id)!;
}

/** A pane running a shell (one terminal, one tty), in which `astra` can be run again and again. */
function startShell(tmux: Tmux, env: NodeJS.ProcessEnv, name: string): void {
  tmux.run(['new-session', '-d', '-x', '120', '-y', '40', '-s', name, '-e', `ASTRA_HOME=${env.ASTRA_HOME}`, '-e', 'PS1=$ ', 'sh']);
}

function astraCommand(args: string[]): string {
  return [process.execPath, CLI, ...args].map(shq).join(' ');
}

describe.skipIf(skipTmux)('astra attach after a crash', () => {
  it('run again in the same terminal, it reclaims control within the grace period; another terminal does not', async () => {
    // A long grace: the reclaim must come from the token, not from the grace running out.
    const { home, env, tmux } = setup({ ASTRA_LEASE_GRACE_MS: '120000' });
    const id = await newSession(env, ['--approval', 'auto', '--title', 'crashy']);
    startShell(tmux, env, 'a');
    tmux.type('a', astraCommand(['attach', id]), true);
    await tmux.waitStatus('a', /you control this session/);
    const first = (await sessionJson(env, id)).controller!.pid;
    // The token is kept in a private file of the runtime directory.
    const file = path.join(home, 'run', 'attach', `${id}.json`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    process.kill(first, 'SIGKILL');
    await waitFor('the lease to be in grace', async () => (await sessionJson(env, id)).controller?.graceUntil !== undefined || undefined, 15_000);
    // Another terminal attached meanwhile only observes: the control is reserved for the crashed one.
    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing │ idle │ .*\(disconnected; reserved until/);

    // The crashed attach left the terminal raw (Enter is a bare \r): put it back as a user would.
    tmux.type('a', 'stty sane; clear');
    tmux.key('a', 'C-j');
    tmux.type('a', astraCommand(['attach', id]), true);
    await tmux.waitScreen('a', /you control ses_\w+ again: reclaimed from the attach in this terminal/);
    await tmux.waitStatus('a', /^ you control this session │ idle/);
    const second = (await sessionJson(env, id)).controller!;
    expect(second.pid).not.toBe(first);
    expect(second.graceUntil).toBeUndefined();
    await tmux.waitStatus('b', /^ observing │ idle │ .*controlled by astra attach \(pid \d+\) │/);
    tmux.type('a', 'echo reclaimed', true);
    await tmux.waitScreen('a', /^reclaimed$/m);

    // A clean detach releases control; the waiting terminal takes it (and keeps its own token), and
    // when that one detaches too no token is left behind.
    tmux.key('a', 'C-d');
    await tmux.waitScreen('a', /detached from ses_\w+/);
    await tmux.waitStatus('b', /^ you control this session │ idle/);
    tmux.key('b', 'C-d');
    await tmux.waitScreen('b', /detached from ses_\w+/);
    await waitFor('the token file to go', () => !fs.existsSync(file) || undefined);
  });
});

describe.skipIf(skipTmux)('astra attach after astra daemon stop', () => {
  it('notices a daemon started elsewhere and reattaches by itself, taking control again and repeating nothing', async () => {
    const { env, tmux } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'echo before', true);
    await tmux.waitScreen('a', /^before$/m);
    await tmux.waitStatus('a', /│ idle │/);

    expect((await runCli(['daemon', 'stop'], env)).code).toBe(0);
    await tmux.waitStatus('a', /daemon stopped │ Enter restart · Ctrl-D leave/);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    await tmux.waitScreen('a', /a daemon was started elsewhere \(pid \d+\); reattaching…/);
    await tmux.waitStatus('a', /^ you control this session │ idle │/, 20_000);

    tmux.type('a', 'echo after', true);
    const screen = await tmux.waitScreen('a', /^after$/m);
    expect(screen.match(/^before$/gm)).toHaveLength(1);
  });
});
