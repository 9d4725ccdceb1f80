import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAstraError } from '../../protocol/index.js';
import { JOURNAL_FILE, JOURNAL_FORMAT_VERSION, JOURNAL_HEADER_BYTES, RecordKind, Runtime, SessionJournal, crc32 } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { rawRecords, recordingLogger, tempDir } from '../runtime/helpers.js';
import { crc32Portable } from '../../journal/crc32.js';
import { writeAllSync } from '../../journal/journal.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

/** Resolves at the runtime's next turnEnded event; rejects, naming `what`, if none comes within the deadline. */
function nextTurnEnd(rt: Runtime, what: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const ended = () => {
      clearTimeout(timer);
      rt.off('turnEnded', ended);
      resolve();
    };
    const timer = setTimeout(() => {
      rt.off('turnEnded', ended);
      reject(new Error(`${what} did not end within ${timeoutMs} ms`));
    }, timeoutMs);
    rt.on('turnEnded', ended);
  });
}

async function sessionWithTurns(dataDir: string, turns: number) {
  const rt = await Runtime.open({ dataDir, engines: { noop: { runTurn: async () => ({ status: 'completed' }) } }, defaultEngine: 'noop' });
  const s = await rt.createSession({ title: 't' });
  for (let i = 0; i < turns; i++) {
    // Listen before starting: the turn may end before startTurn's promise settles.
    const ended = nextTurnEnd(rt, `turn ${i}`);
    await rt.startTurn(s.id, { text: `input ${i}` }, `k${i}`);
    await ended;
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
    // 1 created + 3 × (started, user, completed) = 10 events; the last turn.completed (seq 10) was
    // torn, so the third turn looks as if the daemon died while it ran: it comes back 'interrupted'.
    // Seq 10 was published before the tear (meta.json remembers it), so it is never reused: the
    // loss is reported as an error event (11) and the interrupted turn.completed is 12.
    expect(r.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]);
    expect(r.events[9]).toMatchObject({ type: 'error', data: { reason: 'journal_corrupt' } });
    expect(r.events[10]).toMatchObject({ type: 'turn.completed', data: { status: 'interrupted' } });
    expect(r.events[8]!.type).toBe('message.user');
    expect(logger.lines.some((l) => l.level === 'warn' && /torn or corrupt/.test(l.msg ?? ''))).toBe(true);
    // The journal is appendable again right after the cut.
    const s = await rt.renameSession(id, 'renamed');
    expect(s.headSeq).toBe(13);
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
    // Seq 7 (the damaged last record) was published before the damage: it is reported, never reused.
    expect(r.events.length).toBe(8);
    expect(r.events.slice(0, 6).map((e) => e.type)).toEqual(['session.created', 'turn.started', 'message.user', 'turn.completed', 'turn.started', 'message.user']);
    expect(r.events[6]).toMatchObject({ seq: 8, type: 'error', data: { reason: 'journal_corrupt' } });
    expect(r.events[7]).toMatchObject({ seq: 9, type: 'turn.completed', data: { status: 'interrupted' } });
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
    const rt = await Runtime.open({ dataDir, engines: { shell: createShellEngine() } });
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


describe('large records with direct I/O', () => {
  const MiB = 1024 * 1024;
  const pattern = (n: number, seed: number) => {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = (i * 31 + seed + (i >> 10)) & 255;
    return b;
  };

  it('writes each large record at a page boundary, padded, in order with the small ones; readers never see pads nor unwritten bytes', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file);
    expect(j.direct).toBe(process.platform === 'linux');
    let completions = 0;
    j.onWritten = (err) => {
      expect(err).toBeUndefined();
      completions++;
    };
    const bodies: Buffer[] = [];
    for (let i = 0; i < 4; i++) {
      const small = Buffer.from(`small ${i}`);
      j.append(1, small);
      bodies.push(small);
      const payload = pattern(2 * MiB + 1000 * i + 3, i);
      j.append(1, Buffer.from(`big ${i}:`), payload);
      bodies.push(Buffer.concat([Buffer.from(`big ${i}:`), payload]));
    }
    j.append(1, Buffer.from('last'));
    bodies.push(Buffer.from('last'));
    const end = j.nextOffset;
    j.flush();
    // The first small record is written at once; the first large one is on its way.
    expect(j.hasPending).toBe(true);
    expect(j.size).toBeLessThan(end);
    const early = await j.readRecords(JOURNAL_HEADER_BYTES, 64 * MiB);
    expect(early.nextOffset).toBeLessThanOrEqual(j.size);
    await j.sync();
    expect(j.size).toBe(end);
    expect(j.hasPending).toBe(false);
    expect(fs.statSync(file).size).toBe(end);
    if (j.direct) expect(completions).toBe(4);
    const read = await j.readRecords(JOURNAL_HEADER_BYTES, 64 * MiB);
    const same = (got: Buffer[]) => got.length === bodies.length && got.every((b, i) => b.equals(bodies[i]!));
    expect(same(read.records.map((r) => r.body))).toBe(true);
    await j.close();

    const raw = rawRecords(file);
    const large = raw.filter((r) => r.size > MiB);
    expect(large).toHaveLength(4);
    if (j.direct) {
      for (const r of large) {
        expect(r.offset % 4096).toBe(0);
        // A pad record fills the rest of its last page.
        const next = raw[raw.indexOf(r) + 1]!;
        expect(next.kind).toBe(RecordKind.pad);
        expect((next.offset + next.size) % 4096).toBe(0);
      }
    }
    const seen: Buffer[] = [];
    const again = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: (r) => void seen.push(Buffer.from(r.body)) });
    await again.close();
    expect(same(seen)).toBe(true);
  });

  it('reads a large record back from the pad before it, with a window smaller than the record', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file);
    if (!j.direct) return;
    j.append(1, Buffer.from('small'));
    const payload = pattern(3 * MiB, 5);
    j.append(1, Buffer.from('big:'), payload);
    await j.sync();
    const pad = rawRecords(file).find((r) => r.kind === RecordKind.pad)!;
    const { records, nextOffset } = await j.readRecords(pad.offset, 64 * 1024);
    expect(records).toHaveLength(1);
    expect(records[0]!.body.subarray(4).equals(payload)).toBe(true);
    expect(nextOffset).toBe(records[0]!.offset + records[0]!.size);
    await j.close();
  });

  it('leaves a format 1 journal in format 1: large records go through the page cache, with no pads', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file);
    j.append(1, Buffer.from('first'));
    await j.close();
    const header = fs.readFileSync(file).subarray(0, JOURNAL_HEADER_BYTES);
    expect(header.readUInt16BE(8)).toBe(JOURNAL_FORMAT_VERSION);
    header.writeUInt16BE(1, 8);
    header.writeUInt32BE(crc32(header.subarray(0, 12)), 12);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, header, 0, header.length, 0);
    fs.closeSync(fd);
    const old = await SessionJournal.open(file, { logger: recordingLogger(), onRecord: () => true });
    expect(old.direct).toBe(false);
    old.append(1, Buffer.from('big:'), pattern(3 * MiB, 9));
    await old.close();
    expect(rawRecords(file).map((r) => r.kind)).toEqual([1, 1]);
    expect(fs.readFileSync(file).readUInt16BE(8)).toBe(1);
  });

  it('with directIO off, writes large records through the page cache', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file, { directIO: false });
    expect(j.direct).toBe(false);
    j.append(1, Buffer.from('a'));
    j.append(1, Buffer.from('big:'), pattern(3 * MiB, 1));
    j.flush();
    expect(j.size).toBe(j.nextOffset);
    await j.close();
    expect(rawRecords(file).map((r) => r.kind)).toEqual([1, 1]);
  });

  it('holds back a producer faster than the disk: past 32 MiB queued behind a direct write, flush writes them at once', async () => {
    const d = dir();
    const file = path.join(d, 'j');
    const j = await SessionJournal.create(file);
    const payload = pattern(4 * MiB, 3);
    for (let i = 0; i < 24; i++) {
      j.append(1, Buffer.from(`big ${i}:`), payload);
      j.flush();
      // What is neither written nor being written stays within the bound (plus the record that crossed it).
      expect(j.nextOffset - fs.statSync(file).size).toBeLessThanOrEqual(32 * MiB + 2 * (4 * MiB + 8192));
    }
    await j.sync();
    expect(j.size).toBe(j.nextOffset);
    const { records } = await j.readRecords(JOURNAL_HEADER_BYTES, 200 * MiB);
    expect(records).toHaveLength(24);
    records.forEach((r, i) => {
      const prefix = `big ${i}:`;
      expect(r.body.subarray(0, prefix.length).toString()).toBe(prefix);
      expect(r.body.subarray(r.body.length - payload.length).equals(payload)).toBe(true);
    });
    await j.close();
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
