// A full disk for tests (issue 26): a 4 MiB tmpfs mounted as a home's data directory, filled by a
// file until ENOSPC and freed by removing it. Mounting needs root on Linux: elsewhere the test file
// skips with one line, and fails under CI=true (nothing is skipped there).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const canMountSmallDisk = process.platform === 'linux' && process.getuid?.() === 0;

/** Call at the top of a test file: one line when the tests cannot run; an error under CI=true. */
export function noteSmallDiskSkip(what: string): void {
  if (canMountSmallDisk) return;
  const why = 'mounting a tmpfs needs root on Linux';
  if (process.env.CI === 'true') throw new Error(`${what} cannot run: ${why}; under CI=true nothing is skipped`);
  process.stderr.write(`skipped: ${what} (${why})\n`);
}

/** At most this much filler: never fill anything but the test's own small tmpfs. */
const MAX_FILL_BYTES = 16 * 1024 * 1024;

/** Mounts a 4 MiB tmpfs at `<home>/data`; returns the directory and what unmounts it. */
export function mountSmallDisk(home: string): { data: string; unmount: () => void } {
  const data = path.join(home, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', data], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) throw new Error(`mount -t tmpfs failed: ${(r.stderr || r.error?.message || '').trim()}`);
  return { data, unmount: () => void spawnSync('umount', ['-l', data], { timeout: 10_000 }) };
}

/** Fills the small tmpfs at `dir` to ENOSPC; returns the filler file (remove it to free the space). */
export function fillDisk(dir: string): string {
  const { bsize, blocks } = fs.statfsSync(dir);
  if (bsize * blocks > MAX_FILL_BYTES) throw new Error(`${dir} is not the test's small tmpfs; refusing to fill it`);
  const file = path.join(dir, 'filler');
  const fd = fs.openSync(file, 'w');
  try {
    for (let n = 0; n < MAX_FILL_BYTES; ) n += fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
    throw new Error('the file system did not fill up');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    fs.closeSync(fd);
  }
  return file;
}
