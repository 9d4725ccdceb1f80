// The client file system Astra serves an ACP agent (`fs/read_text_file`, `fs/write_text_file`),
// confined to the session's cwd: a path outside it — after symlinks are resolved — is refused with an
// error the agent sees. Each write is journaled as a completed tool call carrying a diff.
import fs from 'node:fs';
import path from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';

/** Files larger than this are refused (read) or not accepted (write). */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

/** The real path `p` names inside `cwd` (its nearest existing ancestor resolved); throws an invalid-params error the agent sees otherwise. */
export function confinedPath(cwd: string, p: unknown): string {
  if (typeof p !== 'string' || !path.isAbsolute(p)) throw RequestError.invalidParams({ path: p }, 'path must be an absolute path');
  const root = fs.realpathSync(cwd);
  let existing = path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      existing = fs.realpathSync(existing);
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
  const real = path.join(existing, ...rest);
  const rel = path.relative(root, real);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw RequestError.invalidParams({ path: p }, `${p} is outside the session's directory ${cwd}; Astra serves files only inside it`);
  return real;
}

/** fs/read_text_file: the file's text, from 1-based `line`, `limit` lines. */
export function readTextFile(cwd: string, params: { path: unknown; line?: number | null; limit?: number | null }): { content: string } {
  const file = confinedPath(cwd, params.path);
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    throw RequestError.resourceNotFound(String(params.path));
  }
  if (!st.isFile()) throw RequestError.invalidParams({ path: params.path }, `${String(params.path)} is not a file`);
  if (st.size > MAX_FILE_BYTES) throw RequestError.invalidParams({ path: params.path }, `${String(params.path)} is larger than ${MAX_FILE_BYTES} bytes`);
  const text = fs.readFileSync(file, 'utf8');
  if (params.line == null && params.limit == null) return { content: text };
  const lines = text.split('\n');
  const from = Math.max(0, (params.line ?? 1) - 1);
  const to = params.limit == null ? lines.length : from + Math.max(0, params.limit);
  return { content: lines.slice(from, to).join('\n') };
}

/** fs/write_text_file: writes the file (its directory must exist); returns what it held before (null: a new file). */
export function writeTextFile(cwd: string, params: { path: unknown; content: unknown }): { file: string; oldText: string | null } {
  const file = confinedPath(cwd, params.path);
  if (typeof params.content !== 'string') throw RequestError.invalidParams({ path: params.path }, 'content must be a string');
  if (Buffer.byteLength(params.content) > MAX_FILE_BYTES) throw RequestError.invalidParams({ path: params.path }, `content is larger than ${MAX_FILE_BYTES} bytes`);
  let oldText: string | null = null;
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) throw RequestError.invalidParams({ path: params.path }, `${String(params.path)} is not a file`);
    oldText = st.size <= MAX_FILE_BYTES ? fs.readFileSync(file, 'utf8') : '';
  } catch (e) {
    if (e instanceof RequestError) throw e;
  }
  try {
    fs.writeFileSync(file, params.content);
  } catch (e) {
    throw RequestError.internalError({ path: params.path }, `could not write ${String(params.path)}: ${(e as Error).message}`);
  }
  return { file, oldText };
}
