// Where Astra keeps its files (docs/operations.md). ASTRA_HOME relocates everything, which is what tests do.

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
  spawnLockPath: string;
  instanceLockPath: string;
}

/**
 * A relative ASTRA_HOME is refused rather than resolved: resolved against each working directory,
 * it would give every directory its own daemon.
 */
export function resolvePaths(env: NodeJS.ProcessEnv = process.env): AstraPaths {
  if (env.ASTRA_HOME && !path.isAbsolute(env.ASTRA_HOME)) {
    throw new AstraError(
      'invalid_params',
      `ASTRA_HOME must be an absolute path; got "${env.ASTRA_HOME}" (relative to each working directory, it would start a daemon per directory). ` +
        `Use e.g. ASTRA_HOME="$PWD/${env.ASTRA_HOME}".`,
      { variable: 'ASTRA_HOME', value: env.ASTRA_HOME },
    );
  }
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
    // One target file per lock: proper-lockfile keeps its lock directory next to it (<target>.lock).
    spawnLockPath: path.join(runtimeDir, 'spawn.lock'),
    instanceLockPath: path.join(runtimeDir, 'instance.lock'),
  };
  if (home !== undefined) paths.home = home;
  return paths;
}

function userTag(): string {
  const uid = process.getuid?.();
  return uid !== undefined ? String(uid) : os.userInfo().username.replace(/[^A-Za-z0-9_.-]/g, '_');
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
