// The screen worker's thread is stopped once it has no screen for a while (its heap, grown by the
// floods it parsed, is then given back: issue 26's soak), and a later screen starts it again. Through
// the built worker (dist/) in a child process; bench/soak.ts shows the memory, this only what must be true.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { ROOT, runNode } from '../helpers/processes.js';
import { requireBuild } from '../client/helpers.js';

const FIXTURE = path.join(ROOT, 'test', 'pty', 'fixtures', 'screen-worker-idle.mjs');

describe('the shared screen worker', () => {
  it('stops when it has had no screen for its idle time, and starts again for the next screen', async () => {
    requireBuild();
    const r = await runNode([FIXTURE], { ...process.env, ASTRA_SCREEN_WORKER_IDLE_MS: '100' }, 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({ first: true, runningWithScreen: true, stoppedWhenIdle: true, second: true, restarted: true });
  }, 90_000);
});
