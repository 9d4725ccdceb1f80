// What ended is said over HTTP (issue 29): a session deleted or archived while tabs watch it ends
// their event streams with the named `closed` frame (not `error`), whether a stream reads through the
// session's shared feed or, still catching up, its tab's own subscription. A real gateway and daemon.
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, runCli, useTempHomes } from '../helpers/processes.js';
import { openSse, pair, request, startWeb, stopAllWebs } from './gateway-helpers.js';

const newHome = useTempHomes('awc');
afterEach(stopAllWebs);

describe('astra web: a stream whose session went', () => {
  for (const how of ['deleted', 'archived'] as const) {
    it(`ends with a closed frame {reason: '${how}'} when another client ${how === 'deleted' ? 'deletes' : 'archives'} the session`, async () => {
      const env = envFor(newHome());
      const g = await startWeb(env);
      const cookie = await pair(g.port, g.link);
      const r = await request(g.port, 'POST', '/v1/sessions', { cookie, tab: 'a', body: { title: 'going', approvalPolicy: 'auto', cwd: process.cwd() } });
      expect(r.status, r.text).toBe(201);
      const id = r.body.session.id as string;
      const streams = await Promise.all(['a', 'b'].map((tab) => openSse(g.port, `/v1/sessions/${id}/events?tab=${tab}`, { cookie })));
      for (const s of streams) await s.next((f) => f.event === 'replayed');
      const cli = await runCli(how === 'deleted' ? ['rm', id, '--yes'] : ['archive', id], env);
      expect(cli.code, cli.stderr).toBe(0);
      for (const s of streams) {
        const closed = await s.next((f) => f.event === 'closed', 10_000, 'the closed frame');
        expect(closed.data).toMatchObject({ reason: how });
        expect(s.frames.some((f) => f.event === 'error')).toBe(false);
        expect(s.frames.at(-1)).toBe(closed);
      }
    });
  }
});
