// A mutation in flight when the connection drops: OutcomeUnknownError, never a silent retry;
// mutation/status tells the truth and a retry with the same key starts nothing new.
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, type AstraClient } from '../../client/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { isAlive, testHome, waitFor } from './helpers.js';

async function allEvents(client: AstraClient, sessionId: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for (let since = 0; ; ) {
    const page = await client.session.read({ sessionId, sinceSeq: since });
    events.push(...page.events);
    if (page.nextSeq === undefined || page.events.length === 0) return events;
    since = page.events[page.events.length - 1]!.seq;
  }
}

describe('a turn/start in flight when the connection drops', () => {
  it('rejects with OutcomeUnknownError; mutationStatus says done and a retry with the same key returns the same turn', async () => {
    const t = testHome();
    const client = await t.client({ reconnect: { initialDelayMs: 10, maxDelayMs: 200, maxElapsedMs: 20_000 } });
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    // Drop the connection the moment the daemon has started the turn, before its answer is read.
    await client.subscribe(session.id, {
      onEvent: (e) => {
        if (e.type === 'turn.started') client.simulateDisconnect();
      },
    });
    const reconnected = new Promise((resolve) => client.once('reconnected', resolve));
    const key = 'key-done-1';
    const err = await client.turn.start({ sessionId: session.id, input: { text: 'echo once' }, idempotencyKey: key }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).reason).toBe('outcome_unknown');
    expect((err as OutcomeUnknownError).idempotencyKey).toBe(key);
    expect((err as OutcomeUnknownError).message).toMatch(/mutationStatus/);

    const status = await client.mutationStatus(session.id, key);
    await reconnected;
    expect(status.state).toBe('done');
    const { turnId } = status.result as { turnId: string };
    // The lease was reclaimed on the new connection, so the retry goes through with the new epoch.
    const retried = await client.turn.start({ sessionId: session.id, input: { text: 'echo once' }, idempotencyKey: key });
    expect(retried.turnId).toBe(turnId);
    const started = (await allEvents(client, session.id)).filter((e) => e.type === 'turn.started');
    expect(started.map((e) => (e.data as { turnId: string }).turnId)).toEqual([turnId]);
  });

  it('after a daemon SIGKILL, mutationStatus on the new daemon matches the journal and retrying the key starts exactly one turn', async () => {
    const t = testHome();
    const client = await t.client({ reconnect: { initialDelayMs: 10, maxDelayMs: 200, maxElapsedMs: 20_000 } });
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const pid = client.daemonPid;
    const pending = client.turn.start({ sessionId: session.id, input: { text: 'echo hi' } });
    process.kill(pid, 'SIGKILL');
    const err = (await pending.catch((e: unknown) => e)) as OutcomeUnknownError;
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    // The generated key is handed back so the doubt can be resolved.
    expect(err.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor('the daemon to die', () => !isAlive(pid));

    const status = await client.mutationStatus(session.id, err.idempotencyKey!);
    expect(client.daemonPid).not.toBe(pid);
    const before = (await allEvents(client, session.id)).filter((e) => e.type === 'turn.started');
    if (status.state === 'done') expect(before.map((e) => (e.data as { turnId: string }).turnId)).toEqual([(status.result as { turnId: string }).turnId]);
    else expect({ state: status.state, turns: before.length }).toEqual({ state: 'unknown', turns: 0 });

    const first = await client.turn.start({ sessionId: session.id, input: { text: 'echo hi' }, idempotencyKey: err.idempotencyKey! });
    const again = await client.turn.start({ sessionId: session.id, input: { text: 'echo hi' }, idempotencyKey: err.idempotencyKey! });
    expect(again.turnId).toBe(first.turnId);
    const after = (await allEvents(client, session.id)).filter((e) => e.type === 'turn.started');
    expect(after).toHaveLength(1);
    expect((await client.mutationStatus(session.id, err.idempotencyKey!)).state).toBe('done');
  });

  it('a read-only call in flight when the connection drops is retried and resolves', async () => {
    const t = testHome();
    const client = await t.client({ reconnect: { initialDelayMs: 10, maxDelayMs: 100, maxElapsedMs: 10_000 } });
    await client.session.create({ title: 'listed' });
    const listing = client.session.list();
    client.simulateDisconnect();
    const { sessions } = await listing;
    expect(sessions.map((s) => s.title)).toEqual(['listed']);
    expect(client.connected).toBe(true);
  });
});
