// The discovery record daemon.json (docs/operations.md): how clients find the daemon and prove who they are.
// Written atomically so a reader sees the old record or the new one, never half of one.

import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../protocol/index.js';
import { fsyncDir, writeFileAtomic } from '../durable/index.js';
import { MIN_TOKEN_CHARS } from './token.js';
import { firstNonDirectory } from './private-dir.js';

export interface DiscoveryRecord {
  schemaVersion: 1;
  instanceId: string;
  /** The uid of the user the daemon runs as. */
  ownerId: number;
  pid: number;
  endpoint: string;
  token: string;
  protocolVersion: number;
  /** The daemon's package version. */
  version: string;
  startedAt: number;
  logFile: string;
  idleTimeoutMs?: number;
}

export const RECORD_SCHEMA_VERSION = 1;
/** A real record is a few hundred bytes; anything far larger is not one. */
const MAX_RECORD_BYTES = 64 * 1024;

export function writeRecord(recordPath: string, record: DiscoveryRecord): void {
  // Refuse to write what readers would reject.
  const checked = validateRecord(record, recordPath);
  writeFileAtomic(recordPath, `${JSON.stringify(checked, null, 2)}\n`);
}

/** The record, or undefined when there is none. A malformed record is an `invalid_record` error. */
export function readRecord(recordPath: string): DiscoveryRecord | undefined {
  let text: string;
  try {
    const st = fs.statSync(recordPath);
    if (!st.isFile()) throw invalid(recordPath, 'it is not a regular file');
    if (st.size > MAX_RECORD_BYTES) throw invalid(recordPath, `it is ${st.size} bytes, far larger than a record`);
    text = fs.readFileSync(recordPath, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') throw notADirectory(recordPath);
    throw e;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid(recordPath, 'it is not valid JSON');
  }
  return validateRecord(parsed, recordPath);
}

/** Removes the record only if it still names `instanceId` (a newer daemon may have replaced it). */
export function removeRecordIfOwned(recordPath: string, instanceId: string): boolean {
  let current: DiscoveryRecord | undefined;
  try {
    current = readRecord(recordPath);
  } catch (e) {
    // A record we cannot read does not name us: leave it for whoever owns it.
    if (e instanceof AstraError && e.reason === 'invalid_record') return false;
    throw e;
  }
  if (!current || current.instanceId !== instanceId) return false;
  try {
    fs.unlinkSync(recordPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  fsyncDir(path.dirname(recordPath));
  return true;
}

/** Checks every field and returns a fresh record holding only the known fields. */
export function validateRecord(value: unknown, recordPath = 'daemon.json'): DiscoveryRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(recordPath, 'it is not a JSON object');
  const v = value as Record<string, unknown>;
  if (v.schemaVersion !== RECORD_SCHEMA_VERSION) {
    throw invalid(
      recordPath,
      `its schemaVersion is ${JSON.stringify(v.schemaVersion)}, this Astra reads ${RECORD_SCHEMA_VERSION} (a different Astra version wrote it)`,
    );
  }
  const str = (key: string, minLength = 1): string => {
    const x = v[key];
    if (typeof x !== 'string' || x.length < minLength) throw invalid(recordPath, `field "${key}" must be a string of at least ${minLength} characters`);
    return x;
  };
  const int = (key: string, min: number): number => {
    const x = v[key];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < min) throw invalid(recordPath, `field "${key}" must be an integer ≥ ${min}`);
    return x;
  };
  const token = str('token', MIN_TOKEN_CHARS);
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw invalid(recordPath, 'field "token" must be base64url');
  const record: DiscoveryRecord = {
    schemaVersion: 1,
    instanceId: str('instanceId'),
    ownerId: int('ownerId', 0),
    pid: int('pid', 1),
    endpoint: str('endpoint'),
    token,
    protocolVersion: int('protocolVersion', 1),
    version: str('version'),
    startedAt: int('startedAt', 0),
    logFile: str('logFile'),
  };
  if (v.idleTimeoutMs !== undefined) record.idleTimeoutMs = int('idleTimeoutMs', 0);
  return record;
}

/** ASTRA_HOME (or a directory on the way to the record) is a file. */
function notADirectory(recordPath: string): AstraError {
  const blocker = firstNonDirectory(path.dirname(recordPath)) ?? path.dirname(recordPath);
  return new AstraError(
    'unsafe_runtime_dir',
    `${blocker} is a file, not a directory, so Astra cannot keep its runtime files (${recordPath}) there; ` +
      'point ASTRA_HOME at a directory (it is created when missing), or move the file away.',
    { dir: path.dirname(recordPath), problem: 'not_directory', path: blocker },
  );
}

function invalid(recordPath: string, why: string): AstraError {
  // Never quote the record's content: it holds the token.
  return new AstraError(
    'invalid_record',
    `The discovery record ${recordPath} is malformed: ${why}. If no daemon is running, remove the file; ` +
      'otherwise run `astra daemon restart` to rewrite it.',
    { path: recordPath, problem: why },
  );
}
