// A kernel that refuses a direct write (EINVAL: an alignment it will not take) must cost nothing but
// speed: the record is written through the page cache at the same place, and so is every later one.
// The refusal is injected at fs.write (the only thing faked); it turns direct I/O off for the whole
// process, hence a file of its own.
import fsDefault from 'node:fs';
import * as path from 'node:path';
import { syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_HEADER_BYTES, SessionJournal } from '../../runtime/index.js';
import { directIOUsable } from '../../journal/direct-io.js';
import { spawnSync } from 'node:child_process';
import { ensureBuilt, recordingLogger, tempDir } from '../runtime/helpers.js';

const realWrite = fsDefault.write;
afterEach(() => {
  fsDefault.write = realWrite;
  syncBuiltinESMExports();
});

describe('a direct write the kernel refuses', () => {
  it('is written through the page cache instead, and so is every large record after it', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'j');
    const j = await SessionJournal.create(file);
    expect(j.direct).toBe(process.platform === 'linux');
    if (!j.direct) return;
    let refused = 0;
    fsDefault.write = ((...args: unknown[]) => {
      const cb = args[args.length - 1] as (err: NodeJS.ErrnoException | null, n: number) => void;
      refused++;
      process.nextTick(() => cb(Object.assign(new Error('EINVAL: invalid argument, write'), { code: 'EINVAL' }), 0));
    }) as typeof fsDefault.write;
    syncBuiltinESMExports();
    const payloads = [1, 2, 3].map((i) => Buffer.alloc(2 * 1024 * 1024 + i, i));
    const errors: (Error | undefined)[] = [];
    j.onWritten = (err) => errors.push(err);
    j.append(1, Buffer.from('small'));
    for (const p of payloads) j.append(1, Buffer.from('big:'), p);
    await j.sync();
    expect(refused).toBe(1);
    expect(errors).toEqual([undefined]);
    expect(directIOUsable()).toBe(false);
    expect(j.direct).toBe(false);
    j.append(1, Buffer.from('big:'), Buffer.alloc(3 * 1024 * 1024, 9));
    await j.close();
    const bodies: Buffer[] = [];
    const again = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (r) => void bodies.push(Buffer.from(r.body)) });
    const { records } = await again.readRecords(JOURNAL_HEADER_BYTES, 64 * 1024 * 1024);
    await again.close();
    expect(records.length).toBe(5);
    expect(bodies.map((b) => b.length)).toEqual([5, ...payloads.map((p) => 4 + p.length), 4 + 3 * 1024 * 1024]);
    payloads.forEach((p, i) => expect(bodies[i + 1]!.subarray(4).equals(p)).toBe(true));
    expect(bodies[4]![bodies[4]!.length - 1]).toBe(9);
    fsDefault.rmSync(dir, { recursive: true, force: true });
  });

  it('where no aligned buffer can be made (node --jitless has no WebAssembly), large records go through the page cache', async () => {
    const root = ensureBuilt();
    const dir = tempDir();
    const file = path.join(dir, 'j');
    const script = `
      const { SessionJournal } = await import(${JSON.stringify(path.join(root, 'dist/runtime/index.js'))});
      const j = await SessionJournal.create(${JSON.stringify(file)});
      const before = j.direct;
      for (let i = 1; i <= 3; i++) j.append(1, Buffer.from('big:'), Buffer.alloc(2 * 1024 * 1024 + i, i));
      await j.close();
      console.log(JSON.stringify({ before, after: j.direct }));`;
    const r = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({ before: process.platform === 'linux', after: false });
    const bodies: Buffer[] = [];
    const again = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (rec) => void bodies.push(Buffer.from(rec.body)) });
    await again.close();
    expect(bodies.map((b) => b.length)).toEqual([1, 2, 3].map((i) => 4 + 2 * 1024 * 1024 + i));
    bodies.forEach((b, i) => expect(b.subarray(4).equals(Buffer.alloc(2 * 1024 * 1024 + i + 1, i + 1))).toBe(true));
    fsDefault.rmSync(dir, { recursive: true, force: true });
  });
});
