// The documented example program runs as written against a real daemon.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readRecordFile, runNode } from '../helpers/processes.js';
import { testHome } from './helpers.js';

describe('examples/watch-session.mjs', () => {
  it('starts the daemon, approves and runs the command, prints its output and the completed turn, and exits 0', async () => {
    const t = testHome();
    const r = await runNode([path.join(ROOT, 'examples', 'watch-session.mjs'), 'echo hello from the example'], t.env, 30_000);
    const pid = readRecordFile(t.home)?.pid;
    if (pid) t.pids.push(pid);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('approve? echo hello from the example');
    expect(r.stdout).toContain('$ echo hello from the example');
    expect(r.stdout).toContain('hello from the example\n');
    expect(r.stdout).toMatch(/turn completed \(exit 0\)/);
  });
});
