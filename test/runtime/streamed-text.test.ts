// StreamedText: a message.completed is marked as streamed only when its text is exactly the turn's
// delta texts since its start or its previous message.completed, in order.
import { describe, expect, it } from 'vitest';
import { StreamedText } from '../../runtime/streamed-text.js';

function streamed(deltas: string[], text: string, started = true): boolean {
  const s = new StreamedText();
  if (started) s.started('t1');
  for (const d of deltas) s.delta('t1', d);
  return s.completed('t1', text);
}

describe('StreamedText', () => {
  it('is true only for the exact concatenation', () => {
    expect(streamed(['Hel', 'lo ', 'wörld 🚀'], 'Hello wörld 🚀')).toBe(true);
    expect(streamed(['Hello'], 'Hello')).toBe(true);
    expect(streamed(['Hel', 'lo'], 'Hello!')).toBe(false); // more than streamed
    expect(streamed(['Hel', 'lo!'], 'Hello')).toBe(false); // less
    expect(streamed(['ab', 'cd'], 'wxyz')).toBe(false); // other text, same length
    expect(streamed(['lo', 'Hel'], 'Hello')).toBe(false); // out of order
    expect(streamed([], '')).toBe(false); // nothing to leave out
    expect(streamed([''], '')).toBe(false);
    expect(streamed(['Hello'], 'Hello', false)).toBe(false); // its start was not seen
  });

  it('counts each message of a turn from the one before, and forgets a turn at its end', () => {
    const s = new StreamedText();
    s.started('t1');
    s.delta('t1', 'one');
    expect(s.completed('t1', 'one')).toBe(true);
    s.delta('t1', 'two');
    expect(s.completed('t1', 'onetwo')).toBe(false);
    s.delta('t1', 'three');
    expect(s.completed('t1', 'three')).toBe(true);
    s.delta('t2', 'other turn');
    expect(s.completed('t2', 'other turn')).toBe(false);
    s.ended('t1');
    s.delta('t1', 'late');
    expect(s.completed('t1', 'late')).toBe(false);
  });
});
