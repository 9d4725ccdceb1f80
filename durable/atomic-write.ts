// Durable file writes, shared by discovery (the record), runtime (meta files, journals) and daemon
// (leases.json). A leaf: it imports nothing of Astra's.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0600: everything Astra writes is private). */
  mode?: number;
  /** fsync the file and its directory, so the new content survives a power loss (default true). */
  durable?: boolean;
}

/**
 * Replaces `file` atomically: a private temp file in the same directory, fsync, rename over the
 * target, fsync the directory. Readers see the old content or the new, never a mix; on any failure
 * the temp file is removed and the target is left as it was.
 */
export function writeFileAtomic(file: string, content: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  const mode = opts.mode ?? 0o600;
  const durable = opts.durable !== false;
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, 'wx', mode);
    if (process.platform !== 'win32') fs.fchmodSync(fd, mode);
    fs.writeFileSync(fd, content);
    if (durable) fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
  } catch (e) {
    if (fd !== undefined) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  if (durable) fsyncDir(dir);
}

/** Makes a rename, create or unlink in `dir` durable. Directories cannot be opened for fsync on Windows. */
export function fsyncDir(dir: string): void {
  if (process.platform === 'win32') return;
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** fsyncDir on the thread pool. */
export async function fsyncDirAsync(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
