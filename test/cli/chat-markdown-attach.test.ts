// A chat answer in markdown in `astra attach` (a real terminal: tmux, 50 columns), streamed from a
// recorded model stream in 7-character deltas that cut words and markers: it reads as rendered
// markdown (no ** or ``` left), every line broken between words within the width (never where a
// delta ended), and is exactly the layout of the whole answer at that width.
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../cli/chat-markdown.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { fixtureAnswer, plain, useChatSessions } from './chat-tmux.js';

const chatSession = useChatSessions();

describe.skipIf(skipWithout(TMUX))('a chat answer in markdown in astra attach', () => {
  it('is rendered and wrapped between words at the terminal width while it streams, with no false line breaks', async () => {
    const { tmux, id } = await chatSession('amd', ['markdown-answer']);

    const cols = 50;
    tmux.start('a', ['attach', id], {}, cols);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'what is the plan?', true);
    const screen = await tmux.waitScreen('a', /turn completed/, 30_000);

    if (process.env.SHOW_SCREEN) console.log(screen);
    const answer = fixtureAnswer('markdown-answer');
    const expected = renderMarkdown(answer, cols - 1, true).map(plain);
    const lines = screen.split('\n').map((l) => l.trimEnd());
    const start = lines.indexOf(expected[0]!);
    expect(start, screen).toBeGreaterThan(0);
    expect(lines.slice(start, start + expected.length), screen).toEqual(expected.map((l) => l.trimEnd()));
    // Rendered: no markdown markers left, the list and the code block laid out.
    expect(screen).not.toMatch(/\*\*|```|^## /m);
    expect(screen).toContain('Plan for the release');
    expect(screen).toContain('• run npm test twice');
    expect(screen).toContain('  npm publish --tag next');
    // The paragraph wrapped between words within the width (capture-pane -J joins the terminal's own wraps).
    const paragraph = lines.slice(start).filter((l) => /^(The build|[a-z])/.test(l) && !l.startsWith('  '));
    expect(paragraph.length).toBeGreaterThan(2);
    for (const l of lines.slice(start, start + expected.length)) expect(l.length, l).toBeLessThan(cols);
    expect(lines.slice(start, start + expected.length).join(' ').replace(/\s+/g, ' ')).toContain(
      'The build passes on every machine we tried, and the remaining work is small enough to finish this week if nothing else comes up along the way.',
    );
  });

  it('lays the unfinished paragraph out again for the new width when the terminal is resized mid-answer, printed once', async () => {
    const { tmux, id, server } = await chatSession('amdr', ['markdown-held']);
    tmux.start('a', ['attach', id], {}, 70);
    await tmux.waitStatus('a', /you control this session/);
    tmux.type('a', 'go on', true);
    await tmux.waitScreen('a', /resized in the middle of/);
    tmux.run(['resize-window', '-t', 'a', '-x', '44', '-y', '40']);
    // The live paragraph is drawn again at 43 columns: its first row ends before "enough".
    await tmux.waitScreen('a', /^A paragraph long enough to wrap over$/m);
    await fetch(`${server.baseUrl.replace(/\/v1$/, '')}/__release`, { method: 'POST' });
    const screen = await tmux.waitScreen('a', /turn completed/, 30_000);
    const answer = fixtureAnswer('markdown-held');
    const expected = renderMarkdown(answer, 43, true).map(plain);
    const lines = screen.split('\n').map((l) => l.trimEnd());
    const start = lines.indexOf(expected[0]!);
    expect(start, screen).toBeGreaterThan(0);
    expect(lines.slice(start, start + expected.length), screen).toEqual(expected);
    expect(screen.split('A paragraph long').length, screen).toBe(2);
    expect(screen).toContain('and it ends here.');
  });
});
