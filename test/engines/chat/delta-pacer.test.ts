// The pace of an answer's message.delta events (engines/chat/delta-pacer.ts), on a fake clock and fake
// timers: exact on any machine. The chat engine's tests (chat-engine.test.ts) stream real answers
// through it and check what holds however the reads fell: the text whole, in order, nothing empty.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeltaPacer } from '../../../engines/chat/delta-pacer.js';

describe('the delta pacer', () => {
  beforeEach(() => {
    // Timers and the clock are fake; immediates are real (the pacer's "this tick"), run by `at` after each step.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const setUp = (intervalMs: number) => {
    const sent: { at: number; text: string }[] = [];
    const pacer = new DeltaPacer(intervalMs, (text) => void sent.push({ at: Date.now(), text }), () => Date.now());
    const t0 = Date.now();
    /** Moves the clock to t0 + ms, one millisecond at a time, running the immediates each step queued. */
    const at = async (ms: number) => {
      await new Promise((r) => setImmediate(r));
      while (Date.now() < t0 + ms) {
        vi.advanceTimersByTime(1);
        await new Promise((r) => setImmediate(r));
      }
    };
    return { pacer, sent, at, rel: () => sent.map((s) => ({ at: s.at - t0, text: s.text })) };
  };

  it('sends the first text of an answer in its own tick, alone', async () => {
    const { pacer, rel, at } = setUp(25);
    pacer.push('first');
    expect(rel()).toEqual([]);
    await at(0);
    expect(rel()).toEqual([{ at: 0, text: 'first' }]);
  });

  it('joins text arriving within the interval into one delta, sent when the interval has passed', async () => {
    const { pacer, rel, at } = setUp(25);
    pacer.push('first');
    await at(0);
    // 40 chunks 2 ms apart from 40 ms on: the first goes at once (the interval has passed), then one delta per 25 ms.
    await at(40);
    for (let i = 0; i < 40; i++) {
      pacer.push(` t${i}`);
      await at(40 + 2 * (i + 1));
    }
    await at(200);
    const got = rel();
    expect(got.map((d) => d.text).join('')).toBe('first' + Array.from({ length: 40 }, (_, i) => ` t${i}`).join(''));
    expect(got.map((d) => d.at)).toEqual([0, 40, 65, 90, 115, 140]);
    expect(got[1]!.text).toBe(' t0');
    expect(got[2]!.text).toBe(Array.from({ length: 12 }, (_, i) => ` t${i + 1}`).join(''));
  });

  it('sends a text after a pause longer than the interval at once, and never two deltas closer than the interval', async () => {
    const { pacer, rel, at } = setUp(20);
    pacer.push('a');
    await at(0);
    await at(5);
    pacer.push('b');
    await at(19);
    expect(rel().map((d) => d.text)).toEqual(['a']);
    await at(20);
    expect(rel()).toEqual([{ at: 0, text: 'a' }, { at: 20, text: 'b' }]);
    await at(100);
    pacer.push('c');
    await at(100);
    expect(rel().at(-1)).toEqual({ at: 100, text: 'c' });
  });

  it('flush() sends what waits at once (the answer ended) and cancels the wait: nothing is sent twice', async () => {
    const { pacer, rel, at } = setUp(200);
    pacer.push('Hello');
    await at(0);
    await at(15);
    pacer.push(' from');
    await at(30);
    pacer.push(' the model.');
    await at(45);
    pacer.flush();
    expect(rel()).toEqual([{ at: 0, text: 'Hello' }, { at: 45, text: ' from the model.' }]);
    await at(1000);
    expect(rel()).toHaveLength(2);
    // With nothing waiting, flush sends nothing.
    pacer.flush();
    expect(rel()).toHaveLength(2);
  });
});
