// The chat answer's markdown layout (cli/chat-markdown.ts) and its streaming (cli/chat-answer.ts):
// what each element looks like, lines within the width broken between words, the model's control
// characters made visible, and — for any split of the answer into deltas — the lines printed while
// it streams are exactly the layout of the whole answer.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamedAnswer } from '../../cli/chat-answer.js';
import { renderMarkdown } from '../../cli/chat-markdown.js';
import { displayWidth } from '../../cli/view/width.js';

const SAMPLE = [
  '# Title',
  '',
  'Some **bold** and *italic* text with `code` and a [link](https://example.com/x).',
  '',
  '- one',
  '- two **2**',
  '  1. nested',
  '',
  '3. three',
  '4. four',
  '',
  '```js',
  'const x = 1;',
  '```',
  '',
  '> quoted',
  '',
  '| a | bb |',
  '|---|---:|',
  '| 1 | 22 |',
  '',
  '---',
  '',
  '- [x] done',
  '- [ ] open',
].join('\n');

describe('markdown in the terminal', () => {
  it('lays out headings, emphasis, code, links, lists, code blocks, quotes, tables, rules and task lists (no colours)', () => {
    expect(renderMarkdown(SAMPLE, 60, false)).toEqual([
      '# Title',
      '',
      'Some bold and italic text with `code` and a link',
      '(https://example.com/x).',
      '',
      '• one',
      '• two 2',
      '  1. nested',
      '',
      '3. three',
      '4. four',
      '',
      '  js',
      '  const x = 1;',
      '',
      '│ quoted',
      '',
      'a │ bb',
      '──┼───',
      '1 │ 22',
      '',
      '─'.repeat(40),
      '',
      '• ☑ done',
      '• ☐ open',
    ]);
  });

  it('styles with SGR when colours are on, each line closing its styles', () => {
    const lines = renderMarkdown('## Head\n\nsome **bold words here** and `x`', 12, true);
    expect(lines[0]).toBe('\x1b[1;4mHead\x1b[0m');
    expect(lines.slice(2)).toEqual(['some \x1b[1mbold\x1b[0m', '\x1b[1mwords here\x1b[0m', 'and \x1b[36mx\x1b[0m']);
    expect(lines.join('\n')).toContain('\x1b[36mx\x1b[0m');
    for (const l of lines) if (l.includes('\x1b[')) expect(l.endsWith('\x1b[0m'), JSON.stringify(l)).toBe(true);
    expect(lines.join('\n')).not.toContain('**');
  });

  it('breaks lines between words within the width, in display columns (CJK and emoji take two); only a longer word is cut', () => {
    const text = 'The quick brown fox jumps over the lazy dog, 中文的字符 and 🙂🙂 emoji, then averyveryverylongwordthatdoesnotfit at all.';
    for (const width of [10, 17, 25, 40]) {
      const lines = renderMarkdown(text, width, true);
      for (const l of lines) expect(displayWidth(l), `${width}: ${l}`).toBeLessThanOrEqual(width);
      // Joined back with spaces, the words are all there: nothing lost or split but the long one.
      const words = lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, '')).join(' ').split(' ');
      for (const w of text.split(' ')) if (displayWidth(w) <= width) expect(words, `${width}`).toContain(w);
    }
  });

  it('shows escape sequences and control characters of the text as visible symbols', () => {
    const out = renderMarkdown('evil \x1b[2J\x1b]0;title\x07 text and `\x1b[31mred`', 80, true).join('\n');
    expect(out).not.toMatch(/\x1b\[2J|\x1b\]0|\x07|\x1b\[31m/);
    expect(out).toContain('␛[2J');
  });
});

describe('a streamed answer', () => {
  it('prints, for any split into deltas, exactly the layout of the whole answer', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: SAMPLE.length - 1 }), { maxLength: 30 }), fc.integer({ min: 12, max: 70 }), (cuts, width) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const a = new StreamedAnswer(true);
        const printed: string[] = [];
        let from = 0;
        for (const p of [...points, SAMPLE.length]) {
          printed.push(...a.push(SAMPLE.slice(from, p), width));
          from = p;
          // What is live is what the whole answer so far lays out as, below what was printed.
          expect([...printed, ...a.live(width)]).toEqual(renderMarkdown(SAMPLE.slice(0, p), width, true));
        }
        printed.push(...a.end(width));
        expect(printed).toEqual(renderMarkdown(SAMPLE, width, true));
      }),
      { numRuns: 60 },
    );
  });

  it('prints the top of a live block taller than allowed, and the rest once, in order', () => {
    const paragraph = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    const a = new StreamedAnswer(false);
    const printed: string[] = [];
    for (let i = 0; i < paragraph.length; i += 5) {
      printed.push(...a.push(paragraph.slice(i, i + 5), 30, 4));
      expect(a.live(30).length).toBeLessThanOrEqual(4);
    }
    printed.push(...a.end(30));
    expect(printed).toEqual(renderMarkdown(paragraph, 30, false));
  });
});
