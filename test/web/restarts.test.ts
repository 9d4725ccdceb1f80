// `astra web` across restarts, over raw HTTP with a real daemon and real gateway processes: a
// restarted gateway gives a tab its control back with the kept resume token (within the grace, not
// after it), and a restarting daemon is announced on the tab's open streams until its client is back.
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, readRecordFile, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { openSse, pair, request, startWeb, stopWeb, stopAllWebs } from './gateway-helpers.js';

const newHome = useTempHomes('awr');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);

describe('astra web across restarts', () => {
  it('a restarted gateway reclaims a tab\'s lease with its kept resume token, within the grace period', async () => {
    const env = envFor(newHome());
    const g1 = await startWeb(env);
    const cookie1 = await pair(g1.port, g1.link);
    const created = await request(g1.port, 'POST', '/v1/sessions', { cookie: cookie1, tab: 't', body: { title: 'restart', approvalPolicy: 'auto', cwd: process.cwd() } });
    const id = created.body.session.id as string;
    const lease = await request(g1.port, 'POST', `/v1/sessions/${id}/lease`, { cookie: cookie1, tab: 't', body: {} });
    expect(lease.status, lease.text).toBe(200);
    expect(await stopWeb(g1, 'SIGINT')).toBe(0);
    const stoppedAt = Date.now();

    const g2 = await startWeb(env);
    // The pairing survives the restart; the cookie is named after the port, which is reused when free.
    const cookie = `astra_web_${g2.port}=${cookie1.split('=')[1]}`;
    const view = await request(g2.port, 'GET', `/v1/sessions/${id}`, { cookie, tab: 't' });
    expect(view.status, view.text).toBe(200);
    expect(view.body.session.controlledByMe).toBe(true);
    expect(view.body.session.controller?.graceUntil ?? null).toBeNull();
    expect(Date.now() - stoppedAt).toBeLessThan(lease.body.graceMs);
    // It is the controller for real: another tab is refused without takeover, and this tab can start a turn.
    const other = await request(g2.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 'other', body: {} });
    expect(other.status).toBe(409);
    expect(other.body.error.reason).toBe('lease_held');
    const turn = await request(g2.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf ok', idempotencyKey: 'after-restart' } });
    expect(turn.status, turn.text).toBe(202);

    // A released lease is not reclaimed by the next gateway.
    expect((await request(g2.port, 'DELETE', `/v1/sessions/${id}/lease`, { cookie, tab: 't' })).body.released).toBe(true);
    expect(await stopWeb(g2, 'SIGINT')).toBe(0);
    const g3 = await startWeb(env);
    const cookie3 = `astra_web_${g3.port}=${cookie1.split('=')[1]}`;
    const after = await request(g3.port, 'GET', `/v1/sessions/${id}`, { cookie: cookie3, tab: 't' });
    expect(after.body.session.controlledByMe).toBe(false);
  });

  it('says reconnecting on the tab\'s open stream while the daemon restarts, then reconnected, with no event lost or repeated', async () => {
    const home = newHome();
    const env = envFor(home);
    const g = await startWeb(env);
    const cookie = await pair(g.port, g.link);
    const created = await request(g.port, 'POST', '/v1/sessions', { cookie, tab: 't', body: { title: 'daemon restart', approvalPolicy: 'auto', cwd: process.cwd() } });
    const id = created.body.session.id as string;
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t`, { cookie });
    await s.next((f) => f.event === 'replayed');
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf one', idempotencyKey: 'k1' } })).status).toBe(202);
    await s.next((f) => f.event === 'turn.completed');
    expect(s.frames.some((f) => f.event === 'reconnecting')).toBe(false);

    const before = readRecordFile(home)!.pid;
    process.kill(before, 'SIGKILL');
    const down = await s.next((f) => f.event === 'reconnecting', 15_000, 'the reconnecting stream event');
    expect(down.data).toMatchObject({ reason: expect.any(String), daemonShuttingDown: false });
    const up = await s.next((f) => f.event === 'reconnected', 30_000, 'the reconnected stream event');
    expect(up.data.daemonRestarted).toBe(true);
    await waitFor('a new daemon', () => {
      const r = readRecordFile(home);
      return r && r.pid !== before ? r : undefined;
    });
    expect(s.frames.indexOf(up)).toBeGreaterThan(s.frames.indexOf(down));

    // The stream goes on: the reclaimed controller starts a second turn and its events arrive once each.
    const second = await waitFor('a second turn after the restart', async () => {
      const r = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf two', idempotencyKey: 'k2' } });
      return r.status === 202 ? r : undefined;
    }, 15_000);
    expect(second.body.turnId).toEqual(expect.any(String));
    await waitFor('the second turn completed', () => s.frames.filter((f) => f.event === 'turn.completed').length >= 2 || undefined, 20_000);
    const seqs = s.frames.filter((f) => f.id !== undefined).map((f) => f.data.seq as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    s.close();
  });

  it('a stream opened while the daemon is stopped says reconnecting at once, and goes on with no gap once the daemon is started again', async () => {
    const home = newHome();
    const env = envFor(home);
    const g = await startWeb(env);
    const cookie = await pair(g.port, g.link);
    const created = await request(g.port, 'POST', '/v1/sessions', { cookie, tab: 't', body: { title: 'stopped daemon', approvalPolicy: 'auto', cwd: process.cwd() } });
    const id = created.body.session.id as string;
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 't', body: {} })).status).toBe(200);
    expect((await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf one', idempotencyKey: 'k1' } })).status).toBe(202);
    await waitFor('the first turn to end', async () => (await request(g.port, 'GET', `/v1/sessions/${id}`, { cookie, tab: 't' })).body.session?.state === 'idle');
    const headBefore = (await request(g.port, 'GET', `/v1/sessions/${id}?limit=1`, { cookie, tab: 't' })).body.headSeq as number;

    const stopped = await runCli(['daemon', 'stop'], env);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(readRecordFile(home)).toBeUndefined();
    // The tab's client heard the deliberate stop: nothing starts a daemon by itself now.
    const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=t&since=0`, { cookie });
    expect(s.status).toBe(200);
    // "At once": nothing would send it later (the stopped state starts no daemon), so the deadline is a
    // loaded machine's, not 3 s; the frames check below says nothing came before it.
    const down = await s.next((f) => f.event === 'reconnecting', 15_000, 'reconnecting at once');
    expect(down.data).toMatchObject({ reason: expect.stringMatching(/astra daemon stop/), daemonShuttingDown: true, lastSeq: 0 });
    expect(s.frames.map((f) => f.event)).toEqual(['open', 'reconnecting']);
    // Other requests meanwhile say what to do, and start nothing.
    const list = await request(g.port, 'GET', '/v1/sessions', { cookie, tab: 't' });
    expect(list.status).toBe(503);
    expect(list.body.error).toMatchObject({ reason: 'daemon_not_running', retryable: true, message: expect.stringMatching(/astra daemon start/) });
    expect(readRecordFile(home)).toBeUndefined();

    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, started.stderr).toBe(0);
    const up = await s.next((f) => f.event === 'reconnected', 15_000, 'the reconnected stream event');
    expect(s.frames.indexOf(up)).toBeGreaterThan(s.frames.indexOf(down));
    await s.next((f) => f.event === 'replayed', 15_000, 'the backlog');
    // The tab reclaimed control: a second turn, whose events follow the backlog with no gap.
    const second = await waitFor('a second turn after the start', async () => {
      const r = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 't', body: { text: 'printf two', idempotencyKey: 'k2' } });
      return r.status === 202 ? r : undefined;
    }, 15_000);
    await s.next((f) => f.event === 'turn.completed' && f.data.data.turnId === second.body.turnId, 20_000);
    const seqs = s.frames.filter((f) => f.id !== undefined).map((f) => f.data.seq as number);
    expect(seqs.length).toBeGreaterThan(headBefore);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    s.close();
  });
});
