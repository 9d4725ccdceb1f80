// The chat engine's model requests through a proxy named in the daemon's environment (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY, or lowercase): a real daemon, a real client process, the fake model server
// as a child process and a real forwarding proxy (test/helpers/http-proxy.ts) on loopback that
// records what went through it.
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startChatDaemon } from '../helpers/chat-daemon.js';
import { Driver, type Line } from '../helpers/driver.js';
import { startTestProxy, type TestProxy } from '../helpers/http-proxy.js';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { cleanupHome } from '../helpers/processes.js';

const homes: string[] = [];
const drivers: Driver[] = [];
const children: ChildProcess[] = [];
const proxies: TestProxy[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) d.kill();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const p of proxies.splice(0)) await p.close();
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

async function proxy(opts: { credentials?: string } = {}) {
  const p = await startTestProxy(opts);
  proxies.push(p);
  return p;
}

/** One turn on a new chat session of a daemon started with `env`: its end and its events. */
async function oneTurn(baseUrl: string, env: Record<string, string>) {
  const { driver } = await startChatDaemon(baseUrl, env, homes, drivers);
  const d = await driver('controller');
  const { session } = await d.call('session/create', { engine: 'chat', engineOptions: { model: 'llama3.1' } });
  await d.call('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
  const lease = await d.call('lease/acquire', { sessionId: session.id });
  const { turnId } = await d.call('turn/start', { sessionId: session.id, epoch: lease.epoch, input: { text: 'hi' }, idempotencyKey: 'k1' });
  const end = await d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId, 20_000);
  const events = d.events(session.id);
  const text = events.filter((e: Line) => e.type === 'message.delta').map((e: Line) => e.data.text).join('');
  const error = events.find((e: Line) => e.type === 'error')?.data as { code: string; message: string } | undefined;
  return { status: end.params.data.status as string, text, error };
}

describe('the chat engine behind a proxy', () => {
  it('sends the model request through HTTP_PROXY (a forward request for an http:// server) and streams the answer back', async () => {
    const server = await startModelServerProcess(['plain-answer'], children);
    const p = await proxy();
    const r = await oneTurn(server.baseUrl, { HTTP_PROXY: p.url });
    expect(r.status, r.error?.message).toBe('completed');
    expect(r.text).toBe('Hello from the model.');
    expect(p.seen).toEqual([{ method: 'POST', target: `${server.baseUrl}/chat/completions` }]);
    expect(await server.requests()).toHaveLength(1);
  });

  it('reads the lowercase variables, sends the proxy the credentials of its URL, and never shows them', async () => {
    const server = await startModelServerProcess(['plain-answer'], children);
    const p = await proxy({ credentials: 'astra:s3cret-pass' });
    const r = await oneTurn(server.baseUrl, { http_proxy: `http://astra:s3cret-pass@127.0.0.1:${p.port}` });
    expect(r.status, r.error?.message).toBe('completed');
    expect(p.seen.map((s) => s.target)).toEqual([`${server.baseUrl}/chat/completions`]);

    const refused = await oneTurn(server.baseUrl, { http_proxy: `http://astra:wrong-pass@127.0.0.1:${p.port}` });
    expect(refused.status).toBe('failed');
    expect(refused.error).toMatchObject({ code: 'model_unreachable' });
    expect(refused.error!.message).toContain(`the proxy http://127.0.0.1:${p.port} (http_proxy) wants credentials (HTTP 407)`);
    expect(refused.error!.message).not.toContain('wrong-pass');
  });

  it('goes straight to the server when NO_PROXY names its host, and the proxy sees nothing', async () => {
    const server = await startModelServerProcess(['plain-answer'], children);
    const p = await proxy();
    const r = await oneTurn(server.baseUrl, { HTTP_PROXY: p.url, HTTPS_PROXY: p.url, NO_PROXY: 'localhost,127.0.0.1' });
    expect(r.status, r.error?.message).toBe('completed');
    expect(r.text).toBe('Hello from the model.');
    expect(p.seen).toEqual([]);
    expect(await server.requests()).toHaveLength(1);
  });

  it('says the proxy refused the connection (not the model server) when nothing listens at the proxy', async () => {
    const server = await startModelServerProcess(['plain-answer'], children);
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as net.AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    const r = await oneTurn(server.baseUrl, { HTTP_PROXY: `http://127.0.0.1:${port}` });
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'model_unreachable' });
    expect(r.error!.message).toContain(`the proxy http://127.0.0.1:${port} (HTTP_PROXY) refused the connection`);
    expect(r.error!.message).toContain('NO_PROXY');
    expect(await server.requests()).toHaveLength(0);
  });
});
