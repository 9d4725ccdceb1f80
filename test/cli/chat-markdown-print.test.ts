// A chat answer printed by `astra send --wait` and `astra log`: in a real terminal (tmux, 50
// columns) laid out as `astra attach` lays it out (the same markdown layout at the width less one
// column: no ** or ``` left, lines broken between words); to a pipe, the text exactly as the model
// wrote it (scripts read it); `--raw` keeps that text on a terminal too.
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../cli/chat-markdown.js';
import { runCli, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { fixtureAnswer, plain, useChatSessions } from './chat-tmux.js';

const session = useChatSessions();

const COLS = 50;

/** Where the laid-out answer starts in the screen's lines, each occurrence (the lines must follow exactly). */
function occurrences(screen: string, expected: string[]): number[] {
  const lines = screen.split('\n').map((l) => l.trimEnd());
  const want = expected.map((l) => l.trimEnd());
  const found: number[] = [];
  lines.forEach((l, i) => {
    if (l === want[0] && want.every((w, k) => lines[i + k] === w)) found.push(i);
  });
  return found;
}

/** A chat session whose model answers `answers` times with the markdown fixture. */
const chatSession = (prefix: string, answers: number, fixture = 'markdown-answer') => session(prefix, Array<string>(answers).fill(fixture));

describe.skipIf(skipWithout(TMUX))('a chat answer printed by send --wait and log', () => {
  const answer = fixtureAnswer('markdown-answer');
  const expected = renderMarkdown(answer, COLS - 1, true).map(plain);

  it('send --wait lays the final answer out on a terminal, and prints it as it came to a pipe', async () => {
    const { env, tmux, id } = await chatSession('smd', 2);
    const piped = await runCli(['send', id, 'what is the plan?', '--wait'], env, 30_000);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe(`${answer.replace(/\n$/, '')}\n`);

    tmux.start('s', ['send', id, 'and again?', '--wait'], {}, COLS);
    const screen = await tmux.waitScreen('s', /\[exited \d+\]/, 30_000);
    expect(screen).toContain('[exited 0]');
    expect(occurrences(screen, expected), screen).toHaveLength(1);
    expect(screen).not.toMatch(/\*\*|```|^## /m);
    for (const l of screen.split('\n')) expect(l.trimEnd().length, l).toBeLessThan(COLS);
  });

  it('log lays every answer out on a terminal; to a pipe, and with --raw, the text is as it came', async () => {
    const { env, tmux, id } = await chatSession('lmd', 2);
    for (const q of ['what is the plan?', 'and again?']) expect((await runCli(['send', id, q, '--wait'], env, 30_000)).code).toBe(0);

    tmux.start('l', ['log', id], {}, COLS);
    const screen = await tmux.waitScreen('l', /\[exited \d+\]/, 30_000);
    expect(screen).toContain('[exited 0]');
    if (process.env.SHOW_SCREEN) console.log(screen);
    expect(occurrences(screen, expected), screen).toHaveLength(2);
    expect(screen).not.toMatch(/\*\*|```|^## /m);
    expect(screen).toContain('❯ and again?');
    expect(screen.match(/✔ turn completed/g)).toHaveLength(2);

    const piped = await runCli(['log', id], env);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout.split(answer).length, piped.stdout).toBe(3);

    tmux.start('r', ['log', id, '--raw'], {}, COLS);
    const raw = await tmux.waitScreen('r', /\[exited \d+\]/, 30_000);
    expect(raw).toContain('[exited 0]');
    expect(raw).toContain('## Plan for the **release**');
    expect(occurrences(raw, expected)).toHaveLength(0);
  });

  it('log prints the part of an answer still streaming, laid out, where the history stops', async () => {
    const { env, tmux, id, server } = await chatSession('lmdh', 1, 'markdown-held');
    const sent = await runCli(['send', id, 'go on'], env, 30_000);
    expect(sent.code, sent.stderr).toBe(0);
    // The model holds its answer after "…the middle of" (the turn is still running).
    const partial = await waitFor('the answer up to the hold in the journal', async () => {
      const r = await runCli(['log', id], env);
      const at = r.stdout.indexOf('A paragraph');
      return at >= 0 && r.stdout.includes('e middle of') ? r.stdout.slice(at, r.stdout.indexOf('e middle of') + 'e middle of'.length) : undefined;
    }, 30_000);
    tmux.start('h', ['log', id], {}, COLS);
    const screen = await tmux.waitScreen('h', /\[exited \d+\]/, 30_000);
    expect(screen).toContain('[exited 0]');
    expect(occurrences(screen, renderMarkdown(partial, COLS - 1, true).map(plain)), screen).toHaveLength(1);
    expect(screen).not.toMatch(/✔ turn completed/);
    await fetch(`${server.baseUrl.replace(/\/v1$/, '')}/__release`, { method: 'POST' });
  });
});
