// A chat answer printed by `astra send --wait` and `astra log`: in a real terminal (tmux, 50
// columns) laid out as `astra attach` lays it out (the same markdown layout at the width less one
// column: no ** or ``` left, lines broken between words); to a pipe, the text exactly as the model
// wrote it (scripts read it); `--raw` keeps that text on a terminal too.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../cli/chat-markdown.js';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { ROOT, cleanupHome, envFor, makeHome, runCli, waitFor } from '../helpers/processes.js';
import { TMUX, skipWithout } from '../helpers/system-tools.js';
import { Tmux } from './tmux.js';

const cleanups: (() => Promise<void> | void)[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** The answer the fixture streams: its deltas joined. */
function fixtureAnswer(name: string): string {
  const text = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'model-server', 'streams', `${name}.sse`), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '')
    .join('');
}

// eslint-disable-next-line no-control-regex
const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

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
async function chatSession(prefix: string, answers: number, fixture = 'markdown-answer') {
  const server = await startModelServerProcess(Array(answers).fill(fixture), children);
  const home = makeHome(prefix);
  const env = envFor(home, { ASTRA_CHAT_BASE_URL: server.baseUrl });
  const tmux = new Tmux(env);
  cleanups.push(() => cleanupHome(home));
  cleanups.push(() => tmux.destroy());
  // The daemon takes engine settings (the model server's URL) only from `astra daemon start`.
  const started = await runCli(['daemon', 'start'], env);
  expect(started.code, started.stderr).toBe(0);
  const r = await runCli(['new', '--engine', 'chat', '--model', 'llama3.1'], env);
  expect(r.code, r.stderr).toBe(0);
  return { env, tmux, id: r.stdout.trim(), server };
}

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
