// Directory creation that always ends. Node's `mkdir(dir, { recursive: true })` never returns on a
// file system that answers ENOENT for a directory whose parent exists (/proc, /sys): it creates the
// parent (EEXIST), tries the child again (ENOENT), and so on for ever. Here the path is walked down
// from its deepest existing ancestor one level at a time, and any refusal is an error that names the
// level that failed and why. A leaf: it imports nothing of Astra's.
import fs from 'node:fs';
import path from 'node:path';

/** A directory could not be created: `code` is the system's (ENOENT, EROFS, EACCES, ENOSPC, ...). */
export class MakeDirsError extends Error {
  constructor(
    /** The directory asked for. */
    readonly dir: string,
    /** The level that could not be created (or the file in the way). */
    readonly path: string,
    readonly code: string,
    /** Why, in words, without the directory asked for (callers add it and what to do). */
    readonly detail: string,
  ) {
    super(`cannot create the directory ${dir}: ${detail}`);
    this.name = 'MakeDirsError';
  }
}

/**
 * Creates `dir` and its missing parents with `mode` (default 0700). Returns the first directory it
 * created, or undefined when `dir` already was one (like mkdirSync's recursive form). Another
 * process creating a level at the same time is fine.
 */
export function makeDirs(dir: string, mode = 0o700): string | undefined {
  const target = path.resolve(dir);
  const missing: string[] = [];
  for (let at = target; ; ) {
    let st: fs.Stats;
    try {
      st = fs.statSync(at);
    } catch (e) {
      const code = errCode(e);
      if (code !== 'ENOENT') throw explain(target, at, code);
      missing.unshift(at);
      const parent = path.dirname(at);
      if (parent === at) throw explain(target, at, code);
      at = parent;
      continue;
    }
    if (!st.isDirectory()) throw explain(target, at, 'ENOTDIR');
    break;
  }
  let first: string | undefined;
  for (const level of missing) {
    try {
      fs.mkdirSync(level, { mode });
      first ??= level;
    } catch (e) {
      const code = errCode(e);
      if (code === 'EEXIST' && isDirectory(level)) continue; // made by someone else meanwhile
      throw explain(target, level, code);
    }
  }
  return first;
}

function explain(dir: string, at: string, code: string): MakeDirsError {
  const parent = path.dirname(at);
  let detail: string;
  switch (code) {
    case 'ENOTDIR':
      detail = `${firstFile(at) ?? at} is a file, not a directory`;
      break;
    case 'EEXIST':
      detail = `${at} exists and is not a directory (a file, or a symbolic link to nothing)`;
      break;
    case 'ENOENT':
      detail = `${parent} does not allow directories to be made in it (ENOENT; a virtual file system such as /proc or /sys?)`;
      break;
    case 'EROFS':
      detail = `${parent} is on a read-only file system (EROFS)`;
      break;
    case 'EACCES':
    case 'EPERM':
      detail = `you may not create ${at} (${code}: no write permission on ${parent})`;
      break;
    case 'ENOSPC':
    case 'EDQUOT':
      detail = `the disk holding ${parent} is full (${code})`;
      break;
    default:
      detail = `${at} cannot be created (${code})`;
  }
  return new MakeDirsError(dir, at, code, detail);
}

/** The first ancestor of `p` (or `p`) that exists and is not a directory. */
function firstFile(p: string): string | undefined {
  const chain: string[] = [];
  for (let at = path.resolve(p); ; at = path.dirname(at)) {
    chain.unshift(at);
    if (path.dirname(at) === at) break;
  }
  for (const at of chain) {
    try {
      if (!fs.statSync(at).isDirectory()) return at;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function errCode(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
}
