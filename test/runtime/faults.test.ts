// A session's faults (issue 20): a journal that lost a range of events, a cursor beyond the head,
// and a full disk (a real tmpfs, mounted by the test where root allows it).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import type { SessionEvent } from '../../protocol/index.js';
import { isAstraError } from '../../protocol/index.js';
import { JOURNAL_FILE, RecordKind, Runtime, SessionJournal, silentLogger, type Engine, type FeedNotice } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { recordingLogger, tempDir, waitFor } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setupDir(): string {
  const d = tempDir();
  cleanups.push(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

const eventPackr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });

/** Appends event records with the given seqs to a closed session's journal, as records that survived after a damaged range would read. */
async function appendRaw(file: string, seqs: number[]): Promise<void> {
  const j = await SessionJournal.open(file, { logger: silentLogger, onRecord: () => true });
  for (const seq of seqs) j.append(RecordKind.event, eventPackr.pack({ seq, ts: Date.now(), type: 'session.updated', data: { title: `t${seq}` } }));
  await j.close();
}

async function allEvents(rt: Runtime, id: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  let sinceSeq = 0;
  for (;;) {
    const r = await rt.readSession(id, { sinceSeq });
    out.push(...r.events);
    if (r.nextSeq === undefined) return out;
    sinceSeq = r.nextSeq;
  }
}

describe('a journal that lost a range of events', () => {
  it('keeps the records after a seq gap, reports the range once in the log and as an error event, and never reuses a seq', async () => {
    const dataDir = setupDir();
    const rt = await Runtime.open({ dataDir, engines: { shell: createShellEngine() } });
    const s = await rt.createSession({ title: 'a' });
    await rt.renameSession(s.id, 'b'); // seq 2
    await rt.close();
    const file = path.join(dataDir, 'sessions', s.id, JOURNAL_FILE);
    // Events 3–6 were damaged and are gone; 7 and 8 survived after them.
    await appendRaw(file, [7, 8]);

    const logger = recordingLogger();
    const rt2 = await Runtime.open({ dataDir, logger });
    const events = await allEvents(rt2, s.id);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 7, 8, 9]);
    expect(events[4]).toMatchObject({ type: 'error', data: { reason: 'journal_corrupt', message: 'events 3–6 of this session were damaged on disk and are gone; the rest is intact' } });
    expect(logger.lines.some((l) => l.level === 'error' && (l.obj as { sessionId?: string }).sessionId === s.id && /events 3–6/.test(l.msg ?? ''))).toBe(true);
    expect((await rt2.renameSession(s.id, 'c')).headSeq).toBe(10);
    // A subscriber from inside the gap gets what is left after it, without a hole in its stream.
    const seen: number[] = [];
    let replayed = -1;
    const sub = await rt2.subscribe(s.id, 4, { onEvent: (e) => void seen.push(e.seq), onReplayed: (t) => void (replayed = t) });
    await waitFor('the backlog after the gap', () => replayed === 10);
    expect(seen).toEqual([7, 8, 9, 10]);
    sub.unsubscribe();
    await rt2.close();

    // Reported once: the next open finds the report after the gap and says nothing more.
    const rt3 = await Runtime.open({ dataDir });
    const again = await allEvents(rt3, s.id);
    expect(again.filter((e) => e.type === 'error')).toHaveLength(1);
    expect(again.at(-1)!.seq).toBe(10);
    await rt3.close();
  });

  it('gives new events seqs past what meta.json remembers when the journal lost its tail', async () => {
    const dataDir = setupDir();
    const rt = await Runtime.open({ dataDir, engines: { shell: createShellEngine() } });
    const s = await rt.createSession({});
    await rt.renameSession(s.id, 'x'); // seq 2
    await rt.close();
    // The journal kept events 1–2; clients had seen up to 5 (meta.json remembers it).
    const metaFile = path.join(dataDir, 'sessions', s.id, 'meta.json');
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as { headSeq: number };
    meta.headSeq = 5;
    fs.writeFileSync(metaFile, JSON.stringify(meta));
    const rt2 = await Runtime.open({ dataDir });
    const events = await allEvents(rt2, s.id);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 6]);
    expect(events[2]).toMatchObject({ type: 'error', data: { reason: 'journal_corrupt', message: 'events 3–5 of this session were damaged on disk and are gone; the rest is intact' } });
    // A client that had read to 5 resumes there and gets the new events.
    const seen: number[] = [];
    const sub = await rt2.subscribe(s.id, 5, { onEvent: (e) => void seen.push(e.seq) });
    await rt2.renameSession(s.id, 'y');
    await waitFor('the new event', () => seen.includes(7));
    expect(seen).toEqual([6, 7]);
    sub.unsubscribe();
    await rt2.close();
  });

  it('answers cursor_ahead with the head to a subscribe or read beyond it, and registers nothing', async () => {
    const dataDir = setupDir();
    const rt = await Runtime.open({ dataDir, engines: { shell: createShellEngine() } });
    const s = await rt.createSession({});
    const err = await rt.subscribe(s.id, 2, { onEvent: () => undefined }).catch((e: unknown) => e);
    expect(isAstraError(err, 'cursor_ahead')).toBe(true);
    expect((err as { data: unknown }).data).toMatchObject({ headSeq: 1 });
    const err2 = await rt.readSession(s.id, { sinceSeq: 9 }).catch((e: unknown) => e);
    expect(isAstraError(err2, 'cursor_ahead')).toBe(true);
    // Nothing holds the session open: it unloads as idle.
    expect(await rt.unloadIdle(-1)).toEqual([s.id]);
    await rt.close();
  });
});

