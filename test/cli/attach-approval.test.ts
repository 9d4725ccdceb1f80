// The controller's approval prompt in `astra attach` (issue 26), in a real terminal (tmux) on a real
// daemon: it shows the time left until the approval's deadline; when the approval expires the prompt
// goes, and a y typed for it just after is swallowed and explained, not put in the input line.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApprovalClock, timeLeft } from '../../cli/attach/attach-approval.js';
import { cleanupHome, envFor, makeHome, runCli } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from './tmux.js';

const skipTmux = skipWithout(TMUX);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(skipTmux)('astra attach: the approval prompt', () => {
  it('shows the time left; once the approval expired a y typed for it says "approval expired" and is not typed in', async () => {
    const home = makeHome('aapr');
    const env = envFor(home);
    const tmux = new Tmux(env);
    cleanups.push(() => cleanupHome(home));
    cleanups.push(() => tmux.destroy());
    const r = await runCli(['new', '--approval-timeout', '6'], env);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();
    // The moment after the prompt vanishes in which a y/n counts as late: long here, so that a
    // loaded machine's delay between seeing the prompt go and typing does not matter.
    tmux.start('a', ['attach', id], { ASTRA_LATE_KEY_MS: '60000' });
    await tmux.waitStatus('a', /you control this session/);

    tmux.type('a', 'echo too late', true);
    await tmux.waitScreen('a', /approve the command above\? \(\d+s left\) \[y\/n\]/);
    await tmux.waitScreen('a', /approval withdrawn[^\n]*expired/, 20_000);
    await tmux.waitStatus('a', /^ you control this session │ idle │/);
    tmux.type('a', 'y');
    await tmux.waitScreen('a', /astra: approval expired: that y was not sent, nor typed into the input line/);
    await tmux.waitScreen('a', /\n❯$/);
    expect(tmux.screen('a')).not.toMatch(/^too late$/m);

    // The line edits as usual after that, and the next approval is answered.
    tmux.type('a', 'echo in time', true);
    await tmux.waitScreen('a', /approval requested: run `echo in time`/);
    await tmux.waitScreen('a', /approve the command above\? \(\d+s left\) \[y\/n\]/);
    tmux.type('a', 'y');
    await tmux.waitScreen('a', /^in time$/m);
  });
});

describe('ApprovalClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('redraws the time left every second until answered, and says it as seconds, minutes or hours', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const refresh = vi.fn();
    const clock = new ApprovalClock({ refresh });
    clock.asked(1_000_000 + 45_000);
    expect(clock.left()).toBe('45s left');
    vi.advanceTimersByTime(3_000);
    expect(refresh).toHaveBeenCalledTimes(3);
    expect(clock.left()).toBe('42s left');
    clock.answered();
    vi.advanceTimersByTime(5_000);
    expect(refresh).toHaveBeenCalledTimes(3);
    expect(clock.left()).toBeUndefined();
    expect(timeLeft(245_000, 0)).toBe('4m 05s left');
    expect(timeLeft(2 * 3600_000 + 600_000, 0)).toBe('2h 10m left');
    expect(timeLeft(5, 10)).toBe('expiring');
  });

  it('takes a y or n as a late answer only within the moment after the prompt vanished, and only until another key', () => {
    let now = 0;
    const clock = new ApprovalClock({ refresh: () => undefined, lateKeyMs: 2_000, now: () => now });
    clock.asked(undefined);
    expect(clock.lateKey('y')).toBeUndefined(); // still asked: not late
    clock.vanished('approval expired');
    now = 500;
    expect(clock.lateKey('y')).toBe('approval expired');
    expect(clock.lateKey('N')).toBe('approval expired');
    expect(clock.lateKey('x')).toBeUndefined();
    expect(clock.lateKey('y')).toBeUndefined(); // the moment ended with the other key
    clock.vanished('approval expired');
    now = 2_501;
    expect(clock.lateKey('y')).toBeUndefined();
    clock.vanished('approval expired');
    clock.answered();
    expect(clock.lateKey('y')).toBeUndefined();
  });
});
