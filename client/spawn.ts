// Starting a daemon process (docs/operations.md): where its entry point is, the Node flags and the
// environment it runs with, its stdout and stderr in the log, and what it wrote there when it fails.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AstraError } from '../protocol/index.js';
import { ensureDir, levelName, type AstraPaths } from '../discovery/index.js';

/**
 * Node flags the daemon runs with. V8 sizes a small heap's collection limits from the live heap, and
 * counts buffers (journal arenas, socket and file buffers) against them: a daemon whose live heap
 * is a few megabytes ran a full mark-compact every ≈ 10 MB of streamed output once it had served a
 * few busy sessions, halving large-output throughput (bench/REPORT.md). A 64 MB initial old space
 * lets that garbage go in far fewer collections; it is a limit, not memory taken up front.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--initial-old-space-size=64'];

/** The compiled daemon entry point, found next to this module (dist/) or in the package's dist/. */
export function daemonEntryPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ASTRA_DAEMON_ENTRY) return env.ASTRA_DAEMON_ENTRY;
  const here = path.dirname(fileURLToPath(import.meta.url));
  // The bundled daemon (scripts/bundle.mjs) when the build made one: it starts faster and smaller.
  const candidates = [
    path.join(here, '..', 'daemon-bundle', 'main.js'),
    path.join(here, '..', 'daemon', 'main.js'),
    path.join(here, '..', 'dist', 'daemon-bundle', 'main.js'),
    path.join(here, '..', 'dist', 'daemon', 'main.js'),
  ];
  for (const c of candidates) if (fs.existsSync(c)) return c;
  throw new AstraError('spawn_failed', `cannot find the daemon entry point (looked at ${candidates.join(', ')}); run npm run build`);
}

export function logSize(logFile: string): number {
  try {
    return fs.statSync(logFile).size;
  } catch {
    return 0;
  }
}

/** What the daemon we started wrote to its log (from `since`), readable: `LEVEL message: error`. */
export function logLinesSince(logFile: string, since: number, n = 15): string {
  let text: string;
  try {
    const fd = fs.openSync(logFile, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const start = Math.max(since <= size ? since : 0, size - 256 * 1024);
      const buf = Buffer.alloc(size - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      text = buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '  (no daemon log yet)';
  }
  const lines = text
    .split('\n')
    .filter((l) => l.trim())
    .slice(-n)
    .map((line) => {
      try {
        const e = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
        return `  ${levelName(e.level ?? 30)} ${e.msg ?? ''}${e.err?.message ? `: ${e.err.message}` : ''}`;
      } catch {
        return `  ${line}`; // the daemon's own stderr
      }
    });
  return lines.length ? lines.join('\n') : '  (nothing)';
}

/**
 * The engine settings (the chat engine's server, model and key): a daemon gets them only from an
 * explicit `astra daemon start|restart`, never from whichever client happened to start it on demand,
 * so what the daemon uses does not depend on who started it (docs/operations.md).
 */
export function isEngineSetting(name: string): boolean {
  return name.startsWith('ASTRA_CHAT_') || name === 'OPENAI_API_KEY';
}

function daemonEnv(env: NodeJS.ProcessEnv, engineSettings: boolean): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, ASTRA_READY_FD: '3' };
  if (!engineSettings) for (const name of Object.keys(out)) if (isEngineSetting(name)) delete out[name];
  // The CLI turns msgpackr's native decoder off for its own quick start; the daemon keeps it.
  if (out.ASTRA_CLI_NATIVE_OFF === '1') {
    delete out.MSGPACKR_NATIVE_ACCELERATION_DISABLED;
    delete out.ASTRA_CLI_NATIVE_OFF;
  }
  return out;
}

/**
 * Starts the daemon detached with its stdout/stderr in the log file. `ready` resolves when the daemon
 * says it answers (a line on fd 3), or when it exits or closes that pipe without saying so.
 */
export function spawnDaemon(
  paths: AstraPaths,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  /** Pass the environment's engine settings (only `astra daemon start|restart` does). */
  engineSettings = false,
): { pid: number; exited: Promise<number | null>; ready: Promise<void> } {
  ensureDir(paths.logDir, "Astra's log directory");
  const logFd = fs.openSync(paths.logFile, 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, daemonEntryPath(env), ...args], {
      detached: true,
      stdio: ['ignore', logFd, logFd, 'pipe'],
      env: daemonEnv(env, engineSettings),
    });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(-1));
    });
    const pipe = child.stdio[3] as NodeJS.ReadableStream & { destroy(): void };
    const ready = new Promise<void>((resolve) => {
      pipe.once('data', () => resolve());
      pipe.once('end', () => resolve());
      pipe.once('error', () => resolve());
      void exited.then(() => resolve());
    }).finally(() => pipe.destroy());
    // The pipe keeps this process waiting until the daemon is ready; it is destroyed right after.
    child.unref();
    return { pid: child.pid ?? -1, exited, ready };
  } finally {
    fs.closeSync(logFd);
  }
}

