// What ended is said (issue 29): a subscription the daemon ends — its session deleted or archived by
// another client, the daemon stopping — gets a last `session/closed` saying why (`session/invalidated`
// when its backlog cannot be read back: journal damage), and AstraClient ends the subscription's loop
// with a typed SubscriptionClosedError. A real daemon, real clients.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SubscriptionClosedError, type Subscription } from '../../client/index.js';
import { Connection } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION, type SessionEvent } from '../../protocol/index.js';
import { readRecordFile } from '../helpers/processes.js';
import { testHome, waitFor } from './helpers.js';

/** Runs the subscription's loop; resolves with what it took and how it ended. */
function drain(sub: Subscription): Promise<{ events: SessionEvent[]; end: unknown }> {
  const events: SessionEvent[] = [];
  return (async () => {
    try {
      for await (const e of sub) events.push(e);
      return { events, end: 'done' };
    } catch (e) {
      return { events, end: e };
    }
  })();
}

describe('a subscription the daemon ends', () => {
  for (const how of ['deleted', 'archived'] as const) {
    it(`ends with SubscriptionClosedError '${how}' when another client ${how === 'deleted' ? 'deletes' : 'archives'} the session`, async () => {
      const t = testHome();
      const watcher = await t.client({ clientName: 'watcher' });
      const other = await t.client({ clientName: 'other' });
      const { session } = await other.session.create({ title: 'watched' });
      await other.acquireController(session.id);
      const sub = await watcher.subscribe(session.id);
      const loop = drain(sub);
      await waitFor('the backlog', () => sub.lastSeq >= session.headSeq);
      if (how === 'deleted') await other.session.delete({ sessionId: session.id });
      else await other.session.archive({ sessionId: session.id });
      const { events, end } = await loop;
      expect(end).toBeInstanceOf(SubscriptionClosedError);
      expect((end as SubscriptionClosedError).closeReason).toBe(how);
      expect((end as SubscriptionClosedError).reason).toBe('subscription_closed');
      expect(sub.state).toBe('ended');
      // An archived session's last event came before the end.
      if (how === 'archived') expect(events.at(-1)).toMatchObject({ type: 'session.updated', data: { state: 'archived' } });
    });
  }

  it('sends session/closed {reason: daemon_shutdown} as the last frame of each subscription when the daemon stops', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ title: 'a' });
    await client.close();
    const rec = readRecordFile(t.home)!;
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection({ path: rec.endpoint });
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
    const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 10_000 });
    const notes: { method: string; params: { sessionId?: string; reason?: string } }[] = [];
    conn.onNotification((method, params) => notes.push({ method, params: params as { sessionId?: string; reason?: string } }));
    await conn.request('initialize', { protocolVersion: PROTOCOL_VERSION, token: rec.token, clientInfo: { name: 'raw', version: '1' } });
    conn.notify('initialized', {});
    await conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
    await waitFor('replayed', () => notes.some((n) => n.method === 'session/replayed'));
    const closed = new Promise<void>((resolve) => conn.onClose(() => resolve()));
    await conn.request('daemon/shutdown', {});
    await closed;
    const last = notes.filter((n) => n.method.startsWith('session/')).at(-1);
    expect(last).toEqual({ method: 'session/closed', params: { sessionId: session.id, reason: 'daemon_shutdown' } });
  });

  it('ends with SubscriptionClosedError \'journal_damage\' and resyncFrom when its backlog cannot be read from a damaged journal', async () => {
    const t = testHome();
    const client = await t.client();
    const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    // 12 MiB of output: more than the 8 MiB a session keeps in memory, so the oldest events are read back from the journal.
    const { turnId } = await client.startTurn(session.id, 'count=3000 size=4096');
    await waitFor('the turn to end', async () => (await client.session.read({ sessionId: session.id, sinceSeq: 0, limit: 1 })).session.runningTurnId !== turnId, 30_000);
    const head = (await client.session.read({ sessionId: session.id, limit: 1 })).headSeq;
    const journal = path.join(t.home, 'data', 'sessions', session.id, 'journal.astra');
    const fd = fs.openSync(journal, 'r+');
    // 64 KiB of 0xff over old records: their framing (the length in a record's header) is damaged.
    fs.writeSync(fd, Buffer.alloc(65536, 0xff), 0, 65536, 200_000);
    fs.closeSync(fd);
    const { events, end } = await drain(await client.subscribe(session.id, { sinceSeq: 0 }));
    expect(end).toBeInstanceOf(SubscriptionClosedError);
    expect((end as SubscriptionClosedError).closeReason).toBe('journal_damage');
    expect((end as SubscriptionClosedError).resyncFrom).toBe(head);
    expect(events.length).toBeLessThan(head);
  });
});
