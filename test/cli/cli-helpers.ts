// Shared by the CLI tests: a temp ASTRA_HOME per test, `astra` left running, sessions made and listed.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, expect } from 'vitest';
import { CLI, cleanupHome, envFor, makeHome, runCli } from '../helpers/processes.js';

const cleanups: (() => Promise<void> | void)[] = [];

/** Registers the after-each cleanup for this file: every process started is killed by pid, homes removed. */
export function useCliCleanup(): (c: () => Promise<void> | void) => void {
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return (c) => cleanups.push(c);
}

/** `extraEnv`: e.g. `{ASTRA_TERMINAL: 'pipes'}` for a test of the pipe contract (stderr apart, \n line ends). */
export function setup(prefix = 'scli', extraEnv: Record<string, string> = {}): { home: string; env: NodeJS.ProcessEnv } {
  const home = makeHome(prefix);
  cleanups.push(() => cleanupHome(home));
  return { home, env: envFor(home, extraEnv) };
}

export interface RunningCli {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

/** `astra <args>` left running, with its output collected; killed by pid after the test. */
export function startCli(args: string[], env: NodeJS.ProcessEnv): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  // 'close', not 'exit': at 'exit' the child's last output may still be unread, and tests read out()
  // and err() right after awaiting this (e.g. "detached from …" after end of input).
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, out: () => out, err: () => err, exited };
}

export async function newSession(env: NodeJS.ProcessEnv, args: string[] = []): Promise<string> {
  const r = await runCli(['new', ...args], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

export async function listJson(env: NodeJS.ProcessEnv, args: string[] = []): Promise<Record<string, unknown>[]> {
  const r = await runCli(['sessions', '--json', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>[];
}

/**
 * The rows `astra sessions --json` prints (cli/session-commands.ts), read by an in-process client of
 * the running daemon (never starts one): for tests that check a session's state after a command, or
 * poll for it, without starting an `astra` process each time. What the CLI itself prints is tested
 * through listJson.
 */
export async function sessionRows(env: NodeJS.ProcessEnv, opts: { all?: boolean } = {}): Promise<Record<string, unknown>[]> {
  // Loaded on first use: the files that import these helpers without calling this do not load the client.
  const { AstraClient } = await import('../../client/index.js');
  const client = await AstraClient.connect({ clientName: 'test', env, autoStart: false });
  try {
    const { sessions } = await client.session.list({ limit: 1000, includeArchived: opts.all === true });
    const status = await client.daemon.status();
    const live = new Map(status.sessions.map((s) => [s.id, s]));
    return sessions.map((s) => ({ ...s, controller: s.controller ?? null, observers: live.get(s.id)?.observers ?? 0, pendingApprovals: live.get(s.id)?.pendingApprovals ?? 0 }));
  } finally {
    await client.close();
  }
}
