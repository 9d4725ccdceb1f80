import { afterEach, describe, expect, it, vi } from 'vitest';
import { Level, MarkError, marks } from '../../flow/index.js';

/** Which of the given waits have resolved, after the microtasks queued so far. */
async function settled(waits: Promise<void>[]): Promise<boolean[]> {
  const done = waits.map(() => false);
  waits.forEach((w, i) => void w.then(() => (done[i] = true)));
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe('Level', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves a wait at once when the level is already below its mark', async () => {
    const level = new Level(() => 10);
    expect(await settled([level.wait(11)])).toEqual([true]);
    expect(level.waiting).toBe(0);
  });

  it('keeps a wait until a check finds the level below its mark (not at it)', async () => {
    let n = 100;
    const level = new Level(() => n);
    const w = level.wait(50);
    n = 50;
    level.check();
    expect(await settled([w])).toEqual([false]);
    n = 49;
    level.check();
    expect(await settled([w])).toEqual([true]);
    expect(level.waiting).toBe(0);
  });

  it('resolves each wait at its own mark, in the order the waits were made', async () => {
    let n = 100;
    const level = new Level(() => n);
    const order: number[] = [];
    const waits = [80, 20, 60, 80].map((below, i) => level.wait(below).then(() => order.push(i)));
    n = 59;
    level.check();
    await Promise.all([Promise.resolve(), Promise.resolve()]);
    await settled([]);
    expect(order).toEqual([0, 2, 3]);
    n = 0;
    level.check();
    await Promise.all(waits);
    expect(order).toEqual([0, 2, 3, 1]);
  });

  it('never reads the level on its own: nothing resolves without a check', async () => {
    let n = 10;
    const read = vi.fn(() => n);
    const level = new Level(read);
    const w = level.wait(5);
    const reads = read.mock.calls.length;
    n = 0;
    expect(await settled([w])).toEqual([false]);
    expect(read.mock.calls.length).toBe(reads);
  });

  it('after release, queued waits go at the next check and later waits at once', async () => {
    const level = new Level(() => 1000);
    const before = level.wait(1);
    level.release();
    expect(level.isReleased).toBe(true);
    expect(await settled([before])).toEqual([false]);
    const after = level.wait(1);
    expect(await settled([after])).toEqual([true]);
    level.check();
    expect(await settled([before])).toEqual([true]);
  });

  it('full() is true at and over the high mark', () => {
    let n = 99;
    const level = new Level(() => n);
    const m = marks(100, 50);
    expect(level.full(m)).toBe(false);
    n = 100;
    expect(level.full(m)).toBe(true);
  });

  it('drives a level a timer drains, with fake timers', async () => {
    vi.useFakeTimers();
    let n = 1000;
    const level = new Level(() => n);
    const drain = setInterval(() => {
      n -= 100;
      level.check();
    }, 10);
    let resolvedAt = -1;
    void level.wait(500).then(() => (resolvedAt = n));
    await vi.advanceTimersByTimeAsync(50);
    expect(resolvedAt).toBe(-1);
    await vi.advanceTimersByTimeAsync(10);
    expect(resolvedAt).toBe(400);
    clearInterval(drain);
  });

  it('refuses NaN as a mark with a typed error', () => {
    expect(() => new Level(() => 0).wait(Number.NaN)).toThrow(MarkError);
  });
});

describe('marks', () => {
  it('defaults the low mark to the high one', () => {
    expect(marks(8)).toEqual({ high: 8, low: 8 });
  });

  it.each([
    [0, 0],
    [-1, -1],
    [Number.POSITIVE_INFINITY, 1],
    [10, 0],
    [10, 11],
  ])('refuses high %s, low %s with MarkError', (high, low) => {
    expect(() => marks(high, low)).toThrow(MarkError);
  });
});
