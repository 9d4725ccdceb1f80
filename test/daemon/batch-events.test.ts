// session/events (batched events) is opt-in per connection: capabilities.batchEvents.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { Connection } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION } from '../../protocol/index.js';
import { readRecord, resolvePaths } from '../../discovery/index.js';
import { testHome, waitFor } from '../client/helpers.js';
import { createDaemon, type Engine } from '../../daemon/index.js';
import { cleanupHome, envFor, makeHome } from '../helpers/processes.js';

interface WireEvent {
  seq: number;
  type: string;
  data?: { data?: Uint8Array };
}

interface Note {
  method: string;
  params: { sessionId: string; seq?: number; type?: string; data?: { data?: Uint8Array }; events?: WireEvent[] };
}

/** A bare ipc Connection that does its own handshake, recording every notification. */
async function rawClient(env: NodeJS.ProcessEnv, name: string, batchEvents: boolean | undefined, optOut?: string[]): Promise<{ conn: Connection; notes: Note[] }> {
  const record = readRecord(resolvePaths(env).recordPath)!;
  const socket = net.connect(record.endpoint);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, label: name });
  const notes: Note[] = [];
  conn.onNotification((method, params) => notes.push({ method, params: params as Note['params'] }));
  const params: Record<string, unknown> = { protocolVersion: PROTOCOL_VERSION, token: record.token, clientInfo: { name, version: '1' } };
  if (batchEvents !== undefined || optOut) params.capabilities = { ...(batchEvents !== undefined ? { batchEvents } : {}), ...(optOut ? { optOutNotificationMethods: optOut } : {}) };
  await conn.request('initialize', params);
  conn.notify('initialized', {});
  return { conn, notes };
}

/** Every event a connection received, in arrival order, whichever notification carried it. */
function received(notes: Note[]): WireEvent[] {
  const out: WireEvent[] = [];
  for (const n of notes) {
    if (n.method === 'session/event') out.push({ seq: n.params.seq!, type: n.params.type!, data: n.params.data });
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

describe('large output events', () => {
  it('up to LIMITS.maxOutputChunkBytes each arrive whole, live and replayed (from memory and from the journal), to batching and plain connections', async () => {
    const t = testHome();
    const client = await t.client();
    const size = 3 * 1024 * 1024; // past the journal's 1 MiB own-buffer threshold: the output is kept by reference
    const count = 6; // 18 MiB: more than the 8 MiB in-memory tail, so a late subscriber reads the first ones back from the journal
    const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
    const live = await rawClient(t.env, 'live', true);
    const livePlain = await rawClient(t.env, 'live-plain', false);
    try {
      for (const c of [live, livePlain]) await c.conn.request('session/subscribe', { sessionId: session.id });
      await client.acquireController(session.id);
      await client.turn.start({ sessionId: session.id, input: { text: `count=${count} size=${size} batch=2` } });
      const done = (c: { notes: Note[] }) => received(c.notes).some((e) => e.type === 'turn.completed');
      await waitFor('the live subscribers to see turn.completed', () => done(live) && done(livePlain), 60_000);
      const late = await rawClient(t.env, 'late', true);
      const latePlain = await rawClient(t.env, 'late-plain', false);
      try {
        for (const c of [late, latePlain]) await c.conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
        await waitFor('the late subscribers to see turn.completed', () => done(late) && done(latePlain), 60_000);
        const line = Buffer.alloc(size, 'x');
        line[size - 1] = 0x0a;
        for (const c of [live, livePlain, late, latePlain]) {
          const events = received(c.notes);
          const head = events.at(-1)!.seq;
          const first = c === late || c === latePlain ? 1 : events[0]!.seq;
          expect(events.map((e) => e.seq)).toEqual(Array.from({ length: head - first + 1 }, (_, i) => first + i));
          const outputs = events.filter((e) => e.type === 'command.output');
          expect(outputs).toHaveLength(count);
          for (const o of outputs) expect(Buffer.from(o.data!.data!).equals(line)).toBe(true);
        }
        // session/read pages the same events, each page within the frame limit.
        const read: WireEvent[] = [];
        let sinceSeq = 0;
        for (let pages = 0; ; pages++) {
          expect(pages).toBeLessThan(50);
          const r = (await late.conn.request('session/read', { sessionId: session.id, sinceSeq })) as { events: WireEvent[]; nextSeq?: number };
          read.push(...r.events);
          if (r.nextSeq === undefined) break;
          sinceSeq = r.nextSeq;
        }
        const readOutputs = read.filter((e) => e.type === 'command.output');
        expect(readOutputs).toHaveLength(count);
        for (const o of readOutputs) expect(Buffer.from(o.data!.data!).equals(line)).toBe(true);
      } finally {
        late.conn.close();
        latePlain.conn.close();
      }
    } finally {
      live.conn.close();
      livePlain.conn.close();
    }
  });
});

describe('a large output inside a batch', () => {
  it('travels by reference in a session/events frame behind a small event of its tick, byte for byte, and closes the batch', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 12)) & 255;
    // One tick: two small events, a large output (kept by reference by the journal), a small one.
    const engine: Engine = {
      async runTurn(ctx) {
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'a' });
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'b' });
        ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: big });
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'c' });
        return { status: 'completed' };
      },
    };
    const home = makeHome();
    const env = envFor(home);
    // Through the page cache: a direct journal write would publish the output a little later, in a tick of its own.
    const daemon = createDaemon({ env, engine, idleTimeoutMs: 0, journalDirectIO: false });
    try {
      expect(await daemon.start()).toBe(true);
      const c = await rawClient(env, 'batching', true);
      try {
        const { session } = (await c.conn.request('session/create', { approvalPolicy: 'auto' })) as { session: { id: string } };
        await c.conn.request('session/subscribe', { sessionId: session.id });
        const { epoch } = (await c.conn.request('lease/acquire', { sessionId: session.id })) as { epoch: number };
        await c.conn.request('turn/start', { sessionId: session.id, epoch, input: { text: 'go' }, idempotencyKey: 'k1' });
        await waitFor('turn.completed', () => received(c.notes).some((e) => e.type === 'turn.completed'), 10_000);
        const batch = c.notes.find((n) => n.method === 'session/events' && n.params.events!.some((e) => e.type === 'command.output'));
        // 'a' went alone (the connection was idle), 'b' waited for company, the output closed the batch.
        expect(batch?.params.events!.map((e) => e.type)).toEqual(['message.delta', 'command.output']);
        const out = batch!.params.events!.find((e) => e.type === 'command.output')!;
        expect(Buffer.from(out.data!.data!).equals(big)).toBe(true);
        const seqs = received(c.notes).map((e) => e.seq);
        expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0]! + i));
      } finally {
        c.conn.close();
      }
    } finally {
      await daemon.stop('shutdown');
      await cleanupHome(home);
    }
  });
});

