import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAstraError } from '../../protocol/index.js';
import { JOURNAL_FILE, JOURNAL_HEADER_BYTES, Runtime, SessionJournal, crc32 } from '../../runtime/index.js';
import { recordingLogger, tempDir } from './helpers.js';
import { crc32Portable } from '../../runtime/crc32.js';
import { writeAllSync } from '../../runtime/journal.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

async function sessionWithTurns(dataDir: string, turns: number) {
  const rt = await Runtime.open({ dataDir, engines: { noop: { runTurn: async () => ({ status: 'completed' }) } }, defaultEngine: 'noop' });
  const s = await rt.createSession({ title: 't' });
  const ended: string[] = [];
  rt.on('turnEnded', (_s, t) => ended.push(t));
  for (let i = 0; i < turns; i++) {
    await rt.startTurn(s.id, { text: `input ${i}` }, `k${i}`);
    while (ended.length <= i) await new Promise((r) => setTimeout(r, 1));
  }
  await rt.close();
  return { id: s.id, file: path.join(dataDir, 'sessions', s.id, JOURNAL_FILE) };
}

describe('session journal', () => {
  it('the crc32 fallback agrees with the native one', () => {
    const buf = Buffer.from('The quick brown fox jumps over the lazy dog');
    expect(crc32Portable(buf)).toBe(0x414fa339);
    expect(crc32(buf)).toBe(0x414fa339);
  });

  it('truncates a torn tail on open, logs it, and keeps every complete record', async () => {
    const dataDir = dir();
    const { id, file } = await sessionWithTurns(dataDir, 3);
    const whole = fs.readFileSync(file);
    // Tear the last record in half, as a power loss mid-write would.
    fs.truncateSync(file, whole.length - 5);
    const logger = recordingLogger();
    const rt = await Runtime.open({ dataDir, logger });
    const r = await rt.readSession(id, {});
    // 1 created + 3 × (started, user, completed) = 10 events; the last turn.completed was torn, so
    // the third turn looks as if the daemon died while it ran: it comes back 'interrupted'.
    expect(r.events.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(r.events[9]).toMatchObject({ type: 'turn.completed', data: { status: 'interrupted' } });
    expect(r.events[8]!.type).toBe('message.user');
    expect(logger.lines.some((l) => l.level === 'warn' && /torn or corrupt/.test(l.msg ?? ''))).toBe(true);
    // The journal is appendable again right after the cut.
    const s = await rt.renameSession(id, 'renamed');
    expect(s.headSeq).toBe(11);
    await rt.close();
    const rt2 = await Runtime.open({ dataDir });
    expect((await rt2.getSession(id)).title).toBe('renamed');
    await rt2.close();
  });

  it('truncates at a record whose checksum does not match and saves the cut bytes aside', async () => {
    const dataDir = dir();
    const { id, file } = await sessionWithTurns(dataDir, 2);
    const buf = fs.readFileSync(file);
    buf[buf.length - 3] ^= 0xff;
    fs.writeFileSync(file, buf);
    const rt = await Runtime.open({ dataDir });
    const r = await rt.readSession(id, {});
    expect(r.events.length).toBe(7);
    expect(r.events.slice(0, 6).map((e) => e.type)).toEqual(['session.created', 'turn.started', 'message.user', 'turn.completed', 'turn.started', 'message.user']);
    expect(r.events[6]).toMatchObject({ seq: 7, type: 'turn.completed', data: { status: 'interrupted' } });
    const tails = fs.readdirSync(path.dirname(file)).filter((n) => n.startsWith(`${JOURNAL_FILE}.tail-`));
    expect(tails.length).toBe(1);
    await rt.close();
  });

  it('refuses a journal with a newer format version and leaves it untouched', async () => {
    const dataDir = dir();
    const { id, file } = await sessionWithTurns(dataDir, 1);
    const buf = fs.readFileSync(file);
    buf.writeUInt16BE(99, 8);
    buf.writeUInt32BE(crc32(buf.subarray(0, 12)), 12);
    buf[buf.length - 1] ^= 0xff; // a tail that would be "truncated" if the reader touched it
    fs.writeFileSync(file, buf);
    fs.rmSync(path.join(path.dirname(file), 'meta.json'));
    const rt = await Runtime.open({ dataDir });
    const err = await rt.getSession(id).catch((e: unknown) => e);
    expect(isAstraError(err, 'journal_unsupported')).toBe(true);
    expect((err as Error).message).toMatch(/format 99.*Upgrade Astra/);
    await expect(SessionJournal.open(file, { logger: recordingLogger(), onRecord: () => true })).rejects.toMatchObject({ reason: 'journal_unsupported' });
    expect(fs.readFileSync(file).equals(buf)).toBe(true);
    // Other sessions keep working.
    const s = await rt.createSession({});
    expect(s.headSeq).toBe(1);
    await rt.close();
    expect(fs.readFileSync(file).equals(buf)).toBe(true);
  });

  it('refuses a file that is not a journal with journal_corrupt', async () => {
    const d = dir();
    const file = path.join(d, 'x');
    fs.writeFileSync(file, Buffer.alloc(JOURNAL_HEADER_BYTES + 10, 7));
    await expect(SessionJournal.open(file, { logger: recordingLogger(), onRecord: () => true })).rejects.toMatchObject({ reason: 'journal_corrupt' });
  });

  it('writes records queued in one tick with one write and reads them back', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file);
    for (let i = 0; i < 1000; i++) j.append(1, Buffer.from(`record ${i}`));
    expect(j.hasPending).toBe(true);
    await j.sync();
    await j.close();
    const seen: string[] = [];
    const j2 = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (r) => void seen.push(r.body.toString()) });
    expect(seen.length).toBe(1000);
    expect(seen[999]).toBe('record 999');
    const { records } = await j2.readRecords(JOURNAL_HEADER_BYTES, 100);
    expect(records[0]!.body.toString()).toBe('record 0');
    await j2.close();
  });
});

