import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { isAstraError } from '../../protocol/index.js';
import { acquireLock, tryAcquireLock } from '../../discovery/index.js';
import { killAndWait, spawnHelper, tempDir, waitForLine } from './helpers.js';

describe('acquireLock', () => {
  it('creates a missing target file and releases cleanly, twice over', async () => {
    const target = path.join(tempDir(), 'spawn.lock');
    const release = await acquireLock(target, { timeoutMs: 2000 });
    expect(fs.existsSync(target)).toBe(true);
    expect(fs.statSync(`${target}.lock`).isDirectory()).toBe(true);
    await release();
    await release(); // a second release is harmless
    expect(fs.existsSync(`${target}.lock`)).toBe(false);
  });

  it('serializes concurrent holders: one at a time, everyone gets a turn', async () => {
    const target = path.join(tempDir(), 'spawn.lock');
    let inside = 0;
    let maxInside = 0;
    const order: number[] = [];
    const worker = async (id: number) => {
      const release = await acquireLock(target, { timeoutMs: 20_000 });
      inside += 1;
      maxInside = Math.max(maxInside, inside);
      order.push(id);
      // Hold the lock across a few turns of the event loop so the others really contend.
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      inside -= 1;
      await release();
    };
    await Promise.all([0, 1, 2, 3, 4].map(worker));
    expect(maxInside).toBe(1);
    expect([...order].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('tryAcquireLock does not wait: undefined while held, a release once free', async () => {
    const target = path.join(tempDir(), 'instance.lock');
    const release = await acquireLock(target);
    expect(await tryAcquireLock(target)).toBeUndefined();
    await release();
    const again = await tryAcquireLock(target);
    expect(again).toBeTypeOf('function');
    await again?.();
  });

  it('times out with lock_timeout saying what to do while a live process holds the lock', async () => {
    const target = path.join(tempDir(), 'spawn.lock');
    const child = spawnHelper('lock-child.mjs', [target, '2000']);
    await waitForLine(child, 'locked');
    const started = Date.now();
    const err = await acquireLock(target, { stale: 2000, timeoutMs: 600 }).catch((e: unknown) => e);
    expect(isAstraError(err, 'lock_timeout')).toBe(true);
    expect((err as Error).message).toContain(`${target}.lock`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(await tryAcquireLock(target, { stale: 2000 })).toBeUndefined();
  });

  it('takes over a lock whose holder was SIGKILLed once it is stale', async () => {
    const target = path.join(tempDir(), 'spawn.lock');
    const child = spawnHelper('lock-child.mjs', [target, '2000']);
    await waitForLine(child, 'locked');
    expect(await tryAcquireLock(target, { stale: 2000 })).toBeUndefined();
    await killAndWait(child);
    const release = await acquireLock(target, { stale: 2000, timeoutMs: 15_000 });
    expect(fs.statSync(`${target}.lock`).isDirectory()).toBe(true);
    await release();
  });

  it('respects retries as a cap on attempts', async () => {
    const target = path.join(tempDir(), 'spawn.lock');
    const release = await acquireLock(target);
    const err = await acquireLock(target, { retries: 2, timeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(isAstraError(err, 'lock_timeout')).toBe(true);
    expect((err as { data: { attempts: number } }).data.attempts).toBe(3);
    await release();
  });
});
