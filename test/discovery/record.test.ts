import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../../protocol/index.js';
import {
  type DiscoveryRecord,
  hashToken,
  newInstanceId,
  newToken,
  readRecord,
  removeRecordIfOwned,
  tokensEqual,
  writeRecord,
} from '../../discovery/index.js';
import { tempDir } from './helpers.js';

function sampleRecord(overrides: Partial<DiscoveryRecord> = {}): DiscoveryRecord {
  return {
    schemaVersion: 1,
    instanceId: newInstanceId(),
    ownerId: process.getuid?.() ?? 0,
    pid: process.pid,
    endpoint: '/tmp/astra-0/astra.sock',
    token: newToken(),
    protocolVersion: 1,
    version: '0.1.0',
    startedAt: 1_700_000_000_000,
    logFile: '/home/u/.local/state/astra/daemon.log',
    ...overrides,
  };
}

function invalidReason(recordPath: string): AstraError {
  try {
    readRecord(recordPath);
  } catch (e) {
    expect(e).toBeInstanceOf(AstraError);
    expect((e as AstraError).reason).toBe('invalid_record');
    return e as AstraError;
  }
  throw new Error('readRecord accepted a bad record');
}

describe('discovery record', () => {
  it('is written with mode 0600, leaves no temp file behind and reads back equal', () => {
    const dir = tempDir();
    const file = path.join(dir, 'daemon.json');
    const rec = sampleRecord({ idleTimeoutMs: 600_000 });
    const old = process.umask(0o000);
    try {
      writeRecord(file, rec);
    } finally {
      process.umask(old);
    }
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual(['daemon.json']);
    expect(readRecord(file)).toEqual(rec);
  });

  it('replaces an existing record whole', () => {
    const dir = tempDir();
    const file = path.join(dir, 'daemon.json');
    writeRecord(file, sampleRecord({ pid: 11 }));
    const second = sampleRecord({ pid: 22 });
    writeRecord(file, second);
    expect(readRecord(file)).toEqual(second);
    expect(fs.readdirSync(dir)).toEqual(['daemon.json']);
  });

  it('refuses to write an invalid record and keeps the previous one intact', () => {
    const dir = tempDir();
    const file = path.join(dir, 'daemon.json');
    const good = sampleRecord();
    writeRecord(file, good);
    expect(() => writeRecord(file, sampleRecord({ token: 'short' }))).toThrow(AstraError);
    expect(readRecord(file)).toEqual(good);
    expect(fs.readdirSync(dir)).toEqual(['daemon.json']);
  });

  it('is undefined when absent', () => {
    expect(readRecord(path.join(tempDir(), 'daemon.json'))).toBeUndefined();
  });

  it('rejects wrong types, missing fields, a short token, another schema version and non-JSON', () => {
    const file = path.join(tempDir(), 'daemon.json');
    const put = (v: unknown) => fs.writeFileSync(file, typeof v === 'string' ? v : JSON.stringify(v));
    const base = sampleRecord() as unknown as Record<string, unknown>;

    put({ ...base, pid: '12' });
    expect(invalidReason(file).message).toContain('"pid"');
    put({ ...base, ownerId: 1.5 });
    expect(invalidReason(file).message).toContain('"ownerId"');
    const { endpoint: _e, ...missing } = base;
    put(missing);
    expect(invalidReason(file).message).toContain('"endpoint"');
    put({ ...base, token: 'a'.repeat(42) });
    expect(invalidReason(file).message).toContain('"token"');
    put({ ...base, token: `${'a'.repeat(42)}+/=` });
    expect(invalidReason(file).message).toContain('base64url');
    put({ ...base, schemaVersion: 2 });
    expect(invalidReason(file).message).toContain('schemaVersion');
    put({ ...base, idleTimeoutMs: -1 });
    expect(invalidReason(file).message).toContain('"idleTimeoutMs"');
    put([base]);
    invalidReason(file);
    put('{"schemaVersion": 1, ');
    const e = invalidReason(file);
    expect(e.message).toContain('not valid JSON');
    expect(e.message).toMatch(/remove the file|astra daemon restart/);
  });

  it('never quotes the token in its error messages', () => {
    const file = path.join(tempDir(), 'daemon.json');
    const rec = sampleRecord();
    fs.writeFileSync(file, JSON.stringify({ ...rec, pid: 'x' }));
    const e = invalidReason(file);
    expect(e.message).not.toContain(rec.token);
    expect(JSON.stringify(e.data)).not.toContain(rec.token);
  });

  it('drops unknown fields a newer daemon may add', () => {
    const file = path.join(tempDir(), 'daemon.json');
    const rec = sampleRecord();
    const text = JSON.stringify({ ...rec, futureField: 1 }).replace(/^\{/, '{"__proto__":{"polluted":true},');
    fs.writeFileSync(file, text);
    const read = readRecord(file) as DiscoveryRecord & Record<string, unknown>;
    expect(read).toEqual(rec);
    expect(read.futureField).toBeUndefined();
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect(read.polluted).toBeUndefined();
  });

  it('removeRecordIfOwned removes only a record naming this instance', () => {
    const file = path.join(tempDir(), 'daemon.json');
    const mine = sampleRecord();
    writeRecord(file, mine);
    expect(removeRecordIfOwned(file, 'another-instance')).toBe(false);
    expect(readRecord(file)).toEqual(mine);
    expect(removeRecordIfOwned(file, mine.instanceId)).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
    expect(removeRecordIfOwned(file, mine.instanceId)).toBe(false);
  });

  it('removeRecordIfOwned leaves a corrupt record alone', () => {
    const file = path.join(tempDir(), 'daemon.json');
    fs.writeFileSync(file, 'garbage');
    expect(removeRecordIfOwned(file, 'x')).toBe(false);
    expect(fs.readFileSync(file, 'utf8')).toBe('garbage');
  });
});

describe('tokens', () => {
  it('carry at least 256 random bits in base64url and are never repeated', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const t = newToken();
      expect(t).toMatch(/^[A-Za-z0-9_-]{43,}$/);
      expect(Buffer.from(t, 'base64url').length).toBeGreaterThanOrEqual(32);
      seen.add(t);
    }
    expect(seen.size).toBe(200);
  });

  it('tokensEqual compares content, including tokens of different lengths', () => {
    const t = newToken();
    expect(tokensEqual(t, `${t}`)).toBe(true);
    expect(tokensEqual(t, newToken())).toBe(false);
    expect(tokensEqual(t, t.slice(0, -1))).toBe(false);
    expect(tokensEqual(t, '')).toBe(false);
    expect(tokensEqual('', '')).toBe(true);
  });

  it('hashToken is stable and does not reveal the token', () => {
    const t = newToken();
    expect(hashToken(t)).toBe(hashToken(t));
    expect(hashToken(t)).not.toContain(t);
    expect(hashToken(t)).not.toBe(hashToken(newToken()));
  });

  it('instance ids are unique', () => {
    expect(newInstanceId()).not.toBe(newInstanceId());
  });
});

describe('readRecord under a home that is a file', () => {
  it('is one clear unsafe_runtime_dir error naming the file, not a raw ENOTDIR from stat', () => {
    const file = path.join(tempDir(), 'home-file');
    fs.writeFileSync(file, '');
    let err: unknown;
    try {
      readRecord(path.join(file, 'run', 'daemon.json'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AstraError);
    expect((err as AstraError).reason).toBe('unsafe_runtime_dir');
    expect((err as AstraError).message).toContain(`${file} is a file, not a directory`);
    expect((err as AstraError).message).toContain('ASTRA_HOME');
  });
});
