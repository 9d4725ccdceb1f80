// session/events (batched events) is opt-in per connection: capabilities.batchEvents.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { Connection } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION } from '../../protocol/index.js';
import { readRecord, resolvePaths } from '../../discovery/index.js';
import { testHome, waitFor } from '../client/helpers.js';

interface Note {
  method: string;
  params: { sessionId: string; seq?: number; type?: string; events?: { seq: number; type: string }[] };
}

/** A bare ipc Connection that does its own handshake, recording every notification. */
async function rawClient(env: NodeJS.ProcessEnv, name: string, batchEvents: boolean | undefined): Promise<{ conn: Connection; notes: Note[] }> {
  const record = readRecord(resolvePaths(env).recordPath)!;
  const socket = net.connect(record.endpoint);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, label: name });
  const notes: Note[] = [];
  conn.onNotification((method, params) => notes.push({ method, params: params as Note['params'] }));
  const params: Record<string, unknown> = { protocolVersion: PROTOCOL_VERSION, token: record.token, clientInfo: { name, version: '1' } };
  if (batchEvents !== undefined) params.capabilities = { batchEvents };
  await conn.request('initialize', params);
  conn.notify('initialized', {});
  return { conn, notes };
}

/** Every event a connection received, in arrival order, whichever notification carried it. */
function received(notes: Note[]): { seq: number; type: string }[] {
  const out: { seq: number; type: string }[] = [];
  for (const n of notes) {
    if (n.method === 'session/event') out.push({ seq: n.params.seq!, type: n.params.type! });
    if (n.method === 'session/events') out.push(...n.params.events!);
  }
  return out;
}

describe('batched events (session/events)', () => {
  it('go only to connections that set capabilities.batchEvents; others get one session/event per event; both see every event once, in order', async () => {
    const t = testHome();
    const client = await t.client(); // starts the daemon
    const plain = await rawClient(t.env, 'plain', undefined);
    const optedOut = await rawClient(t.env, 'opted-out', false);
    const batching = await rawClient(t.env, 'batching', true);
    try {
      const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
      for (const c of [plain, optedOut, batching]) await c.conn.request('session/subscribe', { sessionId: session.id });
      const lease = await client.acquireController(session.id);
      await client.turn.start({ sessionId: session.id, input: { text: 'count=20000 size=200' } });
      const done = (c: { notes: Note[] }) => received(c.notes).some((e) => e.type === 'turn.completed');
      await waitFor('all three to see turn.completed', () => done(plain) && done(optedOut) && done(batching), 30_000);
      const head = received(batching.notes).at(-1)!.seq;
      expect(head).toBeGreaterThan(20_000);
      for (const c of [plain, optedOut, batching])
        expect(received(c.notes).map((e) => e.seq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
      for (const c of [plain, optedOut]) expect(c.notes.some((n) => n.method === 'session/events')).toBe(false);
      const batches = batching.notes.filter((n) => n.method === 'session/events');
      expect(batches.length).toBeGreaterThan(0);
      expect(Math.max(...batches.map((b) => b.params.events!.length))).toBeGreaterThan(1);
      for (const b of batches) for (const e of b.params.events!) expect((e as { sessionId?: string }).sessionId).toBe(session.id);

      // A lone event on an idle connection is not held back for a batch: it travels alone.
      const before = batching.notes.length;
      await client.session.rename({ sessionId: session.id, epoch: lease.epoch, title: 'renamed' });
      await waitFor('the rename event', () => received(batching.notes).some((e) => e.type === 'session.updated'), 10_000);
      const lone = batching.notes.slice(before).filter((n) => n.method === 'session/event' || n.method === 'session/events');
      expect(lone.map((n) => n.method)).toEqual(['session/event']);
    } finally {
      for (const c of [plain, optedOut, batching]) c.conn.close();
    }
  });
});
