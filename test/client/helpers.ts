// Helpers for the client tests: a temp ASTRA_HOME per test, in-process clients from the sources,
// child client processes from dist/, and cleanup that kills every process of the home by pid.
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { onTestFinished } from 'vitest';
import { AstraClient, type AstraClientOptions } from '../../client/index.js';
import { ROOT, cleanupHome, envFor, isAlive, jsonLines, makeHome, startNode, waitFor } from '../helpers/processes.js';

export const CHILD = path.join(ROOT, 'test', 'client', 'fixtures', 'client-child.mjs');
export const FAKE_DAEMON = path.join(ROOT, 'test', 'client', 'fixtures', 'fake-daemon.mjs');

export function requireBuild(): void {
  for (const f of ['dist/index.js', 'dist/daemon/main.js', 'dist/client/client.js'])
    if (!fs.existsSync(path.join(ROOT, f))) throw new Error(`${f} is missing: run \`npx tsc -p tsconfig.json\` (npm run build) first`);
}

export interface TestHome {
  home: string;
  env: NodeJS.ProcessEnv;
  /** Connects an in-process client; closed when the test ends. */
  client(opts?: Partial<AstraClientOptions>): Promise<AstraClient>;
  /** Starts a child client process (fixtures/client-child.mjs); killed when the test ends. */
  child(args: ChildArgs): Child;
  /** Extra pids to kill at the end (e.g. orphaned command process groups). */
  pids: number[];
}

export interface ChildArgs {
  sessionId: string;
  name?: string;
  sinceSeq?: number;
  acquire?: boolean;
  resumeToken?: string;
  startTurn?: string;
  renameAfterTurn?: string;
  pingIntervalMs?: number;
}

export interface Child {
  proc: ChildProcess;
  out: ReturnType<typeof jsonLines>;
  events(): { seq: number; type: string; status?: string; pid?: number }[];
}

/** A fresh home for this test, cleaned up (clients closed, processes killed, files removed) when it ends. */
export function testHome(extraEnv: Record<string, string> = {}): TestHome {
  requireBuild();
  const home = makeHome('ac');
  const env = envFor(home, { ASTRA_IDLE_TIMEOUT_MS: '20000', ...extraEnv });
  const clients: AstraClient[] = [];
  const children: ChildProcess[] = [];
  const pids: number[] = [];
  onTestFinished(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    for (const c of children) if (c.pid !== undefined && isAlive(c.pid)) c.kill('SIGKILL');
    for (const pid of pids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await cleanupHome(home, pids);
  });
  return {
    home,
    env,
    pids,
    async client(opts = {}) {
      const c = await AstraClient.connect({ clientName: 'test', env, ...opts });
      clients.push(c);
      return c;
    },
    child(args) {
      const proc = startNode([CHILD, JSON.stringify(args)], env);
      children.push(proc);
      let stderr = '';
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      proc.on('exit', (code) => {
        if (code) process.stderr.write(`client child ${args.name ?? ''} exited ${code}: ${stderr}\n`);
      });
      const out = jsonLines(proc);
      return {
        proc,
        out,
        events: () =>
          (out.lines as { ev: string; seq: number; type: string; status?: string; pid?: number }[]).filter((l) => l.ev === 'event'),
      };
    },
  };
}

export function line(ev: string, pred: (l: Record<string, unknown>) => boolean = () => true): (v: unknown) => boolean {
  return (v) => typeof v === 'object' && v !== null && (v as { ev?: unknown }).ev === ev && pred(v as Record<string, unknown>);
}

export function expectContiguous(seqs: number[], from: number): void {
  const expected = Array.from({ length: seqs.length }, (_, i) => from + i);
  if (JSON.stringify(seqs) !== JSON.stringify(expected)) {
    const dup = seqs.filter((s, i) => seqs.indexOf(s) !== i);
    const gaps = seqs.slice(1).map((s, i) => [seqs[i]!, s]).filter(([a, b]) => b !== a + 1);
    throw new Error(`seqs are not contiguous from ${from}: duplicates ${JSON.stringify(dup)}, jumps ${JSON.stringify(gaps)}`);
  }
}

export { waitFor, isAlive };
