import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { isAstraError } from '../../protocol/index.js';
import { Packr, Unpackr } from 'msgpackr';
import { JOURNAL_FILE, RecordKind, Runtime, SessionJournal, encodeRecord, silentLogger, type Engine, type RuntimeOptions, type StoredEvent } from '../../runtime/index.js';
import { tempDir, waitFor } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Emits `text` (a number) message.delta events, 500 per tick, so other work interleaves. */
const burstEngine: Engine = {
  async runTurn(ctx) {
    const n = Number(ctx.input.text);
    for (let i = 0; i < n; i++) {
      if (ctx.signal.aborted) return { status: 'cancelled' };
      ctx.emit('message.delta', { turnId: ctx.turnId, text: `d${i}` });
      if (i % 500 === 499) await new Promise((r) => setImmediate(r));
    }
    return { status: 'completed' };
  },
};

/** Runs until cancelled. */
const waitEngine: Engine = {
  runTurn: (ctx) =>
    new Promise((resolve) => {
      if (ctx.signal.aborted) resolve({ status: 'cancelled' });
      ctx.signal.addEventListener('abort', () => resolve({ status: 'cancelled' }));
    }),
};

async function open(dataDir: string, extra: Partial<RuntimeOptions> = {}) {
  const rt = await Runtime.open({ dataDir, engines: { burst: burstEngine, wait: waitEngine }, defaultEngine: 'burst', ...extra });
  const ended = new Map<string, string>();
  rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
  return { rt, ended };
}

/** For each event seq in a journal file, the file offset where its record ends. */
async function eventRecordEnds(file: string): Promise<Map<number, number>> {
  const ends = new Map<number, number>();
  const j = await SessionJournal.open(file, {
    logger: silentLogger,
    onRecord: (r) => {
      if (r.kind === RecordKind.event) ends.set(ends.size + 1, r.offset + r.size);
    },
  });
  await j.close();
  return ends;
}

