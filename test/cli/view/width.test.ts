import { describe, expect, it } from 'vitest';
import { displayWidth, fitWidth, graphemes, padStartWidth, padWidth, visible } from '../../../cli/view/width.js';

describe('column widths', () => {
  it('counts CJK as two columns, emoji sequences as one wide character and combining marks as none', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('中文')).toBe(4);
    expect(displayWidth('👍🏽')).toBe(2);
    expect(displayWidth('👨‍👩‍👧')).toBe(2);
    expect(displayWidth('e\u0301')).toBe(1);
    // UTF-16 units would say 2, 4, 8 and 2.
  });

  it('splits text into whole graphemes', () => {
    expect(graphemes('a👨‍👩‍👧e\u0301中')).toEqual(['a', '👨‍👩‍👧', 'e\u0301', '中']);
  });

  it('fits text to N columns with the cut marked by an ellipsis', () => {
    expect(fitWidth('hello world', 20)).toBe('hello world');
    expect(fitWidth('hello world', 8)).toBe('hello w…');
    expect(displayWidth(fitWidth('hello world', 8))).toBe(8);
    expect(fitWidth('abc', 1)).toBe('…');
    expect(fitWidth('abc', 0)).toBe('');
  });

  it('never cuts a wide character or an emoji in half', () => {
    // 中文字 is 6 columns; in 4 columns only 中 (2) fits before the ellipsis (1): 3 columns.
    expect(fitWidth('中文字', 4)).toBe('中…');
    expect(fitWidth('中文字', 5)).toBe('中文…');
    expect(fitWidth('👨‍👩‍👧👨‍👩‍👧x', 4)).toBe('👨‍👩‍👧…');
    for (let cols = 1; cols <= 12; cols++) expect(displayWidth(fitWidth('标题 with 中文 and 👍🏽', cols))).toBeLessThanOrEqual(cols);
  });

  it('pads to exactly N columns', () => {
    expect(padWidth('中文', 6)).toBe('中文  ');
    expect(displayWidth(padWidth('中文字典', 5))).toBe(5);
    expect(padStartWidth('42', 5)).toBe('   42');
  });

  it('shows control characters as visible symbols so a title cannot drive the terminal', () => {
    expect(visible('a\x1b]0;x\x07b\nc\td')).toBe('a␛]0;x␇b↵c d');
    expect(displayWidth(visible('\x1b[2J'))).toBe(4);
  });
});
