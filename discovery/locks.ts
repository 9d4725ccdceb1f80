// Cross-process locks over proper-lockfile (docs/design-notes.md): the spawn lock clients hold while starting a
// daemon, the instance lock a daemon holds while it takes the socket. A lock is the directory
// `<target>.lock`, kept fresh by mtime; one held by a dead process is taken over after `stale` ms.
// Stale takeover is not atomic, so the socket bind stays the final arbiter of "one daemon".

import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../protocol/index.js';

export interface LockOptions {
  /** Attempts before giving up, on top of `timeoutMs`; unlimited by default. */
  retries?: number;
  /** Age in ms after which a lock whose holder stopped refreshing it is taken over (min 2000). Default 10 000. */
  stale?: number;
  /** How long to wait for the lock. Default 15 000 (a little more than `stale`, so a dead holder's lock is reached). */
  timeoutMs?: number;
  /** Called if the lock is lost while held (its directory removed or not refreshed in time). Default: ignored. */
  onCompromised?: (err: Error) => void;
}

export type ReleaseLock = () => Promise<void>;

const DEFAULT_STALE_MS = 10_000;

export async function acquireLock(targetFile: string, opts: LockOptions = {}): Promise<ReleaseLock> {
  const stale = opts.stale ?? DEFAULT_STALE_MS;
  const timeoutMs = opts.timeoutMs ?? stale + 5000;
  const deadline = Date.now() + timeoutMs;
  let attempts = 0;
  let delay = 20;
  for (;;) {
    attempts += 1;
    const release = await attempt(targetFile, stale, opts.onCompromised);
    if (release) return release;
    const remaining = deadline - Date.now();
    if (remaining <= 0 || (opts.retries !== undefined && attempts > opts.retries)) {
      throw new AstraError(
        'lock_timeout',
        `Could not take the lock ${targetFile} within ${timeoutMs} ms: another Astra process holds it. ` +
          `Try again; if no astra process is running, remove ${targetFile}.lock.`,
        { targetFile, timeoutMs, attempts },
      );
    }
    // Jittered backoff: racing clients should not retry in lockstep.
    await sleep(Math.min(remaining, delay + Math.floor(Math.random() * delay)));
    delay = Math.min(delay * 2, 250);
  }
}

/** One attempt, no waiting: the release function, or undefined if someone else holds the lock. */
export async function tryAcquireLock(targetFile: string, opts: { stale?: number; onCompromised?: (err: Error) => void } = {}): Promise<ReleaseLock | undefined> {
  return attempt(targetFile, opts.stale ?? DEFAULT_STALE_MS, opts.onCompromised);
}

async function attempt(targetFile: string, stale: number, onCompromised: ((err: Error) => void) | undefined): Promise<ReleaseLock | undefined> {
  // proper-lockfile wants the target to exist only with realpath; creating it keeps the lock's
  // meaning visible to a human looking at the runtime dir.
  fs.closeSync(fs.openSync(targetFile, 'a', 0o600));
  let release: () => Promise<void>;
  try {
    // Loaded on first use: most commands never take a lock, and it costs start-up time.
    const { default: lockfile } = await import('proper-lockfile');
    release = await lockfile.lock(targetFile, {
      realpath: false,
      stale,
      retries: 0,
      // The default throws from a timer and kills the process.
      onCompromised: (err) => {
        try {
          onCompromised?.(err);
        } catch {
          // A throwing handler must not crash the process either.
        }
      },
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ELOCKED') return undefined;
    // The lock directory vanished between our mkdir and proper-lockfile's look at it: another
    // process took it over as stale at that moment (or its holder released it). Not ours: look again.
    if (err.code === 'ENOENT' && err.path !== undefined && path.resolve(err.path) === path.resolve(`${targetFile}.lock`)) return undefined;
    throw e;
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    try {
      await release();
    } catch (e) {
      // Already released or compromised (taken over as stale): nothing left to give back.
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ERELEASED' && code !== 'ENOTACQUIRED' && code !== 'ENOENT') throw e;
    }
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