function setupDir(): string {
  const d = tempDir();
  cleanups.push(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

describe('runtime', () => {
  it('answers the same idempotency key with the first result across a restart, and refuses a different input', async () => {
    const d = setupDir();
    let { rt, ended } = await open(d);
    const s = await rt.createSession({ title: 'x', idempotencyKey: 'create-1' });
    const first = await rt.startTurn(s.id, { text: '3' }, 'key-1');
    await waitFor('turn end', () => ended.get(first.turnId));
    const again = await rt.startTurn(s.id, { text: '3' }, 'key-1');
    expect(again).toEqual(first);
    expect(await rt.mutationStatus(s.id, 'key-1')).toEqual({ state: 'done', result: first });
    await rt.close();

    ({ rt, ended } = await open(d));
    const head = (await rt.getSession(s.id)).headSeq;
    expect(await rt.startTurn(s.id, { text: '3' }, 'key-1')).toEqual(first);
    expect((await rt.getSession(s.id)).headSeq).toBe(head);
    expect(rt.runningTurns()).toEqual([]);
    await expect(rt.startTurn(s.id, { text: '4' }, 'key-1')).rejects.toMatchObject({ reason: 'idempotency_conflict' });
    expect(await rt.mutationStatus(s.id, 'key-1')).toEqual({ state: 'done', result: first });
    expect(await rt.mutationStatus(s.id, 'never')).toEqual({ state: 'unknown' });
    // Session creation keys survive too.
    expect((await rt.createSession({ title: 'x', idempotencyKey: 'create-1' })).id).toBe(s.id);
    await expect(rt.createSession({ title: 'y', idempotencyKey: 'create-1' })).rejects.toMatchObject({ reason: 'idempotency_conflict' });
    await rt.close();
  });

  it('concurrent starts with one key start one turn', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d);
    const s = await rt.createSession({});
    const [a, b] = await Promise.all([rt.startTurn(s.id, { text: '1' }, 'k'), rt.startTurn(s.id, { text: '1' }, 'k')]);
    expect(a).toEqual(b);
    await waitFor('turn end', () => ended.get(a.turnId));
    const r = await rt.readSession(s.id, {});
    expect(r.events.filter((e) => e.type === 'turn.started').length).toBe(1);
    await rt.close();
  });

  it('refuses input longer than maxInputChars with input_too_large carrying input_error_code and both sizes', async () => {
    const d = setupDir();
    const { rt } = await open(d, { maxInputChars: 10 });
    const s = await rt.createSession({});
    const err = await rt.startTurn(s.id, { text: '12345678901' }, 'k').catch((e: unknown) => e);
    expect(isAstraError(err, 'input_too_large')).toBe(true);
    expect((err as { code: number }).code).toBe(-32602);
    expect((err as { data: object }).data).toEqual({ input_error_code: 'input_too_large', max_chars: 10, actual_chars: 11 });
    expect((await rt.getSession(s.id)).headSeq).toBe(1);
    await rt.close();
  });

  it('refuses a second turn while one runs, and accepts one after cancel', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d, { defaultEngine: 'wait' });
    const s = await rt.createSession({});
    await expect(rt.cancelTurn(s.id)).rejects.toMatchObject({ reason: 'not_found' });
    const t = await rt.startTurn(s.id, { text: 'a' }, 'k1');
    expect(rt.runningTurns()).toEqual([{ sessionId: s.id, turnId: t.turnId }]);
    expect((await rt.getSession(s.id)).state).toBe('running');
    await expect(rt.startTurn(s.id, { text: 'b' }, 'k2')).rejects.toMatchObject({ reason: 'turn_in_progress' });
    await expect(rt.cancelTurn(s.id, 'turn_nope')).rejects.toMatchObject({ reason: 'not_found' });
    expect(await rt.cancelTurn(s.id)).toEqual({ turnId: t.turnId, status: 'cancelling' });
    await waitFor('turn end', () => ended.get(t.turnId));
    expect(await rt.cancelTurn(s.id)).toEqual({ turnId: t.turnId, status: 'cancelled' });
    const t2 = await rt.startTurn(s.id, { text: 'b' }, 'k2');
    expect(t2.turnId).not.toBe(t.turnId);
    await rt.cancelTurn(s.id);
    await waitFor('turn end', () => ended.get(t2.turnId));
    await rt.archiveSession(s.id);
    await expect(rt.startTurn(s.id, { text: 'c' }, 'k3')).rejects.toMatchObject({ reason: 'invalid_state' });
    await rt.close();
  });

  it('keeps what a paused subscriber still needs in memory (up to catchUpCacheBytes) and lets it go once it caught up', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d, { cacheBytesPerSession: 64 * 1024, catchUpCacheBytes: 16 * 1024 * 1024 });
    const s = await rt.createSession({});
    const host = () => (rt as unknown as { sessions: { loaded(id: string): { cachedBytes: number } | undefined } }).sessions.loaded(s.id)!;
    let accepting = false;
    const seqs: number[] = [];
    let live = false;
    const sub = await rt.subscribe(s.id, 0, {
      // A reader that is behind but active: it refuses every event until told to take them, and
      // asks again on every turn of the event loop.
      onEvent: (e) => {
        if (!accepting) return false;
        seqs.push(e.seq);
      },
      waitForCapacity: () => new Promise((r) => setImmediate(r)),
      onReplayed: () => (live = true),
    });
    const t = await rt.startTurn(s.id, { text: '50000' }, 'k1');
    await waitFor('the burst', () => ended.get(t.turnId), 30_000);
    const head = (await rt.getSession(s.id)).headSeq;
    expect(host().cachedBytes).toBeGreaterThan(64 * 1024 * 4);
    // Only memory can feed the subscriber now: the journal is cut back to its header.
    fs.truncateSync(path.join(d, 'sessions', s.id, JOURNAL_FILE), 16);
    accepting = true;
    await waitFor('the subscriber to catch up', () => live || undefined, 30_000);
    expect(seqs).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    // Nobody is behind any more: back to the ordinary in-memory tail.
    expect(host().cachedBytes).toBeLessThanOrEqual(64 * 1024);
    sub.unsubscribe();
    await rt.close().catch(() => {});
  });

  it('bounds what all sessions keep for subscribers that are behind by one catchUpCacheBytes, and gives it back when a session closes', async () => {
    const d = setupDir();
    const base = 64 * 1024;
    const limit = 2 * 1024 * 1024;
    const { rt, ended } = await open(d, { cacheBytesPerSession: base, catchUpCacheBytes: limit });
    type Hosts = { sessions: { loaded(id: string): { cachedBytes: number } | undefined; hostOpts: { catchUp: { used: number } } } };
    const internals = (rt as unknown as Hosts).sessions;
    const surplus = (id: string) => Math.max(0, internals.loaded(id)!.cachedBytes - base);
    const ids: string[] = [];
    for (const k of ['a', 'b']) {
      const s = await rt.createSession({});
      ids.push(s.id);
      // A subscriber that is active but refuses everything: behind for good.
      await rt.subscribe(s.id, 0, { onEvent: () => false, waitForCapacity: () => new Promise((r) => setImmediate(r)) });
      const t = await rt.startTurn(s.id, { text: '60000' }, `k-${k}`);
      await waitFor(`burst ${k}`, () => ended.get(t.turnId), 30_000);
    }
    // The first session took the whole allowance (a few MB of events were behind); the second got what was left.
    expect(surplus(ids[0]!)).toBeGreaterThan(limit / 2);
    expect(surplus(ids[0]!) + surplus(ids[1]!)).toBeLessThanOrEqual(limit);
    expect(internals.hostOpts.catchUp.used).toBe(surplus(ids[0]!) + surplus(ids[1]!));
    await rt.close();
    expect(internals.hostOpts.catchUp.used).toBe(0);
  });

  it('keeps nothing in the catch-up cache for a subscriber that has taken nothing for a while (a stopped reader)', async () => {
    const d = setupDir();
    const base = 64 * 1024;
    const { rt, ended } = await open(d, { cacheBytesPerSession: base, catchUpCacheBytes: 16 * 1024 * 1024 });
    const s = await rt.createSession({});
    const host = () => (rt as unknown as { sessions: { loaded(id: string): { cachedBytes: number } | undefined } }).sessions.loaded(s.id)!;
    // Refuses, then never has capacity again: like a client stopped with SIGSTOP.
    const sub = await rt.subscribe(s.id, 0, { onEvent: () => false, waitForCapacity: () => new Promise(() => {}) });
    const t = await rt.startTurn(s.id, { text: '50000' }, 'k1');
    await waitFor('the burst', () => ended.get(t.turnId), 30_000);
    // Within a moment of stalling (CATCHUP_STALL_MS), with no new event to prompt it, the surplus goes.
    await waitFor('the catch-up cache to be released', () => host().cachedBytes <= base || undefined, 5_000);
    sub.unsubscribe();
    await rt.close();
  });

  it('delivers every event exactly once, in order, to a subscriber replaying a 100,000-event session from seq 1 while events keep coming', async () => {
    const d = setupDir();
    // A small cache forces most of the backlog to come from the journal file.
    const { rt, ended } = await open(d, { cacheBytesPerSession: 256 * 1024 });
    const s = await rt.createSession({});
    const t1 = await rt.startTurn(s.id, { text: '100000' }, 'k1');
    await waitFor('first burst', () => ended.get(t1.turnId), 50_000);
    const before = (await rt.getSession(s.id)).headSeq;
    expect(before).toBeGreaterThan(100_000);

    const t2 = await rt.startTurn(s.id, { text: '20000' }, 'k2');
    const seqs: number[] = [];
    let replayedAt: number | undefined;
    let pages = 0;
    let producedDuringReplay = false;
    const sub = await rt.subscribe(s.id, 0, {
      onEvent: (e) => void seqs.push(e.seq),
      waitForCapacity: () => {
        pages++;
        if (!ended.has(t2.turnId)) producedDuringReplay = true;
        return new Promise((r) => setImmediate(r));
      },
      onReplayed: (through) => {
        replayedAt = through;
      },
    });
    expect(seqs.length).toBe(0); // backlog is delivered after subscribe resolves
    expect(sub.headSeq).toBeGreaterThanOrEqual(before);
    await waitFor('second burst', () => ended.get(t2.turnId), 50_000);
    const head = (await rt.getSession(s.id)).headSeq;
    // onReplayed comes once the replay loop sees it has caught up: after the last backlog page.
    await waitFor('subscriber to catch up', () => seqs.length >= head && replayedAt !== undefined, 50_000);
    expect(seqs.length).toBe(head);
    for (let i = 0; i < seqs.length; i++) if (seqs[i] !== i + 1) throw new Error(`seq ${seqs[i]} at position ${i}`);
    expect(pages).toBeGreaterThan(1);
    expect(producedDuringReplay).toBe(true);
    sub.unsubscribe();
    await rt.close();
  });

  it('hands an onStored sink the journal bytes of each event, decoding those read back from disk only when asked', async () => {
    const d = setupDir();
    // A tiny cache: the whole backlog (seq past 65,535, so every integer width) comes from the journal file.
    const { rt, ended } = await open(d, { cacheBytesPerSession: 1024 });
    const s = await rt.createSession({});
    const t = await rt.startTurn(s.id, { text: '70000' }, 'k');
    await waitFor('burst', () => ended.get(t.turnId), 50_000);
    const head = (await rt.getSession(s.id)).headSeq;
    const stored: StoredEvent[] = [];
    let replayed = false;
    const sub = await rt.subscribe(s.id, 0, {
      onStored: (e) => void stored.push(e),
      onReplayed: () => {
        replayed = true;
      },
    });
    await waitFor('backlog replayed', () => replayed, 50_000);
    expect(stored.length).toBe(head);
    const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
    for (let i = 0; i < stored.length; i += 997) {
      const e = stored[i]!;
      expect(e.seq).toBe(i + 1);
      const body = unpackr.unpack(e.body) as { seq: number; ts: number; type: string; data: unknown };
      expect(body.seq).toBe(e.seq);
      expect(e.event).toEqual({ sessionId: s.id, seq: body.seq, ts: body.ts, type: body.type, data: body.data });
    }
    const [last] = (await rt.readSession(s.id, { sinceSeq: head - 1 })).events;
    expect(stored[head - 1]!.event).toEqual(last);
    sub.unsubscribe();
    await expect(rt.subscribe(s.id, 0, { onEvent: () => {}, onStored: () => {} })).rejects.toThrow(/exactly one of onEvent and onStored/);
    await expect(rt.subscribe(s.id, 0, {})).rejects.toThrow(/exactly one of onEvent and onStored/);
    await rt.close();
  });

  it('journals large output: each event published only once its bytes are in the file, and read back exactly from the journal', async () => {
    const d = setupDir();
    const chunk = 64 * 1024;
    /** 16 × 64 KiB of output per tick: 1 MiB journal writes of records too big for the arena. */
    const bigEngine: Engine = {
      async runTurn(ctx) {
        for (let i = 0; i < 320; i++) {
          ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: Buffer.alloc(chunk, i & 0xff) });
          if (i % 16 === 15) await new Promise((r) => setImmediate(r));
        }
        return { status: 'completed' };
      },
    };
    const { rt, ended } = await open(d, { cacheBytesPerSession: 1024 * 1024, engines: { big: bigEngine }, defaultEngine: 'big' });
    const s = await rt.createSession({});
    const file = path.join(d, 'sessions', s.id, JOURNAL_FILE);
    // Live: when an event is published (and a subscriber sees it), its bytes are already in the file.
    let live = 0;
    const liveSub = await rt.subscribe(s.id, 1, { onEvent: () => void live++ });
    const sizes: [number, number][] = [];
    rt.on('event', (e) => {
      if (e.type === 'command.output') sizes.push([e.seq, fs.statSync(file).size]);
    });
    const t = await rt.startTurn(s.id, { text: 'go' }, 'k');
    await waitFor('the big turn', () => ended.get(t.turnId), 50_000);
    await waitFor('live delivery', () => live === (rt.peekSession(s.id)?.headSeq ?? 0) - 1);
    liveSub.unsubscribe();
    expect(sizes.length).toBe(320);
    const first = sizes[0]![0];
    for (const [seq, size] of sizes) expect(size).toBeGreaterThanOrEqual((seq - first + 1) * chunk);
    // Read back from the journal (the cache holds 1 MiB): every event, in order, byte for byte.
    const back: StoredEvent[] = [];
    let replayed = false;
    const sub = await rt.subscribe(s.id, 0, { onStored: (e) => void back.push(e), onReplayed: () => (replayed = true) });
    await waitFor('replay', () => replayed, 50_000);
    sub.unsubscribe();
    expect(back.map((e) => e.seq)).toEqual(Array.from({ length: back.length }, (_, i) => i + 1));
    const outputs = back.map((e) => e.event).filter((e) => e.type === 'command.output');
    expect(outputs.length).toBe(320);
    outputs.forEach((e, i) => {
      const data = (e.data as { data: Uint8Array }).data;
      expect(data.length).toBe(chunk);
      expect(data[0]).toBe(i & 0xff);
      expect(data[chunk - 1]).toBe(i & 0xff);
    });
    await rt.close();
  });

  it('a subscriber from the head sees only live events; unsubscribe stops delivery', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d);
    const s = await rt.createSession({});
    const seen: SessionEvent[] = [];
    const sub = await rt.subscribe(s.id, 1, { onEvent: (e) => void seen.push(e) });
    expect(sub.headSeq).toBe(1);
    const t = await rt.startTurn(s.id, { text: '2' }, 'k');
    await waitFor('turn end', () => ended.get(t.turnId));
    await waitFor('five live events', () => seen.length === 5);
    expect(seen.map((e) => e.type)).toEqual(['turn.started', 'message.user', 'message.delta', 'message.delta', 'turn.completed']);
    sub.unsubscribe();
    // A second subscriber is offered each event in the same pass as the first would be: once it has
    // the rename, the first would have had it too.
    const witness: SessionEvent[] = [];
    const w = await rt.subscribe(s.id, 6, { onEvent: (e) => void witness.push(e) });
    await rt.renameSession(s.id, 'z');
    await waitFor('the rename, seen by the second subscriber', () => witness.some((e) => e.type === 'session.updated'));
    w.unsubscribe();
    expect(seen.length).toBe(5);
    await rt.close();
  });

  it('paginates reads by count and by bytes with nextSeq', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d, { cacheBytesPerSession: 4096 });
    const s = await rt.createSession({});
    const t = await rt.startTurn(s.id, { text: '5000' }, 'k');
    await waitFor('turn end', () => ended.get(t.turnId));
    const r1 = await rt.readSession(s.id, { sinceSeq: 0, limit: 100 });
    expect(r1.events.length).toBe(100);
    expect(r1.nextSeq).toBe(100);
    const r2 = await rt.readSession(s.id, { sinceSeq: 2000, maxBytes: 4096 });
    expect(r2.events[0]!.seq).toBe(2001);
    expect(r2.events.length).toBeLessThan(200);
    expect(r2.nextSeq).toBe(r2.events[r2.events.length - 1]!.seq);
    const all: number[] = [];
    let since: number | undefined = 0;
    while (since !== undefined) {
      const r = await rt.readSession(s.id, { sinceSeq: since, maxBytes: 20_000 });
      all.push(...r.events.map((e) => e.seq));
      since = r.nextSeq;
    }
    expect(all).toEqual(Array.from({ length: r1.headSeq }, (_, i) => i + 1));
    await expect(rt.readSession('nope', {})).rejects.toMatchObject({ reason: 'not_found' });
    await expect(rt.readSession('../etc', {})).rejects.toMatchObject({ reason: 'not_found' });
    await rt.close();
  });

  it('opens lazily, lists newest first with an opaque cursor, and hides archived sessions unless asked', async () => {
    const d = setupDir();
    let clock = 1_000_000;
    let { rt } = await open(d, { now: () => clock++ });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await rt.createSession({ title: `s${i}` })).id);
    await rt.renameSession(ids[0]!, 'first');
    await rt.archiveSession(ids[1]!);
    await rt.close();

    ({ rt } = await open(d));
    expect(rt.loadedSessionIds()).toEqual([]);
    const p1 = await rt.listSessions({ limit: 2 });
    expect(p1.sessions.map((s) => s.id)).toEqual([ids[4], ids[3]]);
    const p2 = await rt.listSessions({ limit: 2, cursor: p1.nextCursor! });
    expect(p2.sessions.map((s) => s.id)).toEqual([ids[2], ids[0]]);
    expect(p2.nextCursor).toBeUndefined();
    expect(p2.sessions[1]!.title).toBe('first');
    const all = await rt.listSessions({ includeArchived: true });
    expect(all.sessions.map((s) => s.id)).toEqual([...ids].reverse());
    expect(all.sessions.find((s) => s.id === ids[1])!.state).toBe('archived');
    expect(rt.loadedSessionIds()).toEqual([]);
    await expect(rt.listSessions({ cursor: 'garbage' })).rejects.toMatchObject({ reason: 'cursor_expired' });
    const s0 = await rt.getSession(ids[0]!);
    expect(s0).toMatchObject({ title: 'first', headSeq: 2, state: 'idle', engine: 'burst', approvalPolicy: 'ask', onControllerLost: 'cancel' });
    expect(s0.controller).toBeUndefined();
    expect(rt.loadedSessionIds()).toEqual([ids[0]]);
    await rt.close();
    await expect(rt.getSession(ids[0]!)).rejects.toMatchObject({ reason: 'shutting_down' });
  });

  it('persists lease epochs across a restart', async () => {
    const d = setupDir();
    let { rt } = await open(d);
    const s = await rt.createSession({});
    const e = await rt.appendLeaseChange(s.id, { epoch: 7, holder: { connectionId: 'c1', clientName: 'tui' }, reason: 'acquired' });
    expect(e).toMatchObject({ seq: 2, type: 'lease.changed' });
    await rt.close();
    ({ rt } = await open(d));
    expect((await rt.getSession(s.id)).epoch).toBe(7);
    expect((await rt.listSessions({})).sessions[0]!.epoch).toBe(7);
    await rt.close();
  });

  it('rebuilds a session whose meta file is missing from its journal at open', async () => {
    const d = setupDir();
    let { rt } = await open(d);
    const s = await rt.createSession({ title: 'keep', approvalPolicy: 'auto', onControllerLost: 'continue' });
    await rt.renameSession(s.id, 'kept');
    await rt.close();
    fs.rmSync(path.join(d, 'sessions', s.id, 'meta.json'));
    ({ rt } = await open(d));
    const list = await rt.listSessions({});
    expect(list.sessions[0]).toMatchObject({ id: s.id, title: 'kept', approvalPolicy: 'auto', onControllerLost: 'continue', headSeq: 2 });
    await rt.close();
  });

  it('refuses a workspace that is not a directory, creating nothing', async () => {
    const d = setupDir();
    const { rt } = await open(d);
    await expect(rt.createSession({ cwd: path.join(d, 'nope') })).rejects.toMatchObject({ reason: 'invalid_params', message: expect.stringMatching(/not a directory/) });
    const file = path.join(d, 'a-file');
    fs.writeFileSync(file, '');
    await expect(rt.createSession({ cwd: file })).rejects.toMatchObject({ reason: 'invalid_params' });
    expect((await rt.listSessions({})).sessions).toEqual([]);
    await rt.close();
  });

  it('reads event records of the first format (an array body) next to current ones', async () => {
    const d = setupDir();
    let { rt } = await open(d);
    const s = await rt.createSession({ title: 'old' });
    await rt.renameSession(s.id, 'older'); // seq 2, current format
    await rt.close();
    // Append seq 3 the way the first format stored events: [seq, ts, type, data].
    const file = path.join(d, 'sessions', s.id, JOURNAL_FILE);
    const oldStyle = encodeRecord(RecordKind.event, new Packr({ useRecords: false }).pack([3, 1_700_000_000_000, 'message.delta', { turnId: 't_old', text: 'from the past' }]));
    fs.appendFileSync(file, oldStyle);
    ({ rt } = await open(d)); // the meta no longer matches the journal: the session is rebuilt from it
    const read = await rt.readSession(s.id, { sinceSeq: 0 });
    expect(read.headSeq).toBe(3);
    expect(read.events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'session.created'],
      [2, 'session.updated'],
      [3, 'message.delta'],
    ]);
    expect(read.events[2]!.data).toEqual({ turnId: 't_old', text: 'from the past' });
    expect(read.events[2]!.ts).toBe(1_700_000_000_000);
    // A sink that takes encoded bodies gets the old record in the current (map) encoding.
    const bodies: Buffer[] = [];
    const sub = await rt.subscribe(s.id, 2, { onStored: (e) => void bodies.push(e.body) });
    await waitFor('the old event', () => bodies.length === 1);
    expect(bodies[0]![0]).toBe(0x84);
    expect(new Unpackr({ useRecords: false, mapsAsObjects: true }).unpack(bodies[0]!)).toEqual({
      seq: 3,
      ts: 1_700_000_000_000,
      type: 'message.delta',
      data: { turnId: 't_old', text: 'from the past' },
    });
    sub.unsubscribe();
    // And the session goes on with seq 4.
    await rt.renameSession(s.id, 'newer');
    expect((await rt.getSession(s.id)).headSeq).toBe(4);
    await rt.close();
  });

  it('closes sessions nobody uses and loads them again on demand; a subscribed, running or recent session stays', async () => {
    const d = setupDir();
    let clock = 1_000_000;
    const { rt, ended } = await open(d, { now: () => clock });
    const idle = await rt.createSession({ title: 'idle' });
    const watched = await rt.createSession({ title: 'watched' });
    const busy = await rt.createSession({ title: 'busy', engine: 'wait' });
    const sub = await rt.subscribe(watched.id, 0, { onEvent: () => {} });
    const t = await rt.startTurn(busy.id, { text: 'x' }, 'k');
    clock += 5_000;
    expect(await rt.unloadIdle(10_000)).toEqual([]); // all used within the last 10 s
    clock += 60_000;
    expect(await rt.unloadIdle(10_000)).toEqual([idle.id]);
    expect(rt.loadedSessionIds().sort()).toEqual([watched.id, busy.id].sort());
    // Closed, not lost: it loads again with its history and takes new events.
    const read = await rt.readSession(idle.id, { sinceSeq: 0 });
    expect(read.session.title).toBe('idle');
    expect(read.events.map((e) => e.type)).toEqual(['session.created']);
    await rt.renameSession(idle.id, 'idle again');
    expect((await rt.getSession(idle.id)).headSeq).toBe(2);
    sub.unsubscribe();
    await rt.cancelTurn(busy.id, t.turnId);
    await waitFor('turn end', () => ended.get(t.turnId));
    clock += 60_000;
    expect((await rt.unloadIdle(10_000)).sort()).toEqual([idle.id, watched.id, busy.id].sort());
    expect(rt.loadedSessionIds()).toEqual([]);
    await rt.close();
  });

  it('writes every event to the journal file before any listener or subscriber sees it', async () => {
    const d = setupDir();
    const { rt, ended } = await open(d);
    const s = await rt.createSession({});
    const file = path.join(d, 'sessions', s.id, JOURNAL_FILE);
    const sizeWhenSeen = new Map<number, number>();
    rt.on('event', (e) => sizeWhenSeen.set(e.seq, fs.statSync(file).size));
    const subSeen = new Map<number, number>();
    await rt.subscribe(s.id, 1, { onEvent: (e) => void subSeen.set(e.seq, fs.statSync(file).size) });
    const t = await rt.startTurn(s.id, { text: '3000' }, 'k');
    await waitFor('turn end', () => ended.get(t.turnId));
    await rt.close();
    const recordEnd = await eventRecordEnds(file);
    const seq = recordEnd.size;
    expect(sizeWhenSeen.size).toBe(seq - 1);
    for (const [q, size] of sizeWhenSeen) expect(size).toBeGreaterThanOrEqual(recordEnd.get(q)!);
    for (const [q, size] of subSeen) expect(size).toBeGreaterThanOrEqual(recordEnd.get(q)!);
    expect(subSeen.size).toBe(seq - 1);
  });

  it('with large output written directly: every event is in the file before anyone sees it, in order, and reads back byte for byte after a restart', async () => {
    const d = setupDir();
    const big = (i: number) => {
      const b = Buffer.allocUnsafe(2 * 1024 * 1024 + 17 * i);
      for (let k = 0; k < b.length; k++) b[k] = (k + i * 13 + (k >> 9)) & 255;
      return b;
    };
    /** Per tick: a delta, a large output, a delta — twelve times. */
    const mixed: Engine = {
      async runTurn(ctx) {
        for (let i = 0; i < 12; i++) {
          ctx.emit('message.delta', { turnId: ctx.turnId, text: `before ${i}` });
          ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: big(i) });
          ctx.emit('message.delta', { turnId: ctx.turnId, text: `after ${i}` });
          await new Promise((r) => setImmediate(r));
        }
        return { status: 'completed' };
      },
    };
    const { rt, ended } = await open(d, { cacheBytesPerSession: 1024 * 1024, engines: { mixed }, defaultEngine: 'mixed' });
    const s = await rt.createSession({});
    const file = path.join(d, 'sessions', s.id, JOURNAL_FILE);
    const sizeWhenSeen = new Map<number, number>();
    rt.on('event', (e) => sizeWhenSeen.set(e.seq, fs.statSync(file).size));
    const subSeqs: number[] = [];
    await rt.subscribe(s.id, 1, { onEvent: (e) => void subSeqs.push(e.seq) });
    const t = await rt.startTurn(s.id, { text: 'go' }, 'k');
    await waitFor('turn end', () => ended.get(t.turnId), 50_000);
    await rt.close();
    const recordEnd = await eventRecordEnds(file);
    const seq = recordEnd.size;
    expect(sizeWhenSeen.size).toBe(seq - 1);
    for (const [q, size] of sizeWhenSeen) expect(size).toBeGreaterThanOrEqual(recordEnd.get(q)!);
    expect(subSeqs).toEqual(Array.from({ length: seq - 1 }, (_, i) => i + 2));

    const again = await Runtime.open({ dataDir: d, cacheBytesPerSession: 1024 * 1024 });
    const events: SessionEvent[] = [];
    for (let since = 0; ; ) {
      const r = await again.readSession(s.id, { sinceSeq: since, maxBytes: 8 * 1024 * 1024 });
      events.push(...r.events);
      if (r.nextSeq === undefined) break;
      since = r.nextSeq;
    }
    await again.close();
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
    const turn = events.filter((e) => e.type === 'message.delta' || e.type === 'command.output');
    expect(turn).toHaveLength(36);
    for (let i = 0; i < 12; i++) {
      expect((turn[3 * i]!.data as { text: string }).text).toBe(`before ${i}`);
      expect(Buffer.from((turn[3 * i + 1]!.data as { data: Uint8Array }).data).equals(big(i))).toBe(true);
      expect((turn[3 * i + 2]!.data as { text: string }).text).toBe(`after ${i}`);
    }
    expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { status: 'completed' } });
  });

  it("emit() returns false once 16 MiB of a session's events wait for the disk, and drained() resolves once they are written", async () => {
    const d = setupDir();
    const returns: boolean[] = [];
    let afterDrain: boolean | undefined;
    const flood: Engine = {
      async runTurn(ctx) {
        const out = Buffer.alloc(4 * 1024 * 1024, 'y');
        // Six in one tick: nothing is written before the tick ends, so the fourth crosses 16 MiB.
        for (let i = 0; i < 6; i++) returns.push(ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: out }));
        await ctx.drained();
        afterDrain = ctx.emit('message.delta', { turnId: ctx.turnId, text: 'then' });
        return { status: 'completed' };
      },
    };
    for (const journalDirectIO of [true, false]) {
      returns.length = 0;
      afterDrain = undefined;
      const { rt, ended } = await open(d, { engines: { flood }, defaultEngine: 'flood', journalDirectIO });
      const s = await rt.createSession({});
      const t = await rt.startTurn(s.id, { text: 'go' }, 'k');
      await waitFor('turn end', () => ended.get(t.turnId), 30_000);
      expect(returns).toEqual([true, true, true, false, false, false]);
      expect(afterDrain).toBe(true);
      const r = await rt.readSession(s.id, { sinceSeq: 0, limit: 1000, maxBytes: 7 * 1024 * 1024 });
      expect(r.events.map((e) => e.seq)).toEqual(Array.from({ length: r.events.length }, (_, i) => i + 1));
      await rt.close();
    }
  });
});
