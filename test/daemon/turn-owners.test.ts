// Who owns a turn (issue 29): `astra send --wait` starts its turn as its connection's own
// (turn/start cancelOnDisconnect) and gives control back once the turn is underway. When that
// process dies, its turn is cancelled once the lease grace has passed — only its turn: another
// `send --wait`'s, and a plain `astra send`'s (the session's, owned by nobody), run on.
// Real daemon, real `astra` processes.
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { CLI, envFor, runCli, startNode, useTempHomes, waitFor } from '../helpers/processes.js';

const home = useTempHomes();

describe('a turn started by a connection that drops', () => {
  it('is cancelled after the grace when it was that connection\'s own (send --wait); no other turn is', async () => {
    const h = home();
    const env = envFor(h, { ASTRA_LEASE_GRACE_MS: '500' });
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const client = await AstraClient.connect({ clientName: 'watcher', env });
    const children: ChildProcess[] = [];
    try {
      const create = async (title: string) => (await client.session.create({ title, approvalPolicy: 'auto', cwd: h })).session.id;
      const [dies, lives, plain] = [await create('dies'), await create('lives'), await create('plain')];
      const running = async (id: string) => (await client.session.read({ sessionId: id })).session.runningTurnId;
      for (const id of [dies, lives]) children.push(startNode([CLI, 'send', id, 'sleep 30', '--wait'], env));
      expect((await runCli(['send', plain, 'sleep 30'], env)).code).toBe(0);
      const turns = new Map<string, string>();
      for (const id of [dies, lives, plain]) turns.set(id, await waitFor(`the turn of ${id}`, () => running(id)));
      // Underway: each send --wait gave control back and only follows its turn.
      await waitFor('control released', async () => (await client.session.read({ sessionId: dies })).session.controller == null);

      children[0]!.kill('SIGKILL');
      const ended = await waitFor('the dead sender\'s turn to end', async () =>
        (await client.session.read({ sessionId: dies, sinceSeq: 0 })).events.find((e) => e.type === 'turn.completed'),
      );
      expect(ended.data).toMatchObject({ turnId: turns.get(dies), status: 'cancelled' });
      // Well past the grace, the other two still run.
      await new Promise((r) => setTimeout(r, 1500));
      expect(await running(lives)).toBe(turns.get(lives));
      expect(await running(plain)).toBe(turns.get(plain));
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await client.close();
    }
  });
});