describe('SessionJournal.append', () => {
  it('stores a body given as head + payload as one record, checksummed over both, in an arena or (large) with the payload kept by reference', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'j');
    const j = await SessionJournal.create(file);
    const sizes = [10, 70_000, 2 * 1024 * 1024];
    for (const size of sizes) {
      const payload = Buffer.alloc(size, size & 0xff);
      j.append(1, Buffer.from('head:'), payload);
      const stored = Buffer.concat([j.lastBuf.subarray(j.lastStart, j.lastEnd), j.lastExtra ?? Buffer.alloc(0)]);
      expect(stored.equals(Buffer.concat([Buffer.from('head:'), payload]))).toBe(true);
      // Small records are copied into an arena; a large payload is not copied at all.
      expect(j.lastExtra === payload).toBe(size > 1024 * 1024);
    }
    await j.close();
    const bodies: Buffer[] = [];
    const again = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (r) => void bodies.push(Buffer.from(r.body)) });
    await again.close();
    expect(bodies.map((b) => b.length)).toEqual(sizes.map((s) => 5 + s));
    bodies.forEach((b, i) => {
      expect(b.subarray(0, 5).toString()).toBe('head:');
      expect(b[b.length - 1]).toBe(sizes[i]! & 0xff);
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('writeAllSync', () => {
  it('writes more buffers than one writev takes (and empty ones), in order, at the position given', () => {
    const dir = tempDir();
    const file = path.join(dir, 'w');
    fs.writeFileSync(file, 'HEAD');
    const bufs = Array.from({ length: 2500 }, (_, i) => (i % 7 === 3 ? Buffer.alloc(0) : Buffer.from(`<${i}>`)));
    const fd = fs.openSync(file, 'r+');
    try {
      const n = writeAllSync(fd, bufs, 4);
      expect(n).toBe(bufs.reduce((a, b) => a + b.length, 0));
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.readFileSync(file, 'latin1')).toBe('HEAD' + bufs.map((b) => b.toString('latin1')).join(''));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
