import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

export { tempDir } from '../helpers/processes.js';

const here = path.dirname(fileURLToPath(import.meta.url));


/** Runs one of this folder's .mjs helpers; it is SIGKILLed by pid when the test ends. */
export function spawnHelper(script: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [path.join(here, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  onTestFinished(async () => {
    await killAndWait(child);
  });
  return child;
}

/** Resolves when the child prints `line` on stdout; rejects if it exits first or the deadline passes. */
export function waitForLine(child: ChildProcess, line: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => done(new Error(`no "${line}" from the helper within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split('\n').includes(line)) done();
    };
    const onErr = (chunk: Buffer) => {
      err += chunk.toString();
    };
    const onExit = (code: number | null) => done(new Error(`helper exited (${code}) before "${line}"; stderr: ${err}`));
    function done(e?: Error) {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onErr);
      child.off('exit', onExit);
      if (e) reject(e);
      else resolve();
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onErr);
    child.once('exit', onExit);
  });
}

/** SIGKILLs the child by pid and waits until it has been reaped. */
export async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.pid !== undefined) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await exited;
}
