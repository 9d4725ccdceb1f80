// `astra web`'s port (docs/http.md §Running it): the last gateway's port again after a stop, said
// aloud when another program has taken it (and this gateway listens elsewhere), and a clear refusal
// with the fix when the port asked for with --port is taken. Real gateway processes.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { pair, request, startWeb, stopAllWebs, stopWeb } from './gateway-helpers.js';

const newHome = useTempHomes('awp');
afterEach(stopAllWebs);

const blockers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(blockers.splice(0).map((b) => new Promise<void>((r) => b.close(() => r()))));
});

/** Another program on the port (a plain TCP listener on 127.0.0.1). */
function occupy(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((s) => s.destroy());
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      blockers.push(server);
      resolve(server);
    });
  });
}

describe('astra web: its port', () => {
  it('listens on the last gateway\'s port again after a stop, and says so when that port is taken and it moves', async () => {
    const env = envFor(newHome());
    const g1 = await startWeb(env);
    const cookie = await pair(g1.port, g1.link);
    expect(await stopWeb(g1)).toBe(0);
    // Nothing runs now: `astra web pair` says so.
    const none = await runCli(['web', 'pair'], env);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/no `astra web` is running/);

    // The same port again: an open page (and its cookie, named after the port) finds the new gateway.
    const g2 = await startWeb(env);
    expect(g2.port).toBe(g1.port);
    expect((await request(g2.port, 'GET', '/v1/me', { cookie, tab: 't' })).status).toBe(200);
    expect(g2.stderr()).not.toMatch(/is taken/);
    expect(await stopWeb(g2)).toBe(0);

    // Another program took the port meanwhile: the gateway listens elsewhere and says why, and what to do.
    await occupy(g1.port);
    const g3 = await startWeb(env);
    expect(g3.port).not.toBe(g1.port);
    const notice = await waitFor('the notice of the move', () => g3.stderr().split('\n').find((l) => l.includes('is taken')), 15_000);
    expect(notice).toContain(`port ${g1.port}`);
    expect(notice).toContain(`listens on ${g3.port}`);
    expect(notice).toMatch(/pairs again/);
    expect(notice).toContain(`astra web --port ${g1.port}`);
    expect((await request(g3.port, 'GET', '/v1/health')).status).toBe(200);
  });

  it('refuses a --port that is taken, naming it and the fix, and exits non-zero', async () => {
    const env = envFor(newHome());
    const blocker = await occupy(0);
    const port = (blocker.address() as net.AddressInfo).port;
    const r = await runCli(['web', '--port', String(port)], env);
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toMatch(/#pair=/);
    expect(r.stderr).toContain(`port ${port}`);
    expect(r.stderr).toMatch(/in use by another program/);
    expect(r.stderr).toMatch(/--port <n>, or leave --port out/);
  });
});
