// web.json in the runtime directory (0600): how `astra web pair` finds the running gateway. The
// admin secret in it lets that command ask the gateway for a fresh pairing code; it never leaves
// the file and the request.
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../durable/index.js';
import { ensurePrivateDir, resolvePaths } from '../../discovery/index.js';

export interface WebRecord {
  pid: number;
  port: number;
  url: string;
  adminSecret: string;
  observe: boolean;
  startedAt: number;
}

export function webFiles(env: NodeJS.ProcessEnv): { dir: string; record: string; auth: string; leases: string } {
  const { runtimeDir } = resolvePaths(env);
  return {
    dir: runtimeDir,
    record: path.join(runtimeDir, 'web.json'),
    auth: path.join(runtimeDir, 'web-auth.json'),
    leases: path.join(runtimeDir, 'web-leases.json'),
  };
}

export function prepareDir(env: NodeJS.ProcessEnv): void {
  ensurePrivateDir(webFiles(env).dir);
}

export function writeWebRecord(env: NodeJS.ProcessEnv, record: WebRecord): void {
  writeFileAtomic(webFiles(env).record, JSON.stringify(record), { mode: 0o600 });
}

export function readWebRecord(env: NodeJS.ProcessEnv): WebRecord | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(webFiles(env).record, 'utf8')) as Partial<WebRecord>;
    if (typeof r.pid === 'number' && typeof r.port === 'number' && typeof r.url === 'string' && typeof r.adminSecret === 'string')
      return { observe: false, startedAt: 0, ...r } as WebRecord;
  } catch {
    // no gateway has run here
  }
  return undefined;
}

/** The port of the last gateway here, running or stopped (open pages look for it there). */
export function readLastPort(env: NodeJS.ProcessEnv): number | undefined {
  try {
    const port = (JSON.parse(fs.readFileSync(webFiles(env).record, 'utf8')) as { port?: unknown }).port;
    if (typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536) return port;
  } catch {
    // no gateway has run here
  }
  return undefined;
}

/**
 * A stopping gateway's record, if it is still this process's: only the port stays (so the next
 * gateway listens there again); with no pid or secret, `readWebRecord` no longer finds a gateway.
 */
export function removeWebRecord(env: NodeJS.ProcessEnv, pid: number): void {
  const r = readWebRecord(env);
  if (r && r.pid === pid) writeFileAtomic(webFiles(env).record, JSON.stringify({ port: r.port, stoppedAt: Date.now() }), { mode: 0o600 });
}
