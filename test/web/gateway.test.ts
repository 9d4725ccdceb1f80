// `astra web` over raw HTTP against a real gateway process and a real daemon (temp ASTRA_HOME each):
// pairing, 401s, Host and Origin refusals, observer links, the SSE contract, approvals, the envelope.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { openSse, pair, request, startWeb, stopWeb, codeOf, type GatewayProc, stopAllWebs } from './gateway-helpers.js';

const newHome = useTempHomes('aw');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);

async function setup(extra: Record<string, string> = {}, args: string[] = []): Promise<{ home: string; env: NodeJS.ProcessEnv; g: GatewayProc; cookie: string }> {
  const home = newHome();
  const env = envFor(home, extra);
  const g = await startWeb(env, args);
  const cookie = await pair(g.port, g.link);
  return { home, env, g, cookie };
}

async function newSession(g: GatewayProc, cookie: string, approvalPolicy: 'ask' | 'auto', tab = 'tab1'): Promise<string> {
  const r = await request(g.port, 'POST', '/v1/sessions', { cookie, tab, body: { title: 'web test', approvalPolicy, cwd: process.cwd() } });
  expect(r.status, r.text).toBe(201);
  return r.body.session.id as string;
}

function expectEnvelope(r: { body: any }, reason: string): void {
  expect(r.body).toMatchObject({ error: { reason, code: expect.any(Number), message: expect.any(String), retryable: expect.any(Boolean) } });
}

describe('astra web: pairing and authentication', () => {
  it('answers 401 without the cookie except on /v1/health and /v1/pair, and a code pairs once', async () => {
    const home = newHome();
    const env = envFor(home);
    const g = await startWeb(env);
    expect((await request(g.port, 'GET', '/v1/health')).status).toBe(200);
    for (const p of ['/v1/me', '/v1/sessions', '/v1/capabilities', '/v1/sessions/x/events']) {
      const r = await request(g.port, 'GET', p);
      expect(r.status, p).toBe(401);
      expectEnvelope(r, 'unauthorized');
    }
    const r = await request(g.port, 'POST', '/v1/pair', { body: { code: codeOf(g.link) } });
    expect(r.status).toBe(200);
    const setCookie = String(r.headers['set-cookie']?.[0]);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    const cookie = setCookie.split(';')[0]!;
    const me = await request(g.port, 'GET', '/v1/me', { cookie, tab: 't1' });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ readOnly: false, tabId: 't1', clientId: expect.stringMatching(/^c_/) });
    // The same code again: refused, and no second cookie.
    const again = await request(g.port, 'POST', '/v1/pair', { body: { code: codeOf(g.link) } });
    expect(again.status).toBe(401);
    expect(again.headers['set-cookie']).toBeUndefined();
    // Neither the code nor the cookie value appears in the gateway's output or the daemon's log.
    const token = cookie.split('=')[1]!;
    const logs = g.stderr() + fs.readFileSync(path.join(home, 'logs', 'daemon.log'), 'utf8');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(codeOf(g.link));
    expect(await stopWeb(g)).toBe(0);
  });

  it('refuses a pairing code once it is older than its lifetime', async () => {
    const env = envFor(newHome(), { ASTRA_WEB_PAIR_TTL_MS: '1' });
    const g = await startWeb(env);
    const r = await request(g.port, 'POST', '/v1/pair', { body: { code: codeOf(g.link) } });
    expect(r.status).toBe(401);
    expectEnvelope(r, 'unauthorized');
    expect(r.body.error.message).toMatch(/astra web pair/);
  });

  it('astra web pair prints a fresh link for the running gateway, and an observer link cannot write', async () => {
    const { env, g, cookie } = await setup();
    const id = await newSession(g, cookie, 'auto');
    const out = await runCli(['web', 'pair', '--observe'], env);
    expect(out.code, out.stderr).toBe(0);
    const link = out.stdout.trim();
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${g.port}/#pair=`));
    const observer = await pair(g.port, link);
    expect((await request(g.port, 'GET', '/v1/me', { cookie: observer })).body.readOnly).toBe(true);
    expect((await request(g.port, 'GET', '/v1/sessions', { cookie: observer })).status).toBe(200);
    for (const [method, p, body] of [
      ['POST', '/v1/sessions', { title: 'nope' }],
      ['POST', `/v1/sessions/${id}/lease`, { takeover: true }],
      ['POST', `/v1/sessions/${id}/messages`, { text: 'echo no', idempotencyKey: 'k' }],
      ['POST', `/v1/sessions/${id}/cancel`, {}],
      ['POST', '/v1/approvals/appr_x', { decision: 'approve', revision: 'appr_x', idempotencyKey: 'k' }],
    ] as const) {
      const r = await request(g.port, method, p, { cookie: observer, body });
      expect(r.status, `${method} ${p}`).toBe(403);
      expectEnvelope(r, 'not_controller');
    }
    const list = await request(g.port, 'GET', '/v1/sessions', { cookie });
    expect(list.body.sessions).toHaveLength(1);
  });

  it('astra web --observe prints a read-only link, and a second astra web is refused with the running one named', async () => {
    const env = envFor(newHome());
    const g = await startWeb(env, ['--observe']);
    const cookie = await pair(g.port, g.link);
    expect((await request(g.port, 'GET', '/v1/me', { cookie })).body).toMatchObject({ readOnly: true, clientName: expect.stringMatching(/^astra web observer /) });
    const second = await runCli(['web'], env);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain(`a gateway already runs for this user at http://127.0.0.1:${g.port}/`);
    expect(second.stderr).toContain('astra web pair');
  });

  it('refuses any address but 127.0.0.1 to listen on', async () => {
    const r = await runCli(['web', '--host', '0.0.0.0'], envFor(newHome()));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/127\.0\.0\.1 only/);
  });
});

