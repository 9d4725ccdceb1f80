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

  // Node's recursive mkdir never returns there (ENOENT for a child of an existing directory, EEXIST
  // for the parent, for ever); a child process with a deadline, so a regression fails, not hangs.
  it.runIf(process.platform === 'linux')('under /proc: one line naming the directory that cannot be made and the fix, at once', async () => {
    const t = testHome();
    const r = await runCli(['new'], { ...t.env, ASTRA_HOME: '/proc/astra-test-home' }, 20_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('/proc/astra-test-home/run');
    expect(r.stderr).toContain('/proc does not allow directories to be made in it');
    expect(r.stderr).toContain('set ASTRA_HOME to a directory you can write');
    expect(fs.existsSync('/proc/astra-test-home')).toBe(false);
  });

  it.runIf(process.platform === 'linux')('a data or log directory under /proc (XDG_DATA_HOME, XDG_STATE_HOME): the error names it and the fix, nothing spins', async () => {
    const t = testHome();
    const base: NodeJS.ProcessEnv = { ...t.env, HOME: t.home, XDG_RUNTIME_DIR: path.join(t.home, 'xrun') };
    delete base.ASTRA_HOME;
    fs.mkdirSync(base.XDG_RUNTIME_DIR!, { mode: 0o700 });
    const data = await runCli(['new'], { ...base, XDG_DATA_HOME: '/proc/astra-test-data', XDG_STATE_HOME: path.join(t.home, 'state') }, 30_000);
    expect(data.code).not.toBe(0);
    expect(data.stderr).toMatch(/exited with code 2 before answering/);
    expect(data.stderr).toContain("Cannot create Astra's data directory /proc/astra-test-data/astra");
    expect(data.stderr).toContain('set ASTRA_HOME to a directory you can write');
    const logs = await runCli(['new'], { ...base, XDG_DATA_HOME: path.join(t.home, 'data'), XDG_STATE_HOME: '/proc/astra-test-state' }, 30_000);
    expect(logs.code).not.toBe(0);
    expect(logs.stderr.trim().split('\n')).toHaveLength(1);
    expect(logs.stderr).toContain("annot create Astra's log directory /proc/astra-test-state/astra");
  });

  it('relative: refused with the reason, naming what was given', async () => {
    const t = testHome();
    const r = await runCli(['sessions'], { ...t.env, ASTRA_HOME: 'relative/home' });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toMatch(/^astra: ASTRA_HOME must be an absolute path; got "relative\/home"/);
  });
});
