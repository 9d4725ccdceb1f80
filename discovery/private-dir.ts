// The runtime directory holds the socket, the token and the locks. Security rests on it being a real
// directory of ours that no one else can enter (docs/design-notes.md: Node has no peer-credential API).

import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../protocol/index.js';
import { MakeDirsError, makeDirs } from '../durable/index.js';

export type UnsafeDirProblem = 'symlink' | 'not_directory' | 'wrong_owner' | 'open_permissions' | 'cannot_create';

/** Creates `dir` (and parents) 0700 if missing, then refuses it unless it is a real, private directory of this user. */
export function ensurePrivateDir(dir: string): void {
  let created: string | undefined;
  try {
    created = makeDirs(dir, 0o700);
  } catch (e) {
    // A symlink or a file in the place of `dir` itself is diagnosed by the checks below.
    if (!(e instanceof MakeDirsError) || e.path !== path.resolve(dir) || !(fs.existsSync(dir) || isSymlink(dir))) {
      throw unsafeDir(dir, whyNotCreated(e));
    }
  }
  // A directory we just made gets exactly 0700 whatever the umask.
  if (created !== undefined && process.platform !== 'win32') {
    const st = fs.lstatSync(dir);
    if (st.isDirectory() && !st.isSymbolicLink()) fs.chmodSync(dir, 0o700);
  }
  const problem = privateDirProblem(dir);
  if (problem) throw unsafeDir(dir, problem);
}

/** Why `dir` is not safe as a runtime directory, or undefined when it is. */
export function privateDirProblem(dir: string): { problem: UnsafeDirProblem; detail: string } | undefined {
  const st = fs.lstatSync(dir);
  if (st.isSymbolicLink()) return { problem: 'symlink', detail: 'it is a symbolic link' };
  if (!st.isDirectory()) return { problem: 'not_directory', detail: 'it is not a directory' };
  if (process.platform === 'win32') return undefined;
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return { problem: 'wrong_owner', detail: `it is owned by uid ${st.uid}, not by you (uid ${uid})` };
  if ((st.mode & 0o077) !== 0) {
    return { problem: 'open_permissions', detail: `its mode is ${(st.mode & 0o777).toString(8).padStart(4, '0')}, open to other users` };
  }
  return undefined;
}

function unsafeDir(dir: string, found: { problem: UnsafeDirProblem; detail: string }): AstraError {
  const fix: Record<UnsafeDirProblem, string> = {
    symlink: `remove the symlink (rm ${dir}) so Astra can create a real directory, or set ASTRA_HOME to a private directory`,
    not_directory: `remove or rename ${dir}, or set ASTRA_HOME to a private directory`,
    wrong_owner: `remove ${dir} if it is not in use (another user may be squatting on it), or set ASTRA_HOME to a directory you own`,
    cannot_create: `set ASTRA_HOME to a directory you can write (on a writable file system), or fix the permissions of its parent`,
    open_permissions: `run: chmod 700 ${dir}  (or set ASTRA_HOME to a private directory)`,
  };
  return new AstraError(
    'unsafe_runtime_dir',
    `Refusing to use ${dir} as Astra's runtime directory: ${found.detail}. To fix it, ${fix[found.problem]}.`,
    { dir, problem: found.problem },
  );
}

/** Why `dir` could not be made, in the words of durable/makeDirs (the level that failed and its cause). */
function whyNotCreated(e: unknown): { problem: UnsafeDirProblem; detail: string } {
  if (e instanceof MakeDirsError) {
    const fix = e.code === 'ENOTDIR' ? ' (remove or rename that file)' : '';
    return { problem: 'cannot_create', detail: `it cannot be created: ${e.detail}${fix}` };
  }
  return { problem: 'cannot_create', detail: `it cannot be created (${(e as NodeJS.ErrnoException).code ?? String(e)})` };
}

/** The first ancestor of `p` (or `p` itself) that exists but is not a directory, if any. */
export function firstNonDirectory(p: string): string | undefined {
  const chain: string[] = [];
  for (let at = path.resolve(p); ; at = path.dirname(at)) {
    chain.unshift(at);
    if (path.dirname(at) === at) break;
  }
  for (const at of chain) {
    let st: fs.Stats;
    try {
      st = fs.statSync(at);
    } catch {
      return undefined;
    }
    if (!st.isDirectory()) return at;
  }
  return undefined;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * For data and log directories: created 0700 when missing, and must be a directory (symlinks
 * allowed). `what` names it in the error ("Astra's data directory").
 */
export function ensureDir(dir: string, what = 'a directory Astra needs'): void {
  try {
    makeDirs(dir, 0o700);
  } catch (e) {
    if (!(e instanceof MakeDirsError)) throw e;
    const fix = e.code === 'ENOSPC' || e.code === 'EDQUOT'
      ? 'free some space there'
      : 'set ASTRA_HOME to a directory you can write (on a writable file system)' + (e.code === 'ENOTDIR' ? ', or move that file away' : '');
    throw new AstraError('invalid_state', `Cannot create ${what} ${dir}: ${e.detail}. To fix it, ${fix}.`, {
      dir,
      path: e.path,
      code: e.code,
    });
  }
}