describe('astra web: Host and Origin', () => {
  it('refuses a Host that is not a loopback name with the bound port (DNS rebinding)', async () => {
    const { g, cookie } = await setup();
    for (const host of ['evil.example', `evil.example:${g.port}`, `127.0.0.1:${g.port + 1}`]) {
      for (const p of ['/', '/v1/health', '/v1/sessions']) {
        const r = await request(g.port, 'GET', p, { cookie, headers: { Host: host } });
        expect(r.status, `${host} ${p}`).toBe(421);
        expectEnvelope(r, 'invalid_request');
      }
    }
    expect((await request(g.port, 'GET', '/v1/sessions', { cookie, headers: { Host: `localhost:${g.port}` } })).status).toBe(200);
  });

  it('refuses state-changing requests and event streams from another origin, and nothing happens', async () => {
    const { g, cookie } = await setup();
    const id = await newSession(g, cookie, 'auto');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const evil = { Origin: 'http://evil.example' };
    const start = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', headers: evil, body: { text: 'echo pwned', idempotencyKey: 'k1' } });
    expect(start.status).toBe(403);
    expectEnvelope(start, 'unauthorized');
    const create = await request(g.port, 'POST', '/v1/sessions', { cookie, headers: { 'Sec-Fetch-Site': 'cross-site' }, body: {} });
    expect(create.status).toBe(403);
    const sse = await request(g.port, 'GET', `/v1/sessions/${id}/events`, { cookie, headers: evil });
    expect(sse.status).toBe(403);
    const read = await request(g.port, 'GET', `/v1/sessions/${id}`, { cookie });
    expect(read.body.events.map((e: { type: string }) => e.type)).not.toContain('turn.started');
    expect((await request(g.port, 'GET', '/v1/sessions', { cookie })).body.sessions).toHaveLength(1);
    // The page's own origin passes.
    const own = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', headers: { Origin: g.origin }, body: { text: 'echo fine', idempotencyKey: 'k2' } });
    expect(own.status, own.text).toBe(202);
  });

  it('serves the page with a CSP of its own origin only, no framing and no sniffing', async () => {
    const { g } = await setup();
    const r = await request(g.port, 'GET', '/');
    expect(r.status).toBe(200);
    expect(r.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect(r.headers['x-frame-options']).toBe('DENY');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.text).toContain('/app.js');
    expect((await request(g.port, 'GET', '/app.js')).headers['content-type']).toMatch(/javascript/);
  });
});

