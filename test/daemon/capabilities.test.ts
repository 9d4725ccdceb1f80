// Capability discovery through real processes (docs/protocol.md, "Capabilities"): what initialize and
// daemon/capabilities say of the engines, a create on an unavailable engine refused before anything is
// journaled, and the experimental surface (daemon/capabilities, acp.update's `update`) only for a
// client that said experimentalApi: true.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Driver, type Line } from '../helpers/driver.js';
import { cleanupHome, closedPort, envFor, jsonLines, makeHome, ROOT, runCli, startNode } from '../helpers/processes.js';
import { pair, request, startWeb, stopAllWebs } from '../web/gateway-helpers.js';

const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
const OFFLINE_DAEMON = path.join(ROOT, 'test', 'fixtures', 'unavailable-engine-daemon.mjs');

const homes: string[] = [];
const drivers: Driver[] = [];
afterEach(async () => {
  await stopAllWebs();
  for (const d of drivers.splice(0)) d.kill();
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

function homeEnv(extra: Record<string, string> = {}) {
  const home = makeHome();
  homes.push(home);
  const env = envFor(home, extra);
  for (const k of ['ASTRA_CHAT_MODEL', 'ASTRA_CHAT_BASE_URL', 'ASTRA_TERMINAL']) if (!(k in extra)) delete env[k];
  return { home, env };
}

async function started(extra: Record<string, string> = {}) {
  const { home, env } = homeEnv(extra);
  const r = await runCli(['daemon', 'start'], env);
  expect(r.code, r.stderr).toBe(0);
  return { home, env };
}

async function driver(env: NodeJS.ProcessEnv, name: string, experimental = false) {
  const d = new Driver(env, name, experimental ? { DRIVER_EXPERIMENTAL: '1' } : {});
  drivers.push(d);
  return d.ready();
}


const sessionDirs = (home: string) => {
  const dir = path.join(home, 'data', 'sessions');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};
const engine = (init: Line, name: string) => (init.engines as Line[]).find((e) => e.name === name);

describe('capability discovery', () => {
  it('initialize lists every engine with its availability (chat not configured: unavailable, saying why), the user agent, home and platform', async () => {
    const { home, env } = await started();
    const d = await driver(env, 'caps');
    const init = d.init;
    expect((init.engines as Line[]).map((e) => e.name).sort()).toEqual(['acp', 'chat', 'shell', 'synthetic']);
    expect(engine(init, 'chat')).toMatchObject({ available: false, reason: expect.stringMatching(/^not configured: .*ASTRA_CHAT_MODEL/) });
    expect(engine(init, 'acp')).toEqual({ name: 'acp', available: true });
    expect(engine(init, 'synthetic')).toEqual({ name: 'synthetic', available: true });
    expect(engine(init, 'shell')).toMatchObject({ available: true, terminal: expect.stringMatching(/^(pty|pipes)$/) });
    expect(init.userAgent).toMatch(/^astra\/\S+ \(node \S+; \S+ \S+\)$/);
    expect(init.home).toBe(home);
    expect(init.platform).toBe(process.platform);
    expect(init.experimentalApi).toBe(false);
    // The methods this connection may call: no experimental one without the flag.
    expect(init.methods).toContain('session/create');
    expect(init.methods).not.toContain('daemon/capabilities');

    // A create on it with the daemon's defaults is refused, typed, and leaves no session behind.
    const err = await d.callError('session/create', { engine: 'chat' });
    expect(err.reason).toBe('invalid_params');
    expect(err.message).toContain('ASTRA_CHAT_MODEL');
    expect(sessionDirs(home)).toEqual([]);
    expect((await d.call('session/list', {})).sessions).toEqual([]);
  });

  it('ASTRA_TERMINAL=pipes: shell is available with its commands on pipes, and says so', async () => {
    const { env } = await started({ ASTRA_TERMINAL: 'pipes' });
    const d = await driver(env, 'caps');
    expect(engine(d.init, 'shell')).toMatchObject({ available: true, terminal: 'pipes', reason: expect.stringContaining('ASTRA_TERMINAL=pipes') });
  });

  it('chat configured with a model server that does not answer: unavailable (unreachable, what to do); a create naming its model is not probed and succeeds', async () => {
    const port = await closedPort();
    const { env } = await started({ ASTRA_CHAT_MODEL: 'llama3.1', ASTRA_CHAT_BASE_URL: `http://127.0.0.1:${port}/v1` });
    const d = await driver(env, 'caps');
    expect(engine(d.init, 'chat')).toMatchObject({ available: false, reason: expect.stringMatching(new RegExp(`^unreachable: the model server at http://127.0.0.1:${port}/v1 does not answer \\(ECONNREFUSED\\).*ASTRA_CHAT_BASE_URL`)) });
    const { session } = await d.call('session/create', { engine: 'chat' });
    expect(session.engine).toBe('chat');
  });

  it('a create on an engine that says it is unavailable is engine_unavailable with its reason, before anything is journaled', async () => {
    const { home, env } = homeEnv();
    const child = startNode([OFFLINE_DAEMON], env);
    const out = jsonLines(child);
    await out.next((l) => (l as Line).ready === true, 15_000);
    const d = await driver(env, 'caps');
    expect(engine(d.init, 'offline')).toEqual({ name: 'offline', available: false, reason: 'the offline engine is switched off for this test' });
    const err = await d.callError('session/create', { engine: 'offline', idempotencyKey: 'k1' });
    expect(err.reason).toBe('engine_unavailable');
    expect(err.message).toContain('the offline engine is switched off for this test');
    expect(err.data).toMatchObject({ engine: 'offline' });
    expect(sessionDirs(home)).toEqual([]);
    expect((await d.call('session/list', {})).sessions).toEqual([]);
    expect((await d.call('mutation/status', { idempotencyKey: 'k1' })).state).toBe('unknown');
    child.kill('SIGTERM');
  });

  it('an experimental method is experimental_not_enabled without experimentalApi, and served with it', async () => {
    const { home, env } = await started();
    const plain = await driver(env, 'plain');
    const err = await plain.callError('daemon/capabilities', {});
    expect(err.reason).toBe('experimental_not_enabled');
    expect(err.message).toContain('experimentalApi');

    const opted = await driver(env, 'opted', true);
    expect(opted.init.experimentalApi).toBe(true);
    expect(opted.init.methods).toContain('daemon/capabilities');
    const caps = await opted.call('daemon/capabilities', {});
    expect(caps).toMatchObject({ experimentalApi: true, home, platform: process.platform, userAgent: opted.init.userAgent });
    expect(caps.engines).toEqual(opted.init.engines);
    expect(caps.methods).toEqual(opted.init.methods);
  });

  it('acp.update\'s experimental `update` is left out for a client without experimentalApi (live and read back) and sent with it', async () => {
    const { env } = await started({ ASTRA_ACP_START_TIMEOUT_MS: '15000' });
    const [plain, opted] = await Promise.all([driver(env, 'plain'), driver(env, 'opted', true)]);
    const { session } = await opted.call('session/create', { engine: 'acp', approvalPolicy: 'ask', cwd: ROOT, engineOptions: { command: process.execPath, args: [AGENT] } }, 30_000);
    const sessionId = session.id as string;
    await plain.call('session/subscribe', { sessionId, sinceSeq: 0 });
    await opted.call('session/subscribe', { sessionId, sinceSeq: 0 });
    const lease = await opted.call('lease/acquire', { sessionId });
    const { turnId } = await opted.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'rich 5' }, idempotencyKey: 'k1' });
    const ended = (d: Driver) => d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId, 20_000);
    await Promise.all([ended(plain), ended(opted)]);
    const updates = (events: Line[]) => events.filter((e) => e.type === 'acp.update').map((e) => e.data);
    expect(updates(opted.events(sessionId))).toEqual([{ turnId, kind: 'future_update_kind', update: { sessionUpdate: 'future_update_kind', something: { nested: [1, 2] } } }]);
    expect(updates(plain.events(sessionId))).toEqual([{ turnId, kind: 'future_update_kind' }]);
    // Everything else is the same, seq for seq.
    expect(plain.events(sessionId).map((e) => e.seq)).toEqual(opted.events(sessionId).map((e) => e.seq));
    expect(updates((await plain.call('session/read', { sessionId })).events)).toEqual([{ turnId, kind: 'future_update_kind' }]);
    expect(updates((await opted.call('session/read', { sessionId })).events)[0]).toHaveProperty('update');
  });

  it('GET /v1/capabilities says the same of the daemon as initialize: engines, user agent, home, platform', async () => {
    const { home, env } = await started();
    const d = await driver(env, 'caps');
    const g = await startWeb(env);
    const cookie = await pair(g.port, g.link);
    const r = await request(g.port, 'GET', '/v1/capabilities', { cookie, tab: 't' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ engines: d.init.engines, userAgent: d.init.userAgent, home, platform: process.platform });
    expect(engine(r.body as Line, 'chat')).toMatchObject({ available: false, reason: expect.stringMatching(/^not configured/) });
  });
});
