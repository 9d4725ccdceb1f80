// The fake model server (test/fixtures/model-server/server.mjs) as a child process beside a real
// daemon: scripted with fixture names, its recorded requests read over its control endpoints.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT, jsonLines, waitFor } from './processes.js';

const SERVER = path.join(ROOT, 'test', 'fixtures', 'model-server', 'server.mjs');

export interface RecordedModelRequest {
  path: string;
  headers: Record<string, string>;
  body: { model: string; messages: { role: string; content: string | null; tool_call_id?: string; tool_calls?: { id: string }[] }[]; tools?: unknown[] };
  closedByClient: boolean;
  finished: boolean;
}

export interface ModelServerProcess {
  child: ChildProcess;
  /** http://127.0.0.1:PORT/v1, for ASTRA_CHAT_BASE_URL */
  baseUrl: string;
  requests(): Promise<RecordedModelRequest[]>;
  /** Replaces the queue of fixtures answering the next requests. */
  script(names: string[]): Promise<void>;
  waitFor(what: string, pred: (r: RecordedModelRequest[]) => boolean): Promise<unknown>;
}

/** Starts it; the caller kills `child` (by pid) when done. */
export async function startModelServerProcess(script: string[], children: ChildProcess[]): Promise<ModelServerProcess> {
  const child = spawn(process.execPath, [SERVER, ...script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const { baseUrl } = (await jsonLines(child).next((v) => typeof (v as { baseUrl?: unknown }).baseUrl === 'string')) as { baseUrl: string };
  const origin = baseUrl.replace(/\/v1$/, '');
  const requests = async () => (await (await fetch(`${origin}/__requests`)).json()) as RecordedModelRequest[];
  return {
    child,
    baseUrl,
    requests,
    script: async (names) => void (await fetch(`${origin}/__script`, { method: 'POST', body: JSON.stringify(names) })),
    waitFor: (what, pred) => waitFor(what, async () => pred(await requests()), 15_000),
  };
}
