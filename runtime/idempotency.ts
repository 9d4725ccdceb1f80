// Idempotency: one mechanism for every keyed mutation. A key runs its mutation once; a repeat with
// the same fingerprint gets the same answer (waiting for it while in progress), a repeat with other
// params is refused. Tables are filled from durable records on start-up (the journal's idempotency
// records, meta.json's create key), so answers survive restarts.
import * as crypto from 'node:crypto';
import { AstraError } from '../protocol/index.js';

export function fingerprint(value: unknown): string {
  return crypto.createHash('sha256').update(JSON.stringify(value)).digest('base64url');
}

interface KeyedEntry {
  fingerprint: string;
  /** Set once done: what the durable record holds. */
  result?: unknown;
  /** Set while in progress. */
  promise?: Promise<unknown>;
}

export type MutationState = { state: 'unknown' | 'in_progress' } | { state: 'done'; result: unknown };

export interface KeyedRun<T> {
  /** What to remember of the mutation's value (default: the value itself). */
  record?(value: T): unknown;
  /** The answer to a repeat of a mutation that is done (default: the recorded result). */
  fromDone?(result: unknown): T | Promise<T>;
}

export class IdempotencyTable {
  private readonly entries = new Map<string, KeyedEntry>();

  /** A mutation known to be done (its durable record); an entry in progress completes itself. */
  remember(key: string, fp: string, result: unknown): void {
    if (!this.entries.has(key)) this.entries.set(key, { fingerprint: fp, result });
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  status(key: string): MutationState {
    const e = this.entries.get(key);
    if (!e) return { state: 'unknown' };
    return e.promise ? { state: 'in_progress' } : { state: 'done', result: e.result };
  }

  /**
   * Runs `start` once for `key`. The entry exists (in progress) from the first synchronous step, so a
   * concurrent repeat waits for the same answer; a failed start forgets the key, so it may be retried.
   */
  run<T>(key: string, fp: string, conflict: () => AstraError, start: () => Promise<T>, how: KeyedRun<T> = {}): Promise<T> {
    const known = this.entries.get(key);
    if (known) {
      if (known.fingerprint !== fp) return Promise.reject(conflict());
      if (known.promise) return known.promise as Promise<T>;
      return Promise.resolve(how.fromDone ? how.fromDone(known.result) : (known.result as T));
    }
    const entry: KeyedEntry = { fingerprint: fp };
    this.entries.set(key, entry);
    const promise = (async () => {
      try {
        const value = await start();
        entry.result = how.record ? how.record(value) : value;
        entry.promise = undefined;
        return value;
      } catch (e) {
        if (this.entries.get(key) === entry) this.entries.delete(key);
        throw e;
      }
    })();
    entry.promise = promise;
    return promise;
  }
}
