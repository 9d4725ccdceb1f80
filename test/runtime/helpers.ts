// Shared helpers for runtime tests: temp dirs, waiting with deadlines, a recording logger.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { JOURNAL_HEADER_BYTES, type RuntimeLogger } from '../../runtime/index.js';

export { isAlive, tempDir, waitFor } from '../helpers/processes.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

export function recordingLogger(): RuntimeLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  };
}

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/**
 * Child scripts import the compiled runtime from dist/. Rebuild when any runtime or protocol source
 * is newer than its output (tsc emits even when other folders have type errors).
 */
export function ensureBuilt(): string {
  const stale = ['runtime', 'protocol'].some((folder) =>
    fs.readdirSync(path.join(repoRoot, folder)).some((f) => {
      if (!f.endsWith('.ts')) return false;
      const out = path.join(repoRoot, 'dist', folder, f.replace(/\.ts$/, '.js'));
      try {
        return fs.statSync(out).mtimeMs < fs.statSync(path.join(repoRoot, folder, f)).mtimeMs;
      } catch {
        return true;
      }
    }),
  );
  if (stale) spawnSync(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', path.join(repoRoot, 'tsconfig.json')], { stdio: 'ignore', timeout: 120_000 });
  const entry = path.join(repoRoot, 'dist/runtime/index.js');
  if (!fs.existsSync(entry)) throw new Error(`${entry} is missing; run \`npx tsc -p tsconfig.json\``);
  return repoRoot;
}

/** Every record in a journal file as it lies on disk, pads included: offset, total size, kind. */
export function rawRecords(file: string): { offset: number; size: number; kind: number }[] {
  const buf = fs.readFileSync(file);
  const out: { offset: number; size: number; kind: number }[] = [];
  for (let at = JOURNAL_HEADER_BYTES; at < buf.length; ) {
    const size = 8 + buf.readUInt32BE(at);
    out.push({ offset: at, size, kind: buf[at + 8]! });
    at += size;
  }
  return out;
}
