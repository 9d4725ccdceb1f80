// The HTTP contract's table (web/gateway/contract.ts), its JSON Schema (schema/astra-http-v1.json),
// the router and docs/http.md say the same thing; real answers of a real gateway match the schemas.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, STREAM_EVENTS, errorEnvelopeSchema, httpEventSchema, renderHttpSchema, type Endpoint } from '../../web/gateway/contract.js';
import { matchRoute } from '../../web/gateway/routes.js';
import type { Schema } from '../../protocol/index.js';
import { ROOT, envFor, useTempHomes } from '../helpers/processes.js';
import { openSse, pair, request, startWeb, stopAllWebs } from './gateway-helpers.js';

const SCHEMA_FILE = path.join(ROOT, 'schema', 'astra-http-v1.json');
const DOC = fs.readFileSync(path.join(ROOT, 'docs', 'http.md'), 'utf8');
const FIX = 'run `npm run build && node scripts/gen-http-schema.mjs` and commit schema/astra-http-v1.json';
const newHome = useTempHomes('ac');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);

function endpoint(method: string, p: string): Endpoint {
  const e = ENDPOINTS.find((x) => x.method === method && x.path === p);
  if (!e) throw new Error(`no endpoint ${method} ${p} in the contract`);
  return e;
}

describe('the HTTP contract', () => {
  it('is checked in as exactly what the generator writes', () => {
    const expected = renderHttpSchema();
    const actual = fs.existsSync(SCHEMA_FILE) ? fs.readFileSync(SCHEMA_FILE, 'utf8') : '';
    if (actual !== expected) {
      const a = actual.split('\n');
      const i = expected.split('\n').findIndex((line, n) => line !== a[n]);
      expect.fail(`schema/astra-http-v1.json differs from web/gateway/contract.ts at line ${i + 1}; ${FIX}`);
    }
  });

  it('is documented in docs/http.md: one table row per endpoint and per stream event, and nothing else', () => {
    const rows = [...DOC.matchAll(/^\| `((?:GET|POST|DELETE) \/[^`]+)` \|/gm)].map((m) => m[1]);
    expect(rows).toEqual(ENDPOINTS.map((e) => `${e.method} ${e.path}`));
    const streamRows = [...DOC.matchAll(/^\| `([a-z]+)` \| /gm)].map((m) => m[1]);
    expect(streamRows).toEqual(Object.keys(STREAM_EVENTS));
  });

  it('reaches the page as types only: the built page holds none of the table', () => {
    const bundle = fs.readFileSync(path.join(ROOT, 'dist', 'web', 'page', 'app.js'), 'utf8');
    for (const e of ENDPOINTS) expect(bundle.includes(e.summary), `${e.method} ${e.path}`).toBe(false);
    for (const [name, s] of Object.entries(STREAM_EVENTS)) expect(bundle.includes(s.summary), name).toBe(false);
  });

  it('is what the router serves: every endpoint behind the cookie has a route, with its method', () => {
    for (const e of ENDPOINTS.filter((x) => x.auth)) {
      const found = matchRoute(e.method, e.path.replace('{id}', 'ses_x'));
      expect(found && 'route' in found, `${e.method} ${e.path}`).toBe(true);
    }
    expect(matchRoute('GET', '/v1/nothing')).toBeUndefined();
    expect(matchRoute('PUT', '/v1/sessions')).toEqual({ allowed: ['GET', 'POST'] });
  });

  it('describes the answers a real gateway gives', async () => {
    const env = envFor(newHome(), { ASTRA_WEB_HEARTBEAT_MS: '200' });
    const g = await startWeb(env);
    const check = (method: string, p: string, body: unknown, status: number, got: number): void => {
      const e = endpoint(method, p);
      expect(got, `${method} ${p}`).toBe(e.status);
      expect(status).toBe(e.status);
      expect(e.response!.check(body, `${method} ${p}`)).toBeUndefined();
    };
    const health = await request(g.port, 'GET', '/v1/health');
    check('GET', '/v1/health', health.body, 200, health.status);
    const paired = await request(g.port, 'POST', '/v1/pair', { body: { code: g.link.split('#pair=')[1] } });
    check('POST', '/v1/pair', paired.body, 200, paired.status);
    const cookie = String(paired.headers['set-cookie']![0]).split(';')[0]!;
    const o = { cookie, tab: 'c' };
    for (const p of ['/v1/me', '/v1/capabilities']) {
      const r = await request(g.port, 'GET', p, o);
      check('GET', p, r.body, 200, r.status);
    }
    const created = await request(g.port, 'POST', '/v1/sessions', { ...o, body: { title: 'c', approvalPolicy: 'ask', cwd: ROOT } });
    check('POST', '/v1/sessions', created.body, 201, created.status);
    const id = created.body.session.id as string;
    const list = await request(g.port, 'GET', '/v1/sessions', o);
    check('GET', '/v1/sessions', list.body, 200, list.status);
    const lease = await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { ...o, body: {} });
    check('POST', '/v1/sessions/{id}/lease', lease.body, 200, lease.status);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=c`, { cookie });
    const msg = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { ...o, body: { text: 'echo contract', idempotencyKey: 'k' } });
    check('POST', '/v1/sessions/{id}/messages', msg.body, 202, msg.status);
    const asked = await s.next((f) => f.event === 'approval.requested');
    const approvalId = asked.data.data.approvalId as string;
    const decided = await request(g.port, 'POST', `/v1/approvals/${approvalId}`, { ...o, body: { decision: 'approve', revision: asked.data.data.revision } });
    check('POST', '/v1/approvals/{id}', decided.body, 200, decided.status);
    const stale = await request(g.port, 'POST', `/v1/approvals/${approvalId}`, { ...o, body: { decision: 'approve', revision: 7 } });
    expect(stale.status).toBe(404); // answered already: no longer pending
    expect(errorEnvelopeSchema.check(stale.body, 'error')).toBeUndefined();
    await s.next((f) => f.event === 'turn.completed');
    await s.next((f) => f.event === 'heartbeat');
    for (const f of s.frames) {
      if (f.id !== undefined) expect(httpEventSchema.check(f.data, f.event)).toBeUndefined();
      else expect((STREAM_EVENTS as Record<string, { data: Schema<unknown> } | undefined>)[f.event]?.data.check(f.data, f.event), f.event).toBeUndefined();
    }
    s.close();
    const read = await request(g.port, 'GET', `/v1/sessions/${id}?limit=100`, o);
    check('GET', '/v1/sessions/{id}', read.body, 200, read.status);
    const cancel = await request(g.port, 'POST', `/v1/sessions/${id}/cancel`, { ...o, body: {} });
    check('POST', '/v1/sessions/{id}/cancel', cancel.body, 200, cancel.status);
    const release = await request(g.port, 'DELETE', `/v1/sessions/${id}/lease`, o);
    check('DELETE', '/v1/sessions/{id}/lease', release.body, 200, release.status);
    const refused = await request(g.port, 'GET', '/v1/sessions/ses_none', o);
    expect(errorEnvelopeSchema.check(refused.body, 'error')).toBeUndefined();
    await pair(g.port, g.link).catch((e: Error) => expect(e.message).toMatch(/401/));
  });
});
