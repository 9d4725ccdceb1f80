// Trace context through a real daemon: a turn/start's `trace` is on the daemon's log line for the
// request and reaches the model server as the `traceparent` / `tracestate` headers of the chat
// engine's requests (the fake model server, a real HTTP server, records them).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Connection } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION } from '../../protocol/index.js';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { cleanupHome, envFor, makeHome, readRecordFile, runCli, waitFor } from '../helpers/processes.js';

const homes: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACESTATE = 'astra=t61rcWkgMzE';

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe('trace context', () => {
  it('is logged with its request and sent to the model server by the chat engine; a malformed one is not sent', async () => {
    const server = await startModelServerProcess(['plain-answer', 'plain-answer'], children);
    const home = makeHome();
    homes.push(home);
    const env = envFor(home, { ASTRA_CHAT_BASE_URL: server.baseUrl });
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const rec = readRecordFile(home)!;
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection({ path: rec.endpoint });
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
    const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 10_000 });
    const ended = new Set<string>();
    conn.onNotification((method, params: any) => { // eslint-disable-line @typescript-eslint/no-explicit-any
      const evs = method === 'session/event' ? [params] : method === 'session/events' ? params.events : [];
      for (const e of evs) if (e.type === 'turn.completed') ended.add(e.data.turnId);
    });
    try {
      await conn.request('initialize', { protocolVersion: PROTOCOL_VERSION, token: rec.token, clientInfo: { name: 'tracer', version: '1' } });
      conn.notify('initialized', {});
      const { session } = (await conn.request('session/create', { engine: 'chat', engineOptions: { model: 'llama3.1' } })) as { session: { id: string } };
      const sessionId = session.id;
      const { epoch } = (await conn.request('lease/acquire', { sessionId })) as { epoch: number };
      await conn.request('session/subscribe', { sessionId, sinceSeq: 0 });
      const turn = async (key: string, trace: { traceparent: string; tracestate?: string }) => {
        const { turnId } = (await conn.request('turn/start', { sessionId, epoch, input: { text: 'hello' }, idempotencyKey: key }, { trace })) as { turnId: string };
        await waitFor(`turn ${key} to end`, () => ended.has(turnId));
      };
      await turn('t1', { traceparent: TRACEPARENT, tracestate: TRACESTATE });
      await turn('t2', { traceparent: 'not-a-traceparent\r\nx-injected: 1' });

      const reqs = await server.requests();
      expect(reqs).toHaveLength(2);
      expect(reqs[0]!.headers.traceparent).toBe(TRACEPARENT);
      expect(reqs[0]!.headers.tracestate).toBe(TRACESTATE);
      expect(reqs[1]!.headers.traceparent).toBeUndefined();
      expect(reqs[1]!.headers['x-injected']).toBeUndefined();

      const logFile = filesUnder(home).find((f) => f.endsWith('daemon.log'))!;
      const lines = await waitFor('the request line in the log', () => {
        const all = fs.readFileSync(logFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
        return all.some((l) => l.traceparent === TRACEPARENT) && all;
      });
      expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', method: 'turn/start', traceparent: TRACEPARENT, tracestate: TRACESTATE }));
    } finally {
      conn.close();
      await runCli(['daemon', 'stop'], env);
    }
  });
});
