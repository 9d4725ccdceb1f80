// `astra attach` says when the session's disk is full (issue 26), in a real terminal (tmux) on a real
// daemon whose data directory is a small tmpfs the test fills while a turn prints: a line and the
// status line say what happened and what to do, and both change once space is freed — without
// either, the stream would just look stopped. Root only (the mount): elsewhere skipped with one
// line, and failing under CI=true.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupHome, envFor, isAlive, makeHome, processesOfHome, runCli, waitFor } from '../helpers/processes.js';
import { canMountSmallDisk, fillDisk, mountSmallDisk, noteSmallDiskSkip } from '../helpers/small-disk.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from './tmux.js';

noteSmallDiskSkip("attach's full-disk test");
const skip = skipWithout(TMUX) || !canMountSmallDisk;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(skip)('astra attach when the disk fills', () => {
  it('prints what happened and what to do, keeps it in the status line, and clears it once space is freed', async () => {
    const home = makeHome('adisk');
    const { data, unmount } = mountSmallDisk(home);
    cleanups.push(async () => {
      const pids = processesOfHome(home);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await waitFor('the processes to die', () => pids.every((p) => !isAlive(p)), 10_000).catch(() => undefined);
      unmount();
      await cleanupHome(home);
    });
    const env = envFor(home, { ASTRA_IDLE_TIMEOUT_MS: '60000' });
    const tmux = new Tmux(env);
    cleanups.push(() => tmux.destroy());
    const made = await runCli(['new', '--approval', 'auto', '--title', 'fills'], env);
    expect(made.code, made.stderr).toBe(0);
    const id = made.stdout.trim();

    // Wide enough for the status line to hold the temporary directory's long path.
    tmux.start('a', ['attach', id], {}, 220);
    await tmux.waitStatus('a', /you control this session │ idle/);
    tmux.type('a', 'while :; do echo tick; sleep 0.2; done', true);
    await tmux.waitScreen('a', /^tick$/m);
    const filler = fillDisk(data);

    // The command has the screen: the status line says it at once; the line waits until the screen is given back.
    const journal = `${data}/sessions/${id}/journal.astra`;
    await tmux.waitStatus('a', /│ disk full: free space on \S+/, 30_000);
    expect(tmux.statusLine('a')).toContain(`disk full: free space on ${journal}`);

    fs.rmSync(filler);
    // The stopped turn's end arrives with the held events: the screen is given back and the lines printed.
    await tmux.waitScreen('a', /astra: the disk has space again: the session's events are saved and arrive again/, 30_000);
    expect(tmux.screen('a')).toContain(`astra: disk full: the session's events cannot be saved — free space on ${journal}; nothing is lost, it resumes by itself`);
    await tmux.waitStatus('a', /^ you control this session │ idle │ Ctrl-D detach/, 30_000);
    expect(tmux.statusLine('a')).not.toContain('disk full');
  }, 120_000);
});
