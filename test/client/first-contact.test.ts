// What `astra` says on first contact with a daemon or a home it cannot use: a hung daemon is named
// after a second and the failure names its pid and the fix; a bad ASTRA_HOME gets one clear line.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRecordFile, runCli } from '../helpers/processes.js';
import { testHome } from './helpers.js';

describe('a daemon that accepts connections but does not answer (SIGSTOPped)', () => {
  it('astra sessions says after about a second that it is waiting for pid N, then fails naming the pid and the fix', async () => {
    const t = testHome();
    expect((await runCli(['sessions'], t.env)).code).toBe(0);
    const pid = readRecordFile(t.home)!.pid;
    process.kill(pid, 'SIGSTOP');
    try {
      const r = await runCli(['sessions'], t.env, 20_000);
      expect(r.code).not.toBe(0);
      const lines = r.stderr.trim().split('\n');
      expect(lines[0]).toBe(`astra: waiting for the daemon (pid ${pid}) to answer…`);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(`the daemon (pid ${pid}) did not answer`);
      expect(lines[1]).toContain('astra daemon restart');
      expect(lines[1]).toContain('astra daemon stop --force');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });
});

describe('an ASTRA_HOME Astra cannot use', () => {
  it('pointing at a file: one line naming the file and what to do, no raw ENOTDIR', async () => {
    const t = testHome();
    const file = path.join(t.home, 'not-a-dir');
    fs.writeFileSync(file, '');
    const r = await runCli(['sessions'], { ...t.env, ASTRA_HOME: file });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`${file} is a file, not a directory`);
    expect(r.stderr).toContain('point ASTRA_HOME at a directory');
    expect(r.stderr).not.toContain('ENOTDIR');
  });

  it('relative: refused with the reason, naming what was given', async () => {
    const t = testHome();
    const r = await runCli(['sessions'], { ...t.env, ASTRA_HOME: 'relative/home' });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toMatch(/^astra: ASTRA_HOME must be an absolute path; got "relative\/home"/);
  });
});
