import { describe, expect, it } from 'vitest';
import { OutputCapture, captureOutput, formatToolOutput } from '../../../engines/chat/index.js';

describe('what the model is sent of a command\'s output', () => {
  it('sends all of an output that fits the cap', () => {
    expect(formatToolOutput(captureOutput(Buffer.from('one\ntwo\n'), 64))).toBe('one\ntwo\n');
  });

  it('says when there was no output', () => {
    expect(formatToolOutput(captureOutput(Buffer.alloc(0), 64))).toBe('(no output)');
  });

  it('keeps the head and the tail of a long output and marks the cut with its size', () => {
    const data = Buffer.from('A'.repeat(100) + 'B'.repeat(1000) + 'C'.repeat(100));
    const text = formatToolOutput(captureOutput(data, 200));
    expect(text).toBe(`${'A'.repeat(100)}\n[… 1000 bytes of output cut; 1200 bytes in all …]\n${'C'.repeat(100)}`);
  });

  it('captures the same head and tail from many small chunks as from one buffer, with bounded memory', () => {
    const data = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i}\n`).join(''));
    const c = new OutputCapture(1000);
    for (let off = 0; off < data.length; off += 7) c.push(data.subarray(off, off + 7));
    const r = c.result();
    expect(r.head.length + r.tail.length).toBe(1000);
    expect(r.totalBytes).toBe(data.length);
    expect(formatToolOutput(r)).toBe(formatToolOutput(captureOutput(data, 1000)));
    expect(formatToolOutput(r).endsWith('line 4999\n')).toBe(true);
  });

  it('cuts on character boundaries, never inside a UTF-8 sequence', () => {
    // 601 bytes; cap 99 keeps 50 bytes of head (ending in half an é) and 49 of tail (starting in one).
    const data = Buffer.from('x' + 'é'.repeat(300));
    const text = formatToolOutput(captureOutput(data, 99));
    expect(text).not.toContain('\uFFFD');
    const [head, tail] = text.split(/\n\[… \d+ bytes of output cut; 601 bytes in all …\]\n/);
    expect(head).toBe('x' + 'é'.repeat(24));
    expect(tail).toBe('é'.repeat(24));
  });
});
