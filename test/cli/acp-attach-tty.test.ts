// `astra attach` on an acp session in a real terminal (tmux) on a real daemon running the fake ACP
// agent of test/engines/acp/: the agent's thought, plan and diff drawn, and its permission request
// answered from the footer prompt by the option's number.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupHome, envFor, makeHome, ROOT, runCli } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from './tmux.js';

const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(skipWithout(TMUX))('astra attach on an acp session (tmux)', () => {
  it('draws the thought, the plan and the diff; the footer offers the options by number and 3 rejects', async () => {
    const home = makeHome('aacp');
    const env = envFor(home);
    const tmux = new Tmux(env);
    cleanups.push(() => cleanupHome(home));
    cleanups.push(() => tmux.destroy());
    cleanups.push(async () => void (await runCli(['daemon', 'stop'], env)));
    const r = await runCli(['new', '--agent', `${process.execPath} ${AGENT}`], env, 40_000);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();

    tmux.start('a', ['attach', id]);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'rich 4', true);
    const screen = await tmux.waitScreen('a', /✔ turn completed/, 20_000);
    expect(screen).toMatch(/thinking: thinking…\nplan \(0\/1 done\)\n {2}\[~\] edit a\.txt \(high\)\n┌ edit {2}Edit a\.txt {2}\[pending\] {2}\(t1\)/);
    expect(screen).toMatch(/│ @@ -1,1 \+1,1 @@\n│ -old\n│ \+xxxx\n/);
    expect(screen).toMatch(/^done$/m);

    tmux.type('a', 'permission', true);
    await tmux.waitScreen('a', /— 1 Allow once · 2 Always allow · 3 Reject/, 20_000);
    await tmux.waitScreen('a', /approve the command above\?( \([^)]*\))? \[1-3\/y\/n\]/);
    await tmux.waitStatus('a', /approval needed │ 1-3 pick · y approve · n deny/);
    tmux.type('a', '3');
    const after = await tmux.waitScreen('a', /denied by astra attach[^\n]*\(option no\)/, 20_000);
    expect(after).toMatch(/turn (completed|cancelled|denied)/);
  });
});
