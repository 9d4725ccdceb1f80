// Test helpers for real processes: a temp ASTRA_HOME per test, the CLI and the daemon run from dist/,
// and cleanup that kills exactly the processes started for that home, by pid.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, onTestFinished } from 'vitest';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = path.join(ROOT, 'dist', 'cli', 'main.js');
export const DAEMON = path.join(ROOT, 'dist', 'daemon', 'main.js');

/** A short temp home (the socket path must stay under 103 bytes). */
export function makeHome(prefix = 'ah'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
}

export function envFor(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ASTRA_HOME: home, ASTRA_LOG_LEVEL: 'debug', ...extra };
  delete env.NO_COLOR;
  // The test machine's proxy settings would send the model requests to the loopback servers through
  // it: a test that wants a proxy names one.
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']) if (!(k in extra)) delete env[k];
  return env;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `astra <args>` to completion (with a deadline). */
export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<RunResult> {
  return runNode([CLI, ...args], env, timeoutMs);
}

export function runNode(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<RunResult> {
  return runCommand(process.execPath, args, env, timeoutMs);
}

/** Runs a command to completion with a deadline; `pids` collects its pid for cleanup. */
export function runCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 20_000, pids: number[] = []): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid) pids.push(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function startNode(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface RecordShape {
  instanceId: string;
  pid: number;
  endpoint: string;
  token: string;
  [key: string]: unknown;
}

export function recordPath(home: string): string {
  return path.join(home, 'run', 'daemon.json');
}

export function readRecordFile(home: string): RecordShape | undefined {
  try {
    return JSON.parse(fs.readFileSync(recordPath(home), 'utf8')) as RecordShape;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // Exited but not yet reaped (this sandbox's init reaps slowly) counts as gone.
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
    } catch {
      return false;
    }
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Pids of live processes whose environment has ASTRA_HOME=home (Linux). */
export function processesOfHome(home: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (environ.split('\0').includes(`ASTRA_HOME=${home}`)) {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (!/\) Z /.test(stat)) pids.push(pid);
      }
    } catch {
      // gone or not ours
    }
  }
  return pids;
}

/**
 * The one wait of the test suite: polls `probe` until it returns something other than undefined or
 * false, and fails naming `what` once `deadlineMs` has passed. Every test waits for the event it
 * needs through this, with a deadline — never a fixed sleep.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, deadlineMs = 10_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** A fresh temp dir (short, so socket paths fit); inside a test it is removed when the test ends. */
export function tempDir(prefix = 'astra-t-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    onTestFinished(() => {
      try {
        fs.rmSync(dir, { recursive: true, force: true });
      } catch {
        // Still a mount point (a test's tmpfs, unmounted by its own cleanup) or already gone.
      }
    });
  } catch {
    // Made outside a test (a beforeAll, a describe body): the caller removes it.
  }
  return dir;
}

/** Kills every process started for this home (daemons, clients) by pid, then removes the home. */
export async function cleanupHome(home: string, extraPids: number[] = []): Promise<void> {
  const pids = new Set([...processesOfHome(home), ...extraPids]);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await waitFor('processes to die', () => [...pids].every((p) => !isAlive(p)), 5_000).catch(() => undefined);
  fs.rmSync(home, { recursive: true, force: true });
}

/** Lines of a child's stdout as they arrive, parsed as JSON. */
export function jsonLines(child: ChildProcess): { lines: unknown[]; next(pred: (v: unknown) => boolean, timeoutMs?: number): Promise<unknown> } {
  const lines: unknown[] = [];
  const waiters: { pred: (v: unknown) => boolean; resolve: (v: unknown) => void }[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        v = line;
      }
      lines.push(v);
      for (const w of [...waiters]) {
        if (w.pred(v)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(v);
        }
      }
    }
  });
  return {
    lines,
    next(pred, timeoutMs = 15_000) {
      const found = lines.find(pred);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = { pred, resolve };
        waiters.push(w);
        setTimeout(() => {
          const idx = waiters.indexOf(w);
          if (idx >= 0) {
            waiters.splice(idx, 1);
            reject(new Error(`no matching line within ${timeoutMs} ms; got ${JSON.stringify(lines.slice(-5))}`));
          }
        }, timeoutMs);
      });
    },
  };
}

/**
 * For a test file: returns a function that makes a fresh temp home; after each test every process
 * started for those homes is killed by pid and the homes are removed.
 */
export function useTempHomes(prefix = 'ah'): () => string {
  const homes: string[] = [];
  afterEach(async () => {
    await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
  });
  return () => {
    const h = makeHome(prefix);
    homes.push(h);
    return h;
  };
}

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