describe('astra web: the error envelope and bounds', () => {
  it('answers bad requests with the envelope and the wire reasons, and keeps serving', async () => {
    const { g, cookie } = await setup();
    const cases: Array<[string, string, object, number, string]> = [
      ['GET', '/v1/nothing', {}, 404, 'method_not_found'],
      ['GET', '/v1/sessions/ses_missing', {}, 404, 'not_found'],
      ['POST', '/v1/sessions', { rawBody: '{not json' }, 400, 'parse_error'],
      ['POST', '/v1/sessions', { body: { approvalPolicy: 'sometimes' } }, 400, 'invalid_params'],
      ['POST', '/v1/sessions', { rawBody: JSON.stringify({ title: 'x'.repeat(200 * 1024) }) }, 413, 'frame_too_large'],
      ['DELETE', '/v1/sessions', {}, 405, 'method_not_found'],
    ];
    for (const [method, p, o, status, reason] of cases) {
      const r = await request(g.port, method, p, { cookie, ...o });
      expect(r.status, `${method} ${p}`).toBe(status);
      expectEnvelope(r, reason);
    }
    // A body is checked against the contract's schema of its endpoint (schema/astra-http-v1.json), with the daemon's bounds.
    for (const [body, says] of [
      [{ approvalTimeoutMs: 500 }, /body\.approvalTimeoutMs must be >= 1000/],
      [{ approvalTimeoutMs: 8 * 24 * 3600 * 1000 }, /body\.approvalTimeoutMs must be <= 604800000/],
      [{ title: 5 }, /body\.title must be a string/],
      [{ engineOptions: ['llama3.1'] }, /body\.engineOptions/],
    ] as const) {
      const r = await request(g.port, 'POST', '/v1/sessions', { cookie, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expectEnvelope(r, 'invalid_params');
      expect(r.body.error.message).toMatch(says);
    }
    const id = await newSession(g, cookie, 'auto');
    const noLease = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, body: { text: 'echo x', idempotencyKey: 'k' } });
    expect(noLease.status).toBe(403);
    expectEnvelope(noLease, 'not_controller');
    expect(noLease.body.error.message).toMatch(/take control/);
    expect((await request(g.port, 'GET', '/v1/health')).status).toBe(200);
  });

  it('closes a request whose body does not arrive in time with 408, and keeps an event stream open past that deadline', async () => {
    const { g, cookie } = await setup({ ASTRA_WEB_REQUEST_TIMEOUT_MS: '600', ASTRA_WEB_HEARTBEAT_MS: '200' });
    const id = await newSession(g, cookie, 'auto');
    const stream = await openSse(g.port, `/v1/sessions/${id}/events?tab=a`, { cookie });
    const t0 = Date.now();
    const sock = net.connect(g.port, '127.0.0.1');
    sock.write(`POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:${g.port}\r\nCookie: ${cookie}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"title":`);
    let answer = '';
    sock.on('data', (d) => (answer += d.toString('latin1')));
    await new Promise<void>((resolve) => sock.once('close', () => resolve()));
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    // The stream's response outlives the deadline: heartbeats keep coming after it.
    const after = Date.now();
    await stream.next((f) => f.event === 'heartbeat' && f.data.ts > after, 5_000, 'a heartbeat after the deadline');
    expect(stream.frames.some((f) => f.event === 'error')).toBe(false);
    stream.close();
  });

  it('answers overloaded past its bound of connections instead of failing', async () => {
    const { g, cookie } = await setup({ ASTRA_WEB_MAX_CONNECTIONS: '2' });
    const id = await newSession(g, cookie, 'auto');
    const a = await openSse(g.port, `/v1/sessions/${id}/events?tab=a`, { cookie });
    const b = await openSse(g.port, `/v1/sessions/${id}/events?tab=b`, { cookie });
    const r = await request(g.port, 'GET', '/v1/sessions', { cookie });
    expect(r.status).toBe(503);
    expectEnvelope(r, 'overloaded');
    expect(r.body.error.retryable).toBe(true);
    a.close();
    b.close();
    await waitFor('a connection to be free again', async () => (await request(g.port, 'GET', '/v1/health')).status === 200);
  });
});

describe('astra web: streams per tab', () => {
  it('answers overloaded for a tab\'s ninth event stream, and a newer stream of the same session replaces the older', async () => {
    const { g, cookie } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await newSession(g, cookie, 'auto'));
    const streams = [];
    for (const id of ids.slice(0, 8)) {
      const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
      expect(s.status).toBe(200);
      await s.next((f) => f.event === 'replayed');
      streams.push(s);
    }
    const ninth = await request(g.port, 'GET', `/v1/sessions/${ids[8]}/events?tab=t`, { cookie });
    expect(ninth.status).toBe(503);
    expectEnvelope(ninth, 'overloaded');
    // Another tab has bounds of its own.
    const other = await openSse(g.port, `/v1/sessions/${ids[8]}/events?tab=u`, { cookie });
    expect(other.status).toBe(200);
    // The browser reconnecting to the same session: the new stream replaces the old one, which ends.
    const again = await openSse(g.port, `/v1/sessions/${ids[0]}/events?tab=t`, { cookie });
    expect(again.status).toBe(200);
    await again.next((f) => f.event === 'replayed');
    for (const s of [...streams, other, again]) s.close();
  });
});

