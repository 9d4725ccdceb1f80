// A full disk never poisons a journal: the write that ran out of room is cut back to the last whole
// record, everything appended stays queued, flush()/sync() answer disk_full naming the file, and
// once space is freed retry() gets it all written — the same instance, no restart. Other I/O errors
// still poison the journal. A small tmpfs mounted by the test is the full disk (root only); an
// error injected at fs.writevSync/fs.writeSync covers the same paths everywhere.
import { spawnSync } from 'node:child_process';
import fsDefault from 'node:fs';
import * as fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAstraError } from '../../protocol/index.js';
import { JOURNAL_HEADER_BYTES, RecordKind, SessionJournal } from '../../runtime/index.js';
import { recordingLogger, tempDir } from '../runtime/helpers.js';

const dirs: string[] = [];
const mounts: string[] = [];
const realWriteSync = fsDefault.writeSync;
const realWritevSync = fsDefault.writevSync;
afterEach(() => {
  fsDefault.writeSync = realWriteSync;
  fsDefault.writevSync = realWritevSync;
  syncBuiltinESMExports();
  for (const m of mounts.splice(0)) {
    // A failed test may leave a journal's descriptor open (the mount is then busy): detach lazily.
    let r = spawnSync('umount', [m], { encoding: 'utf8', timeout: 10_000 });
    if (r.status !== 0) r = spawnSync('umount', ['-l', m], { encoding: 'utf8', timeout: 10_000 });
    if (r.status !== 0) throw new Error(`umount ${m} failed (${r.stderr.trim()}); unmount it by hand`);
    fs.rmSync(m, { recursive: true, force: true });
  }
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

/** A tmpfs of `mib` MiB mounted on a new directory (unmounted in afterEach), or why there is none. */
function smallDisk(mib: number): string | { why: string } {
  if (process.getuid?.() !== 0) return { why: 'not running as root, so no tmpfs can be mounted' };
  const d = tempDir('astra-full-');
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tmpfs', d], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) {
    fs.rmSync(d, { recursive: true, force: true });
    return { why: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || '').trim()}` };
  }
  mounts.push(d);
  return d;
}

const probe = smallDisk(1);
const noTmpfs = typeof probe === 'string' ? undefined : probe.why;
if (noTmpfs) process.stderr.write(`skipped: journal tests on a full tmpfs (${noTmpfs})\n`);
else {
  spawnSync('umount', [probe as string]);
  fs.rmSync(probe as string, { recursive: true, force: true });
  mounts.length = 0;
}

/** Fills the file system holding `d` until a write fails; returns the filler's path. */
function fill(d: string): string {
  const filler = path.join(d, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

function record(i: number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes, 0x61 + (i % 26));
  b.write(`record ${i};`);
  return b;
}

async function bodiesOf(file: string): Promise<string[]> {
  const bodies: string[] = [];
  const damage: unknown[] = [];
  const j = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (r) => void bodies.push(r.body.subarray(0, r.body.indexOf(';')).toString()), onDamage: (d) => damage.push(d) });
  await j.close();
  expect(damage).toEqual([]);
  return bodies;
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `record ${i}`);

describe.skipIf(noTmpfs !== undefined)('a journal on a full disk (tmpfs)', () => {
  it('blocks with disk_full, cuts the partial write back to the last whole record, keeps every append, and writes them all once space is freed', async () => {
    const disk = smallDisk(1) as string;
    const file = path.join(disk, 'j');
    const j = await SessionJournal.create(file);
    const filler = fill(disk);
    // The journal's first page has room for a few records; the one that crosses it finds the disk full.
    let n = 0;
    let err: unknown;
    while (err === undefined && n < 100) {
      j.append(RecordKind.event, record(n++, 1000));
      try {
        j.flush();
      } catch (e) {
        err = e;
      }
    }
    expect(isAstraError(err, 'disk_full')).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^${file}: the disk is full \\(ENOSPC\\); free space`));
    expect((err as { data: object }).data).toEqual({ path: file });
    expect(j.blocked).toBe(err);
    expect(j.size).toBeGreaterThan(JOURNAL_HEADER_BYTES);
    expect(j.size).toBeLessThan(4096);
    // The bytes that fit before the disk ran out were cut off: the file ends on a whole record.
    expect(fs.statSync(file).size).toBe(j.size);
    expect((j.size - JOURNAL_HEADER_BYTES) % (8 + 1 + 1000)).toBe(0);

    // Still full: appends are queued, flush and sync answer disk_full, retry fails.
    for (let i = 0; i < 20; i++) j.append(RecordKind.event, record(n++, 1000));
    expect(() => j.flush()).toThrow(/disk is full/);
    await expect(j.sync()).rejects.toMatchObject({ reason: 'disk_full', data: { path: file } });
    expect(j.retry()).toBe(false);
    expect(j.blocked?.reason).toBe('disk_full');
    expect(fs.statSync(file).size).toBe(j.size);

    fs.rmSync(filler);
    expect(j.retry()).toBe(true);
    expect(j.blocked).toBeUndefined();
    j.append(RecordKind.event, record(n++, 1000));
    await j.sync();
    expect(j.size).toBe(j.nextOffset);
    await j.close();
    expect(await bodiesOf(file)).toEqual(names(n));
  });

  it('a large record written directly that finds the disk full goes back in the queue and is written after retry', async () => {
    const disk = smallDisk(12) as string;
    const file = path.join(disk, 'j');
    const j = await SessionJournal.create(file);
    const errors: (Error | undefined)[] = [];
    j.onWritten = (e) => errors.push(e);
    // Leave about 5 MiB free: two large records fit, the third does not.
    const filler = path.join(disk, 'filler');
    fs.writeFileSync(filler, Buffer.alloc(7 * 1024 * 1024, 1));
    const big = (i: number) => record(i, 2 * 1024 * 1024 + 100);
    let n = 0;
    const deadline = Date.now() + 10_000;
    while (!j.blocked) {
      if (Date.now() > deadline) throw new Error(`no disk_full after ${n} large records`);
      j.append(RecordKind.event, Buffer.alloc(0), big(n++));
      j.append(RecordKind.event, record(n++, 100));
      await j.sync().catch(() => undefined);
    }
    expect(j.blocked.reason).toBe('disk_full');
    expect(fs.statSync(file).size).toBe(j.size);
    if (j.direct) expect(errors.some((e) => isAstraError(e, 'disk_full'))).toBe(true);
    const queued = j.nextOffset - j.size;
    expect(queued).toBeGreaterThan(0);
    fs.rmSync(filler);
    expect(j.retry()).toBe(true);
    await j.sync();
    expect(j.size).toBe(j.nextOffset);
    await j.close();
    expect(await bodiesOf(file)).toEqual(names(n));
  });

  it('a create on a full disk fails with disk_full and leaves no file behind', async () => {
    const disk = smallDisk(1) as string;
    fill(disk);
    const file = path.join(disk, 'new');
    const err = await SessionJournal.create(file).catch((e: unknown) => e);
    expect(isAstraError(err, 'disk_full')).toBe(true);
    expect((err as Error).message).toContain(file);
    expect(fs.existsSync(file)).toBe(false);
  });
});

