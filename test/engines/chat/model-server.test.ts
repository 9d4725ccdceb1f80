// The fake model server itself, run as a child process the way end-to-end tests beside a real daemon
// will run it: scripted over its control endpoints, its records read back as JSON.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { streamChatCompletion, type ModelStreamPart } from '../../../engines/chat/index.js';
import { isAlive } from '../../runtime/helpers.js';
import { until } from './context.js';

const serverPath = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../fixtures/model-server/server.mjs');
const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

describe('the fake model server as a child process', () => {
  it('prints its address, replays the scripted fixtures, takes a new script and reports what it was sent', async () => {
    const child = spawn(process.execPath, [serverPath, 'plain-answer'], { stdio: ['ignore', 'pipe', 'inherit'] });
    pids.push(child.pid!);
    const first = await new Promise<string>((resolve, reject) => {
      const rl = readline.createInterface({ input: child.stdout! });
      rl.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the fake model server exited with ${code} before printing its address`)));
    });
    const info = JSON.parse(first) as { port: number; baseUrl: string; pid: number };
    expect(info.pid).toBe(child.pid);

    const run = async () => {
      const parts: ModelStreamPart[] = [];
      const req = { baseUrl: info.baseUrl, model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], signal: new AbortController().signal, stallMs: 5000, maxRetryAfterMs: 0, maxAttempts: 1 };
      for await (const p of streamChatCompletion(req)) parts.push(p);
      return parts;
    };
    expect((await run()).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    await fetch(`http://127.0.0.1:${info.port}/__script`, { method: 'POST', body: JSON.stringify(['tool-call']) });
    expect((await run()).at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' });

    const records = (await (await fetch(`http://127.0.0.1:${info.port}/__requests`)).json()) as { path: string; fixture: string; body: { model: string } }[];
    expect(records.map((r) => [r.path, r.fixture, r.body.model])).toEqual([
      ['/v1/chat/completions', 'plain-answer', 'm'],
      ['/v1/chat/completions', 'tool-call', 'm'],
    ]);

    child.kill('SIGTERM');
    await until(() => !isAlive(child.pid!), 'the fake model server to exit on SIGTERM');
  });
});
