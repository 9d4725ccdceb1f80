// A command that ends while its output is not being read (the consumer paused: a full disk holds a
// turn's output for as long as it lasts) must not stop the event loop: the drain guard's marker goes
// into a terminal whose buffer may be full. Run in a child process (dist/), so a blocked loop fails
// this test by its deadline instead of hanging the test worker.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { ROOT, jsonLines, startNode, isAlive } from '../helpers/processes.js';
import { requireBuild } from '../client/helpers.js';

const FIXTURE = path.join(ROOT, 'test', 'pty', 'fixtures', 'paused-exit.mjs');
const ROUNDS = 6;

describe.runIf(process.platform === 'linux')('a command cancelled while its reader is paused and its terminal full', () => {
  it('ends once reading resumes, with its buffered output read, and the event loop keeps running meanwhile', async () => {
    requireBuild();
    const child = startNode([FIXTURE, String(ROUNDS)], process.env);
    try {
      const out = jsonLines(child);
      for (let round = 1; round <= ROUNDS; round++) {
        const at = (key: string) => (l: unknown) => (l as { round?: number }).round === round && key in (l as object);
        await out.next(at('blocked'), 20_000);
        // Before the fix the loop blocked in the marker's write here (in about half the rounds): nothing more was printed.
        await out.next(at('gone'), 20_000);
        const end = (await out.next(at('done'), 30_000)) as { done: { cancelled: boolean; tty: boolean } | string; bytesAfterResume: number };
        expect(end.done).toMatchObject({ cancelled: true, tty: true });
        // What the program wrote before it was cancelled is read, not dropped.
        expect(end.bytesAfterResume).toBeGreaterThan(0);
      }
    } finally {
      if (child.pid !== undefined && isAlive(child.pid)) child.kill('SIGKILL');
    }
  }, 120_000);
});
