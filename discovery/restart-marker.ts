// The restart marker (docs/operations.md, "restart"): `astra daemon restart` writes restart.json in the
// runtime dir before it stops the daemon and removes it once its new daemon answers. While it is
// there, clients wait for that daemon instead of starting one with their own environment. A marker
// whose writer is gone, or past its deadline, counts for nothing.
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../durable/index.js';
import { isProcessAlive } from './liveness.js';

export interface RestartMarker {
  /** The pid of the `astra daemon restart` process. */
  pid: number;
  /** Epoch ms after which the marker is ignored. */
  until: number;
}

/** How long a restart may keep clients waiting. */
export const RESTART_MARKER_MS = 30_000;

export function restartMarkerPath(runtimeDir: string): string {
  return path.join(runtimeDir, 'restart.json');
}

export function writeRestartMarker(runtimeDir: string, now = Date.now()): RestartMarker {
  const marker: RestartMarker = { pid: process.pid, until: now + RESTART_MARKER_MS };
  writeFileAtomic(restartMarkerPath(runtimeDir), `${JSON.stringify(marker)}\n`);
  return marker;
}

/** Removes the marker if it is this process's. */
export function removeRestartMarker(runtimeDir: string): void {
  const found = readMarker(restartMarkerPath(runtimeDir));
  if (found && found.pid !== process.pid) return;
  try {
    fs.unlinkSync(restartMarkerPath(runtimeDir));
  } catch {
    // already gone
  }
}

/** The marker of a restart still under way (its writer alive, its deadline ahead), else undefined. */
export function restartInProgress(runtimeDir: string, now = Date.now()): RestartMarker | undefined {
  const found = readMarker(restartMarkerPath(runtimeDir));
  if (!found || found.pid === process.pid) return undefined;
  if (now >= found.until || !isProcessAlive(found.pid)) return undefined;
  return found;
}

function readMarker(file: string): RestartMarker | undefined {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<RestartMarker>;
    if (typeof v.pid === 'number' && typeof v.until === 'number') return { pid: v.pid, until: v.until };
  } catch {
    // none, or unreadable: no restart to wait for
  }
  return undefined;
}
