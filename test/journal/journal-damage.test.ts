// A journal damaged in the middle (a flipped byte, a wrong length) is corruption, not a torn tail:
// every record after the damage is still delivered, the damage is reported where it is, and the
// file is left as it is. Only an incomplete or bad LAST record is cut off. Real files throughout.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_HEADER_BYTES, RecordKind, SessionJournal } from '../../runtime/index.js';
import type { JournalDamage } from '../../journal/journal.js';
import { rawRecords, recordingLogger, tempDir } from '../runtime/helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});


/** A closed journal of `n` records with bodies `record <i>` (a little padding so records differ in length). */
async function journalOf(n: number): Promise<string> {
  const d = tempDir();
  dirs.push(d);
  const file = path.join(d, 'j');
  const j = await SessionJournal.create(file);
  for (let i = 0; i < n; i++) j.append(RecordKind.event, Buffer.from(`record ${i} ${'x'.repeat(i % 13)}`));
  await j.close();
  return file;
}

function flipByte(file: string, at: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, at);
    b[0] ^= 0x5a;
    fs.writeSync(fd, b, 0, 1, at);
  } finally {
    fs.closeSync(fd);
  }
}

async function openCollecting(file: string) {
  const bodies: string[] = [];
  const damage: JournalDamage[] = [];
  const logger = recordingLogger();
  const j = await SessionJournal.open(file, {
    logger,
    onRecord: (r) => {
      // A damage report always comes before the records after it.
      bodies.push(r.body.toString().split(' ').slice(0, 2).join(' '));
    },
    onDamage: (d) => {
      damage.push(d);
      bodies.push(`<damage at ${d.offset}>`);
    },
  });
  return { j, bodies, damage, logger };
}

const names = (from: number, to: number, skip: number[] = []) =>
  Array.from({ length: to - from }, (_, k) => from + k).filter((i) => !skip.includes(i)).map((i) => `record ${i}`);

