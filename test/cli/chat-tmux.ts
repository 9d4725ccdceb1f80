// Shared by the tmux tests of chat answers (attach, send --wait, log): a chat session on a real
// daemon whose model server replays recorded streams, and what a fixture's answer is.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { ROOT, cleanupHome, envFor, makeHome, runCli } from '../helpers/processes.js';
import { Tmux } from './tmux.js';

/** Registers an afterEach that removes the homes, tmux servers and model servers a test made. */
export function useChatSessions(): (prefix: string, streams: string[]) => Promise<{ env: NodeJS.ProcessEnv; tmux: Tmux; id: string; server: { baseUrl: string } }> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  return async (prefix, streams) => {
    const server = await startModelServerProcess(streams, children);
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
  };
}

/** The answer a recorded stream gives: its deltas joined. */
export function fixtureAnswer(name: string): string {
  const text = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'model-server', 'streams', `${name}.sse`), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '')
    .join('');
}

/** A line without its SGR colours. */
// eslint-disable-next-line no-control-regex
export const plain = (s: string): string => s.replace(/\x1b\[[0-9;]*m/g, '');
