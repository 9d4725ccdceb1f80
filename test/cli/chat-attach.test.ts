// `astra attach` on a chat session in real terminals (tmux): the assistant's text as it streams, the
// model's tool call as a card with the approve keys for the controller only, and the tool's result.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { cleanupHome, envFor, makeHome, runCli } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from './tmux.js';

const cleanups: (() => Promise<void> | void)[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe.skipIf(skipWithout(TMUX))('astra attach on a chat session', () => {
  it('streams the answer, shows the tool call as a card the controller approves with y (the observer only watches), then the result and the final answer', async () => {
    const server = await startModelServerProcess(['tool-call', 'final-answer'], children);
    const home = makeHome('achat');
    const env = envFor(home, { ASTRA_CHAT_BASE_URL: server.baseUrl });
    const tmux = new Tmux(env);
    cleanups.push(() => cleanupHome(home));
    cleanups.push(() => tmux.destroy());
    // The daemon takes engine settings (the model server's URL) only from `astra daemon start`.
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, started.stderr).toBe(0);
    const r = await runCli(['new', '--engine', 'chat', '--model', 'llama3.1'], env);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();

    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.start('b', ['attach', id]);
    await tmux.waitStatus('b', /^ observing/);

    tmux.type('a', 'what is in this directory?', true);
    for (const pane of ['a', 'b']) {
      const card = await tmux.waitScreen(pane, /┌ tool shell {2}\(call_abc123\)\n│ \$ ls -1 {3}in \./);
      expect(card).toMatch(/❯ what is in this directory\?/);
    }
    await tmux.waitScreen('a', /\[y\/n\]/);
    await tmux.waitStatus('a', /approval needed │ y approve · n deny/);
    expect(tmux.screen('b')).not.toMatch(/\[y\/n\]/);

    tmux.type('a', 'y');
    for (const pane of ['a', 'b']) {
      const screen = await tmux.waitScreen(pane, /turn completed/);
      expect(screen).toMatch(/└ tool succeeded, exit 0/);
      expect(screen).toMatch(/The directory has two files\.\n/);
      // The card comes before the result, the result before the answer.
      expect(screen.indexOf('┌ tool shell')).toBeLessThan(screen.indexOf('└ tool succeeded'));
      expect(screen.indexOf('└ tool succeeded')).toBeLessThan(screen.indexOf('The directory has two files.'));
    }
    expect((await server.requests()).length).toBe(2);
  });
});
