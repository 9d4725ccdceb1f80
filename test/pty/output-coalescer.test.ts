import { describe, expect, it, vi } from 'vitest';
import { OutputCoalescer, STREAMING_BYTES, STREAMING_GATHER_MS } from '../../pty/output-coalescer.js';
import { waitFor } from '../helpers/processes.js';

function sink() {
  const got: Buffer[] = [];
  const c = new OutputCoalescer({ onOutput: (d) => (got.push(d), true), drained: () => Promise.resolve() }, () => {}, () => {});
  return { c, got };
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('the output coalescer', () => {
  it('sends a lone small chunk on the next turn of the event loop, and small chunks one turn at a time', async () => {
    const { c, got } = sink();
    c.push(Buffer.from('a'), 'stdout');
    await waitFor('the first chunk', () => got.length === 1, 2000);
    c.push(Buffer.from('b'), 'stdout');
    await waitFor('the second chunk', () => got.length === 2, 2000);
    expect(got.map((b) => b.toString())).toEqual(['a', 'b']);
  });

  it('sends the reads of one turn of the event loop as one chunk, in order', async () => {
    const { c, got } = sink();
    for (const ch of ['a', 'b', 'c']) c.push(Buffer.alloc(64 * 1024, ch), 'stdout');
    await waitFor('the chunk', () => got.length > 0, 2000);
    expect(got.map((b) => b.length)).toEqual([3 * 64 * 1024]);
    expect(Buffer.concat(got).equals(Buffer.concat(['a', 'b', 'c'].map((ch) => Buffer.alloc(64 * 1024, ch))))).toBe(true);
  });

  it('after a chunk of a full terminal read (4095 bytes) gathers the reads of the next turns into one chunk', async () => {
    const { c, got } = sink();
    const read = (ch: string) => Buffer.alloc(4095, ch);
    expect(4095).toBeGreaterThanOrEqual(STREAMING_BYTES);
    c.push(read('a'), 'stdout');
    await waitFor('the first read', () => got.length === 1, 2000);
    // Three reads on three turns of the event loop, all within the gathering window (the window's
    // timer is fake: it ends when the test says, however slowly this process runs): one chunk.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      c.push(read('b'), 'stdout');
      await nextTurn();
      c.push(read('c'), 'stdout');
      await nextTurn();
      c.push(read('d'), 'stdout');
      await nextTurn();
      expect(got.length, 'nothing before the window ends').toBe(1);
      vi.advanceTimersByTime(STREAMING_GATHER_MS);
    } finally {
      vi.useRealTimers();
    }
    expect(got.map((b) => b.length)).toEqual([4095, 3 * 4095]);
    expect(Buffer.concat(got).toString()).toBe('a'.repeat(4095) + 'b'.repeat(4095) + 'c'.repeat(4095) + 'd'.repeat(4095));
  });
});