/** A small tmpfs at a fresh directory, or undefined (with the reason) when this machine does not allow mounting one. */
function mountTmpfs(bytes: number): { dir: string } | { skip: string } {
  const dir = tempDir('astra-full-');
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    return { skip: `cannot mount a tmpfs (${(r.stderr || r.error?.message || 'mount failed').trim()}); run as root to test a full disk` };
  }
  // Unmounted after the whole file, not after the first test (afterEach runs the cleanups).
  afterAll(() => {
    spawnSync('umount', ['-l', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir };
}

/** At most this much filler: never fill anything but the test's own small tmpfs. */
const MAX_FILL_BYTES = 16 * 1024 * 1024;

/** Fills the (small, test-mounted) file system holding `dir` with one file; returns its path (delete it to free the space). */
function fill(dir: string): string {
  const { bsize, blocks } = fs.statfsSync(dir);
  if (bsize * blocks > MAX_FILL_BYTES) throw new Error(`${dir} is not the test's small tmpfs (${bsize * blocks} bytes); refusing to fill it`);
  const file = path.join(dir, 'filler');
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (let written = 0; written < MAX_FILL_BYTES; ) written += fs.writeSync(fd, chunk);
    throw new Error('the file system did not fill up');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  }
  fs.closeSync(fd);
  return file;
}

/** Streams output until cancelled. */
const streamEngine: Engine = {
  async runTurn(ctx) {
    const line = Buffer.alloc(4096, 0x61);
    while (!ctx.signal.aborted) {
      if (!ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: line })) await ctx.drained();
      await new Promise((r) => setImmediate(r));
    }
    return { status: 'cancelled' };
  },
};

const probe = mountTmpfs(4 * 1024 * 1024);
const journalRetries = typeof (SessionJournal.prototype as { retry?: unknown }).retry === 'function';

describe('a full disk', () => {
  if ('skip' in probe) {
    it.skip(`(skipped: ${probe.skip})`, () => undefined);
    return;
  }
  const root = probe.dir;

  it('ends the running turn failed, tells subscribers, answers disk_full naming the path, and a failed create leaves nothing', async () => {
    const dataDir = path.join(root, 'data');
    const rt = await Runtime.open({ dataDir, engines: { stream: streamEngine }, defaultEngine: 'stream', groupCommitMs: 1 });
    cleanups.push(() => rt.close().catch(() => undefined));
    const ended = new Map<string, string>();
    rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
    const s = await rt.createSession({ cwd: root });
    const notices: FeedNotice[] = [];
    await rt.subscribe(s.id, 0, { onEvent: () => undefined, onNotice: (n) => void notices.push(n) });
    const { turnId } = await rt.startTurn(s.id, { text: 'go' }, 'k1');
    const filler = fill(root);
    cleanups.push(() => fs.rmSync(filler, { force: true }));

    await waitFor('the turn to end', () => ended.get(turnId), 20_000);
    expect(ended.get(turnId)).toBe('failed');
    expect((await rt.getSession(s.id)).state).toBe('idle');
    expect(notices[0]).toMatchObject({ sessionId: s.id, reason: 'disk_full', path: path.join(dataDir, 'sessions', s.id, JOURNAL_FILE) });

    const rename = await rt.renameSession(s.id, 'no room').catch((e: unknown) => e);
    expect(isAstraError(rename, 'disk_full')).toBe(true);
    expect((rename as { data: { path: string } }).data.path).toContain(s.id);
    const start = await rt.startTurn(s.id, { text: 'again' }, 'k2').catch((e: unknown) => e);
    expect(isAstraError(start, 'disk_full')).toBe(true);

    const before = fs.readdirSync(path.join(dataDir, 'sessions'));
    const create = await rt.createSession({ cwd: root }).catch((e: unknown) => e);
    expect(isAstraError(create, 'disk_full')).toBe(true);
    expect(fs.readdirSync(path.join(dataDir, 'sessions'))).toEqual(before);
    expect((await rt.listSessions()).sessions.map((x) => x.id)).toEqual([s.id]);

    if (journalRetries) {
      // Once there is space, the session writes what it held and works again by itself.
      fs.rmSync(filler);
      await waitFor('the session to recover', () => notices.some((n) => n.reason === 'disk_ok'), 20_000);
      const events = await allEvents(rt, s.id);
      expect(events.some((e) => e.type === 'error' && (e.data as { reason?: string }).reason === 'disk_full')).toBe(true);
      expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { turnId, status: 'failed' } });
      expect((await rt.renameSession(s.id, 'room again')).title).toBe('room again');
    }
  });
});
