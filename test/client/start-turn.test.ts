// client.startTurn: the one safe turn start (astra attach and astra send use it). A lost answer is
// resolved through mutation/status, so the caller gets the turn id and exactly one turn runs.
// And mutation/status for a session/create key, which needs no session id.
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, type AstraClient } from '../../client/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { testHome } from './helpers.js';

async function turnsStarted(client: AstraClient, sessionId: string): Promise<string[]> {
  const events: SessionEvent[] = [];
  for (let since = 0; ; ) {
    const page = await client.session.read({ sessionId, sinceSeq: since });
    events.push(...page.events);
    if (page.events.length === 0) break;
    since = page.events[page.events.length - 1]!.seq;
  }
  return events.filter((e) => e.type === 'turn.started').map((e) => (e.data as { turnId: string }).turnId);
}

const RECONNECT = { initialDelayMs: 10, maxDelayMs: 200, maxElapsedMs: 20_000 };

describe('client.startTurn', () => {
  it('answers with the turn that started when the connection drops right after the daemon started it, and starts no second one', async () => {
    const t = testHome();
    const client = await t.client({ reconnect: RECONNECT });
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    let dropped = false;
    await client.subscribe(session.id, {
      onEvent: (e) => {
        if (e.type === 'turn.started' && !dropped) {
          dropped = true;
          client.simulateDisconnect();
        }
      },
    });
    // What a bare turn/start does in the same spot: the answer is lost.
    const { turnId } = await client.startTurn(session.id, 'echo once', { idempotencyKey: 'start-turn-1' });
    expect(dropped).toBe(true);
    expect(await turnsStarted(client, session.id)).toEqual([turnId]);
    expect(await client.mutationStatus(session.id, 'start-turn-1')).toMatchObject({ state: 'done', result: { turnId } });
  });

  it('starts exactly one turn when the connection drops the moment the request is handed over, whichever side of the daemon it fell on', async () => {
    const t = testHome();
    const client = await t.client({ reconnect: RECONNECT });
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const starting = client.startTurn(session.id, 'echo hi');
    client.simulateDisconnect();
    const { turnId } = await starting;
    expect(await turnsStarted(client, session.id)).toEqual([turnId]);
  });

  it('passes other errors through unchanged (no lease: not_controller, locally)', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({});
    const err = await client.startTurn(session.id, 'echo x').catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'not_controller' });
  });
});

describe('mutation/status for session/create', () => {
  it('client.mutationStatus(undefined, key) tells what a create key made, with no session id', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ title: 'keyed', idempotencyKey: 'create-key-1' });
    const st = await client.mutationStatus(undefined, 'create-key-1');
    expect(st.state).toBe('done');
    expect((st.result as { session: { id: string } }).session.id).toBe(session.id);
    expect((await client.mutationStatus(undefined, 'never-used')).state).toBe('unknown');
  });

  it('an OutcomeUnknownError for session/create names mutationStatus(undefined, key) and repeating the create', () => {
    const err = new OutcomeUnknownError('session/create', { idempotencyKey: 'k-1' });
    expect(err.message).toContain("client.mutationStatus(undefined, 'k-1')");
    expect(err.message).toContain('retry with the same idempotencyKey');
  });
});