describe('opting out of notifications, and refused subscriptions', () => {
  it('honours optOutNotificationMethods for session/event in both forms, and session/events alone means one event per frame', async () => {
    const t = testHome();
    const client = await t.client();
    const mutedPlain = await rawClient(t.env, 'muted-plain', false, ['session/event']);
    const mutedBatching = await rawClient(t.env, 'muted-batching', true, ['session/event']);
    const noBatches = await rawClient(t.env, 'no-batches', true, ['session/events']);
    const witness = await rawClient(t.env, 'witness', true);
    const all = [mutedPlain, mutedBatching, noBatches, witness];
    try {
      const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
      await client.acquireController(session.id);
      await witness.conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
      await client.turn.start({ sessionId: session.id, input: { text: 'count=5000 size=200' } });
      const done = (c: { notes: Note[] }) => received(c.notes).some((e) => e.type === 'turn.completed');
      await waitFor('the first turn to end', () => done(witness), 30_000);
      // Backlog (the first turn) and live events (the second).
      for (const c of [mutedPlain, mutedBatching, noBatches]) await c.conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 });
      await client.turn.start({ sessionId: session.id, input: { text: 'count=5000 size=200' } });
      await waitFor('the unmuted connections to see both turns end', () => {
        const ends = (c: { notes: Note[] }) => received(c.notes).filter((e) => e.type === 'turn.completed').length;
        return ends(witness) === 2 && ends(noBatches) === 2;
      }, 30_000);
      const head = received(witness.notes).at(-1)!.seq;
      expect(received(noBatches.notes).map((e) => e.seq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
      expect(noBatches.notes.some((n) => n.method === 'session/events')).toBe(false);
      for (const c of [mutedPlain, mutedBatching]) {
        expect(done(c)).toBe(false);
        expect(received(c.notes)).toEqual([]);
        // The subscription itself runs: its backlog is announced as complete.
        expect(c.notes.some((n) => n.method === 'session/replayed')).toBe(true);
      }
    } finally {
      for (const c of all) c.conn.close();
    }
  });

  it('a refused session/subscribe (not_found, cursor_ahead with the head) leaves nothing behind: 300 of them still allow a real one', async () => {
    const t = testHome();
    const client = await t.client();
    const raw = await rawClient(t.env, 'refused', false);
    try {
      const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
      for (let i = 0; i < 150; i++) {
        const err = await raw.conn.request('session/subscribe', { sessionId: `ses_missing${i}` }).catch((e: unknown) => e);
        expect((err as { reason?: string }).reason).toBe('not_found');
      }
      for (let i = 0; i < 150; i++) {
        const err = await raw.conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 1000 + i }).catch((e: unknown) => e);
        expect(err).toMatchObject({ reason: 'cursor_ahead', data: { headSeq: 1 } });
      }
      const st = (await raw.conn.request('daemon/status', {})) as { connections: { clientName: string; subscriptions: string[] }[] };
      expect(st.connections.find((c) => c.clientName === 'refused')!.subscriptions).toEqual([]);
      const ok = (await raw.conn.request('session/subscribe', { sessionId: session.id, sinceSeq: 0 })) as { headSeq: number };
      expect(ok.headSeq).toBe(1);
      await waitFor('the backlog', () => received(raw.notes).some((e) => e.type === 'session.created'), 10_000);
      // session/read refuses the same cursor the same way.
      const err = await raw.conn.request('session/read', { sessionId: session.id, sinceSeq: 5 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ reason: 'cursor_ahead', data: { headSeq: 1 } });
    } finally {
      raw.conn.close();
    }
  });
});

