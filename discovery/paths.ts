// Where Astra keeps its files (DESIGN.md §4). ASTRA_HOME relocates everything, which is what tests do.

import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import envPaths from 'env-paths';
import { AstraError } from '../protocol/index.js';

export interface AstraPaths {
  /** ASTRA_HOME, resolved, when set. */
  home?: string;
  /** Private (0700) directory for the socket, the discovery record and the locks. */
  runtimeDir: string;
  dataDir: string;
  logDir: string;
  logFile: string;
  /** The discovery record, daemon.json. */
  recordPath: string;
  /** The Unix socket path (a named pipe name on Windows). */
  socketPath: string;
  spawnLockPath: string;
  instanceLockPath: string;
}

/** macOS allows 103 bytes in sun_path (Linux 107): the smaller is the limit everywhere. */
export const MAX_SOCKET_PATH_BYTES = 103;

export function resolvePaths(env: NodeJS.ProcessEnv = process.env): AstraPaths {
  const home = env.ASTRA_HOME ? path.resolve(env.ASTRA_HOME) : undefined;
  let runtimeDir: string;
  let dataDir: string;
  let logDir: string;
  if (home !== undefined) {
    // Short names: the socket path has to fit in 103 bytes.
    runtimeDir = path.join(home, 'run');
    dataDir = path.join(home, 'data');
    logDir = path.join(home, 'logs');
  } else {
    runtimeDir = env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)
      ? path.join(env.XDG_RUNTIME_DIR, 'astra')
      : path.join(os.tmpdir(), `astra-${userTag()}`);
    const standard = standardDirs(env);
    dataDir = standard.data;
    logDir = standard.log;
  }
  const paths: AstraPaths = {
    runtimeDir,
    dataDir,
    logDir,
    logFile: path.join(logDir, 'daemon.log'),
    recordPath: path.join(runtimeDir, 'daemon.json'),
    socketPath: process.platform === 'win32' ? pipeName(runtimeDir) : path.join(runtimeDir, 'astra.sock'),
    // One target file per lock: proper-lockfile keeps its lock directory next to it (<target>.lock).
    spawnLockPath: path.join(runtimeDir, 'spawn.lock'),
    instanceLockPath: path.join(runtimeDir, 'instance.lock'),
  };
  if (home !== undefined) paths.home = home;
  return paths;
}

/** Throws socket_path_too_long when Node would silently truncate the socket path. */
export function assertSocketPathFits(socketPath: string): void {
  if (process.platform === 'win32') return;
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new AstraError(
      'socket_path_too_long',
      `The socket path ${socketPath} is ${bytes} bytes; the limit is ${MAX_SOCKET_PATH_BYTES}. ` +
        'Set ASTRA_HOME (or XDG_RUNTIME_DIR) to a shorter directory.',
      { socketPath, bytes, max: MAX_SOCKET_PATH_BYTES },
    );
  }
}

function userTag(): string {
  const uid = process.getuid?.();
  return uid !== undefined ? String(uid) : os.userInfo().username.replace(/[^A-Za-z0-9_.-]/g, '_');
}

function pipeName(runtimeDir: string): string {
  return `\\\\.\\pipe\\astra-${createHash('sha256').update(runtimeDir).digest('hex').slice(0, 16)}`;
}

// env-paths reads process.env; when the caller passes another environment on Linux, apply the same
// XDG rules to it so the result does not depend on the process's own variables.
function standardDirs(env: NodeJS.ProcessEnv): { data: string; log: string } {
  if (env === process.env || process.platform === 'darwin' || process.platform === 'win32') {
    const p = envPaths('astra', { suffix: '' });
    return { data: p.data, log: p.log };
  }
  const homedir = env.HOME && path.isAbsolute(env.HOME) ? env.HOME : os.homedir();
  return {
    data: path.join(env.XDG_DATA_HOME || path.join(homedir, '.local', 'share'), 'astra'),
    log: path.join(env.XDG_STATE_HOME || path.join(homedir, '.local', 'state'), 'astra'),
  };
}