/** Makes the next write through the page cache fail with `code` (after writing `partial` bytes of it, as a short write would). */
function failNextWrite(code: string, partial = 0): void {
  const fail = (fd: number, bufs: readonly NodeJS.ArrayBufferView[], position: number | null) => {
    fsDefault.writeSync = realWriteSync;
    fsDefault.writevSync = realWritevSync;
    syncBuiltinESMExports();
    if (partial > 0) {
      const first = Buffer.from(bufs[0]!.buffer, bufs[0]!.byteOffset, bufs[0]!.byteLength);
      realWriteSync(fd, first, 0, Math.min(partial, first.length), position);
    }
    throw Object.assign(new Error(`${code}: injected, write`), { code });
  };
  fsDefault.writevSync = ((fd: number, bufs: readonly NodeJS.ArrayBufferView[], position?: number | null) => fail(fd, bufs, position ?? null)) as typeof fsDefault.writevSync;
  fsDefault.writeSync = ((fd: number, buf: NodeJS.ArrayBufferView, _o?: unknown, _l?: unknown, position?: number | null) => fail(fd, [buf], position ?? null)) as unknown as typeof fsDefault.writeSync;
  syncBuiltinESMExports();
}

describe('a write failure injected at the page-cache write', () => {
  it('ENOSPC after a short write: blocked, the partial bytes cut off, nothing lost, healthy again after retry', async () => {
    const file = path.join(dir(), 'j');
    const j = await SessionJournal.create(file);
    j.append(RecordKind.event, record(0, 50));
    await j.sync();
    const before = j.size;
    for (let i = 1; i < 10; i++) j.append(RecordKind.event, record(i, 50));
    failNextWrite('ENOSPC', 30);
    expect(() => j.flush()).toThrow(expect.objectContaining({ reason: 'disk_full' }) as Error);
    expect(j.size).toBe(before);
    expect(fs.statSync(file).size).toBe(before);
    j.append(RecordKind.event, record(10, 50));
    expect(j.retry()).toBe(true);
    await j.close();
    expect(await bodiesOf(file)).toEqual(names(11));
  });

  it('EDQUOT counts as a full disk too', async () => {
    const file = path.join(dir(), 'j');
    const j = await SessionJournal.create(file);
    j.append(RecordKind.event, record(0, 50));
    failNextWrite('EDQUOT');
    expect(() => j.flush()).toThrow(/disk quota is exhausted \(EDQUOT\)/);
    expect(j.blocked?.data).toEqual({ path: file });
    expect(j.retry()).toBe(true);
    await j.close();
    expect(await bodiesOf(file)).toEqual(names(1));
  });

  it('any other I/O error still poisons the journal: later appends and retry fail', async () => {
    const file = path.join(dir(), 'j');
    const j = await SessionJournal.create(file);
    j.append(RecordKind.event, record(0, 50));
    failNextWrite('EIO');
    expect(() => j.flush()).toThrow(/EIO/);
    expect(j.blocked).toBeUndefined();
    expect(j.retry()).toBe(false);
    expect(() => j.append(RecordKind.event, record(1, 50))).toThrow(/failed earlier: EIO/);
    await expect(j.close()).rejects.toThrow(/EIO/);
  });
});