describe('a full disk under the data directory', () => {
  it('ends the turn failed, sends subscribers session/notice naming the journal, answers disk_full, and the daemon stays up', async (ctx) => {
    const home = makeHome('ad');
    const data = path.join(home, 'data');
    fs.mkdirSync(data, { mode: 0o700 });
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4194304', 'tmpfs', data], { encoding: 'utf8' });
    if (mount.status !== 0) {
      fs.rmSync(home, { recursive: true, force: true });
      console.warn(`skipped: cannot mount a tmpfs to fill (${(mount.stderr || 'mount failed').trim()}); run as root to test a full disk`);
      ctx.skip();
      return;
    }
    const env = envFor(home, { ASTRA_IDLE_TIMEOUT_MS: '20000' });
    let client: AstraClient | undefined;
    let raw: { conn: Connection; notes: Note[] } | undefined;
    try {
      client = await AstraClient.connect({ clientName: 'test', env });
      raw = await rawClient(env, 'watcher', true);
      const { session } = await client.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
      const lease = await client.acquireController(session.id);
      await raw.conn.request('session/subscribe', { sessionId: session.id });
      await client.turn.start({ sessionId: session.id, input: { text: 'count=100000000 size=200' } });
      await waitFor('the stream to start', () => received(raw!.notes).some((e) => e.type === 'command.output'), 10_000);
      // Fill what is left of the 4 MiB (the filler is never larger than the tmpfs).
      const fd = fs.openSync(path.join(data, 'filler'), 'w');
      try {
        for (let i = 0; i < 64; i++) fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      } finally {
        fs.closeSync(fd);
      }
      const notice = (await waitFor('a session/notice', () => raw!.notes.find((n) => n.method === 'session/notice'), 20_000)) as unknown as {
        params: { sessionId: string; reason: string; path?: string };
      };
      expect(notice.params).toMatchObject({ sessionId: session.id, reason: 'disk_full' });
      expect(notice.params.path).toContain(session.id);
      await waitFor('the turn to end', async () => (await client!.session.list({})).sessions.find((x) => x.id === session.id)?.state === 'idle', 20_000);
      const rename = await client.session.rename({ sessionId: session.id, epoch: lease.epoch, title: 'x' }).catch((e: unknown) => e);
      expect(rename).toMatchObject({ reason: 'disk_full' });
      const before = fs.readdirSync(path.join(data, 'sessions'));
      const create = await client.session.create({ engine: 'synthetic' }).catch((e: unknown) => e);
      expect(create).toMatchObject({ reason: 'disk_full' });
      expect(fs.readdirSync(path.join(data, 'sessions'))).toEqual(before);
      // Still up and answering.
      expect(((await raw.conn.request('daemon/status', {})) as { pid: number }).pid).toBeGreaterThan(0);
    } finally {
      raw?.conn.close();
      await client?.close().catch(() => undefined);
      spawnSync('umount', ['-l', data]);
      await cleanupHome(home);
    }
  });
});