describe('a journal damaged in the middle', () => {
  it('delivers every record after a flipped byte, reports the damaged range before them, and leaves the file as it is', async () => {
    const file = await journalOf(500);
    const raw = rawRecords(file);
    const hit = raw[250]!;
    flipByte(file, hit.offset + 12);
    const before = fs.readFileSync(file);
    const { j, bodies, damage, logger } = await openCollecting(file);
    expect(damage).toEqual([{ offset: hit.offset, bytes: hit.size, reason: 'checksum mismatch' }]);
    expect(bodies).toEqual([...names(0, 250), `<damage at ${hit.offset}>`, ...names(251, 500)]);
    expect(j.damage).toEqual(damage);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(fs.readdirSync(path.dirname(file)).filter((n) => n.includes('.tail-'))).toEqual([]);
    const warn = logger.lines.find((l) => l.level === 'warn' && l.msg?.includes('damaged'));
    expect(warn?.msg).toContain(file);
    expect(warn?.msg).toContain(`${hit.offset}–${hit.offset + hit.size}`);

    // Catch-up reads step over the damage instead of throwing, from the start or from the damage itself.
    const all = await j.readRecords(JOURNAL_HEADER_BYTES, 1 << 20);
    expect(all.records.map((r) => r.body.toString().split(' ').slice(0, 2).join(' '))).toEqual([...names(0, 250), ...names(251, 500)]);
    const fromDamage = await j.readRecords(hit.offset, 100);
    expect(fromDamage.records[0]!.offset).toBe(raw[251]!.offset);
    const across = await j.readRecords(raw[249]!.offset, 1 << 20, raw[252]!.offset);
    expect(across.records.map((r) => r.offset)).toEqual([raw[249]!.offset, raw[251]!.offset]);
    expect(across.nextOffset).toBe(raw[252]!.offset);

    // Appends go on at the end; a later open finds the same damage again and the new record after it.
    j.append(RecordKind.event, Buffer.from('record after'));
    await j.close();
    expect(fs.statSync(file).size).toBe(before.length + 8 + 1 + 'record after'.length);
    const again = await openCollecting(file);
    expect(again.damage).toEqual(damage);
    expect(again.bodies).toEqual([...names(0, 250), `<damage at ${hit.offset}>`, ...names(251, 500), 'record after']);
    await again.j.close();
  });

  it('resynchronises after a damaged length field at the next whole record', async () => {
    const file = await journalOf(100);
    const raw = rawRecords(file);
    const hit = raw[40]!;
    // The length now claims far more than the record holds (still within the file).
    flipByte(file, hit.offset + 2);
    const { j, bodies, damage } = await openCollecting(file);
    expect(damage).toHaveLength(1);
    expect(damage[0]).toMatchObject({ offset: hit.offset, bytes: hit.size });
    expect(bodies).toEqual([...names(0, 40), `<damage at ${hit.offset}>`, ...names(41, 100)]);
    await j.close();
  });

  it('reports two separate damaged ranges in file order', async () => {
    const file = await journalOf(100);
    const raw = rawRecords(file);
    flipByte(file, raw[10]!.offset + 10);
    flipByte(file, raw[70]!.offset + 4);
    const { j, bodies, damage } = await openCollecting(file);
    expect(damage.map((d) => d.offset)).toEqual([raw[10]!.offset, raw[70]!.offset]);
    expect(bodies).toEqual([...names(0, 10), `<damage at ${raw[10]!.offset}>`, ...names(11, 70), `<damage at ${raw[70]!.offset}>`, ...names(71, 100)]);
    await j.close();
  });

  it('skips a large record damaged in its payload and keeps the records after it', async () => {
    const d = tempDir();
    dirs.push(d);
    const file = path.join(d, 'j');
    const j0 = await SessionJournal.create(file);
    j0.append(RecordKind.event, Buffer.from('record 0'));
    j0.append(RecordKind.event, Buffer.from('record 1 '), Buffer.alloc(3 * 1024 * 1024, 7));
    j0.append(RecordKind.event, Buffer.from('record 2'));
    await j0.close();
    const big = rawRecords(file).find((r) => r.size > 1024 * 1024)!;
    flipByte(file, big.offset + 2 * 1024 * 1024);
    const { j, bodies, damage } = await openCollecting(file);
    expect(damage).toEqual([{ offset: big.offset, bytes: big.size, reason: 'checksum mismatch' }]);
    expect(bodies).toEqual(['record 0', `<damage at ${big.offset}>`, 'record 2']);
    const read = await j.readRecords(JOURNAL_HEADER_BYTES, 64 * 1024 * 1024);
    expect(read.records.map((r) => r.body.toString())).toEqual(['record 0', 'record 2']);
    await j.close();
  });

  it('resynchronises through damage inside random binary output, and finds a large record right after damage', async () => {
    const d = tempDir();
    dirs.push(d);
    const file = path.join(d, 'j');
    const j0 = await SessionJournal.create(file);
    j0.append(RecordKind.event, Buffer.from('record 0'));
    j0.append(RecordKind.event, Buffer.from('record 1 '), randomBytes(4 * 1024 * 1024 - 100));
    j0.append(RecordKind.event, Buffer.from('record 2'));
    j0.append(RecordKind.event, Buffer.from('record 3 '), randomBytes(3 * 1024 * 1024));
    j0.append(RecordKind.event, Buffer.from('record 4'));
    await j0.close();
    const raw = rawRecords(file).filter((r) => r.kind !== RecordKind.pad);
    // A damaged length in the random record, and a bad checksum on the small record before the second large one.
    flipByte(file, raw[1]!.offset + 1);
    flipByte(file, raw[2]!.offset + 9);
    const { j, bodies, damage } = await openCollecting(file);
    expect(damage.map((x) => x.offset)).toEqual([raw[1]!.offset, raw[2]!.offset]);
    expect(bodies).toEqual(['record 0', `<damage at ${raw[1]!.offset}>`, `<damage at ${raw[2]!.offset}>`, 'record 3', 'record 4']);
    await j.close();
  });

  it('skips a record the reader rejects, keeps it in the file, and keeps delivering the ones after it', async () => {
    const file = await journalOf(20);
    const raw = rawRecords(file);
    const size = fs.statSync(file).size;
    const seen: number[] = [];
    const logger = recordingLogger();
    const j = await SessionJournal.open(file, {
      logger,
      onRecord: (r) => {
        if (r.offset === raw[7]!.offset || r.offset === raw[8]!.offset) return false;
        seen.push(r.offset);
        return true;
      },
    });
    expect(seen).toEqual(raw.filter((_, i) => i !== 7 && i !== 8).map((r) => r.offset));
    expect(fs.statSync(file).size).toBe(size);
    expect(j.damage).toEqual([{ offset: raw[7]!.offset, bytes: raw[7]!.size + raw[8]!.size, reason: 'record rejected by reader' }]);
    const read = await j.readRecords(JOURNAL_HEADER_BYTES, 1 << 20);
    expect(read.records.map((r) => r.offset)).toEqual(seen);
    await j.close();
  });
});

describe('a torn tail', () => {
  it('is an incomplete last record: cut off and saved aside, with no damage reported', async () => {
    const file = await journalOf(50);
    const raw = rawRecords(file);
    const last = raw[49]!;
    fs.truncateSync(file, last.offset + last.size - 3);
    const { j, bodies, damage, logger } = await openCollecting(file);
    expect(damage).toEqual([]);
    expect(bodies).toEqual(names(0, 49));
    expect(fs.statSync(file).size).toBe(last.offset);
    expect(j.size).toBe(last.offset);
    const tails = fs.readdirSync(path.dirname(file)).filter((n) => n.startsWith('j.tail-'));
    expect(tails).toHaveLength(1);
    expect(fs.statSync(path.join(path.dirname(file), tails[0]!)).size).toBe(last.size - 3);
    expect(logger.lines.some((l) => l.level === 'warn' && /torn or corrupt/.test(l.msg ?? ''))).toBe(true);
    await j.close();
  });

  it('includes a bad checksum on the last complete record: nothing valid after it, so it is cut off', async () => {
    const file = await journalOf(50);
    const last = rawRecords(file)[49]!;
    flipByte(file, last.offset + last.size - 1);
    const { j, bodies, damage } = await openCollecting(file);
    expect(damage).toEqual([]);
    expect(bodies).toEqual(names(0, 49));
    expect(fs.statSync(file).size).toBe(last.offset);
    // Appendable right after the cut.
    j.append(RecordKind.event, Buffer.from('record again'));
    await j.close();
    const again = await openCollecting(file);
    expect(again.bodies).toEqual([...names(0, 49), 'record again']);
    await again.j.close();
  });
});