describe('astra web: events over SSE', () => {
  it('streams id = seq, event = type, data = JSON, command output as base64; Last-Event-ID and ?since= replay from there', async () => {
    const { g, cookie } = await setup({ ASTRA_WEB_HEARTBEAT_MS: '200' });
    const id = await newSession(g, cookie, 'auto');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toMatch(/text\/event-stream/);
    await s.next((f) => f.event === 'replayed');
    const started = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf "hello\\n"', idempotencyKey: 'k1' } });
    expect(started.status, started.text).toBe(202);
    const done = await s.next((f) => f.event === 'turn.completed');
    const out = await s.next((f) => f.event === 'command.output');
    expect(out.data.data.encoding).toBe('base64');
    expect(Buffer.from(out.data.data.data, 'base64').toString()).toMatch(/^hello\r?\n$/); // \r\n from a pseudo-terminal
    for (const f of s.frames.filter((x) => x.id !== undefined)) {
      expect(Number(f.id)).toBe(f.data.seq);
      expect(f.event).toBe(f.data.type);
    }
    const seqs = s.frames.filter((x) => x.id !== undefined).map((f) => f.data.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // The same idempotencyKey again starts nothing new.
    const again = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf "hello\\n"', idempotencyKey: 'k1' } });
    expect(again.body.turnId).toBe(started.body.turnId);
    await s.next((f) => f.event === 'heartbeat', 5_000, 'a heartbeat');
    s.close();

    const from = Number(out.id);
    const replay = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie, headers: { 'Last-Event-ID': String(from) } });
    await replay.next((f) => f.event === 'replayed');
    const replayed = replay.frames.filter((x) => x.id !== undefined).map((f) => f.data.seq);
    expect(replayed[0]).toBe(from + 1);
    expect(replayed.at(-1)).toBe(done.data.seq);
    replay.close();
    const since = await openSse(g.port, `/v1/sessions/${id}/events?tab=t2&since=${from - 1}`, { cookie });
    await since.next((f) => f.event === 'replayed');
    expect(since.frames.find((f) => f.id !== undefined)!.data.seq).toBe(from);
    since.close();
    const ahead = await request(g.port, 'GET', `/v1/sessions/${id}/events?since=9999`, { cookie });
    expect(ahead.status).toBe(409);
    expectEnvelope(ahead, 'cursor_ahead');
  });

  it('says lagged when the browser reads too slowly, then resyncs from the journal with nothing lost or repeated', async () => {
    const { g, cookie } = await setup();
    const id = await newSession(g, cookie, 'auto');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
    await s.next((f) => f.event === 'replayed');
    s.pause();
    const total = 24 * 1024 * 1024;
    await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: `head -c ${total} /dev/zero | tr '\\0' a`, idempotencyKey: 'k' } });
    await waitFor('the turn to finish while the reader sleeps', async () => (await request(g.port, 'GET', `/v1/sessions/${id}?limit=1`, { cookie })).body.session.state === 'idle', 30_000);
    s.resume();
    await s.next((f) => f.event === 'turn.completed', 30_000);
    expect(s.frames.some((f) => f.event === 'lagged')).toBe(true);
    expect(s.frames.some((f) => f.event === 'resynced')).toBe(true);
    const seqs = s.frames.filter((f) => f.id !== undefined).map((f) => f.data.seq as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const bytes = s.frames.filter((f) => f.event === 'command.output').reduce((n, f) => n + Buffer.from(f.data.data.data, 'base64').length, 0);
    expect(bytes).toBe(total);
    s.close();
  });

  it('answers an approval through the daemon\'s approval/answer: a stale revision or an expired approval is the expired envelope, a second answer not_found, the same key the first result', async () => {
    const { g, cookie } = await setup();
    const id = await newSession(g, cookie, 'ask');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
    await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'echo approved', idempotencyKey: 'k1' } });
    const asked = await s.next((f) => f.event === 'approval.requested');
    const approvalId = asked.data.data.approvalId as string;
    const revision = asked.data.data.revision as number;
    expect(revision).toBe(1);
    const answer = (tab: string, body: Record<string, unknown>) => request(g.port, 'POST', `/v1/approvals/${approvalId}`, { cookie, tab, body });

    const stale = await answer('t', { decision: 'approve', revision: revision + 1, idempotencyKey: 'a0' });
    expect(stale.status, stale.text).toBe(409);
    expectEnvelope(stale, 'approval_expired');
    expect(stale.body.error).toMatchObject({ retryable: false, data: { approvalId, revision } });
    const malformed = await answer('t', { decision: 'approve', revision: String(revision) });
    expect(malformed.status).toBe(400);
    expectEnvelope(malformed, 'invalid_params');
    // Another tab does not control the session (it names the session: it has seen no prompt of it).
    const other = await answer('other', { decision: 'deny', revision, sessionId: id, idempotencyKey: 'a1' });
    expect(other.status).toBe(403);
    expectEnvelope(other, 'not_controller');
    expect(s.frames.some((f) => f.event === 'approval.resolved')).toBe(false);

    const ok = await answer('t', { decision: 'approve', revision, idempotencyKey: 'a2' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ approvalId, sessionId: id, decision: 'approve', revision });
    const resolved = await s.next((f) => f.event === 'approval.resolved');
    expect(resolved.data.data).toMatchObject({ decision: 'approve', by: { clientName: expect.stringMatching(/^astra web tab /) } });
    await s.next((f) => f.event === 'turn.completed');
    const out = s.frames.find((f) => f.event === 'command.output')!;
    expect(Buffer.from(out.data.data.data, 'base64').toString()).toMatch(/^approved\r?\n$/);
    const retry = await answer('t', { decision: 'approve', revision, idempotencyKey: 'a2' });
    expect(retry.body).toEqual(ok.body);
    const late = await answer('t', { decision: 'deny', revision, idempotencyKey: 'a3' });
    expect(late.status).toBe(404);
    expectEnvelope(late, 'not_found');
    expect(s.frames.filter((f) => f.event === 'approval.resolved')).toHaveLength(1);
    s.close();
  });

  it('an answer after the approval expired is the expired envelope, and the command never runs', async () => {
    const { g, cookie } = await setup();
    const r = await request(g.port, 'POST', '/v1/sessions', { cookie, tab: 't', body: { title: 'expiry', approvalPolicy: 'ask', approvalTimeoutMs: 1000, cwd: process.cwd() } });
    expect(r.status, r.text).toBe(201);
    const id = r.body.session.id as string;
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
    await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'echo never', idempotencyKey: 'k1' } });
    const asked = await s.next((f) => f.event === 'approval.requested');
    expect(asked.data.data.expiresAt).toEqual(expect.any(Number));
    const denied = await s.next((f) => f.event === 'approval.resolved', 10_000, 'the approval to expire');
    expect(denied.data.data).toMatchObject({ decision: 'deny', reason: expect.stringMatching(/^expired/) });
    const late = await request(g.port, 'POST', `/v1/approvals/${asked.data.data.approvalId}`, { cookie, tab: 't', body: { decision: 'approve', revision: asked.data.data.revision } });
    expect(late.status, late.text).toBe(409);
    expectEnvelope(late, 'approval_expired');
    await s.next((f) => f.event === 'turn.completed');
    expect(s.frames.some((f) => f.event === 'command.started')).toBe(false);
    s.close();
  });

  it('gives each tab its own client of the daemon, lists them in daemon status, and stops on Ctrl-C', async () => {
    const { env, home, g, cookie } = await setup();
    const a = await request(g.port, 'GET', '/v1/me', { cookie, tab: 'a' });
    const b = await request(g.port, 'GET', '/v1/me', { cookie, tab: 'b' });
    expect(a.body.clientId).not.toBe(b.body.clientId);
    const id = await newSession(g, cookie, 'auto', 'a');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 'a', body: {} })).status).toBe(200);
    const held = await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 'b', body: {} });
    expect(held.status).toBe(409);
    expectEnvelope(held, 'lease_held');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 'b', body: { takeover: true } })).status).toBe(200);
    const view = await request(g.port, 'GET', `/v1/sessions/${id}`, { cookie, tab: 'b' });
    expect(view.body.session.controlledByMe).toBe(true);
    expect(view.body.session.controller.connectionId).toBe(b.body.clientId);
    expect((await request(g.port, 'DELETE', `/v1/sessions/${id}/lease`, { cookie, tab: 'b' })).body.released).toBe(true);
    const status = await runCli(['daemon', 'status'], env);
    expect(status.stdout).toContain(a.body.clientId);
    expect(status.stdout).toContain(b.body.clientId);
    expect(fs.existsSync(path.join(home, 'run', 'web.json'))).toBe(true);
    expect(fs.statSync(path.join(home, 'run', 'web.json')).mode & 0o777).toBe(0o600);
    expect(await stopWeb(g, 'SIGINT')).toBe(0);
    // Only the port stays (the next gateway listens there again): no pid, no secret.
    expect(JSON.parse(fs.readFileSync(path.join(home, 'run', 'web.json'), 'utf8'))).toEqual({ port: g.port, stoppedAt: expect.any(Number) });
  });
});
