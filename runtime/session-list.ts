// session/list's order and cursor: newest first, and an opaque cursor naming the last row shown.
import { AstraError } from '../protocol/index.js';

const MAX_LIST_LIMIT = 1000;

export interface SessionRow<T> {
  createdAt: number;
  id: string;
  entry: T;
}

function encodeCursor(createdAt: number, id: string): string {
  return `c1.${Buffer.from(JSON.stringify([createdAt, id])).toString('base64url')}`;
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const bad = () => new AstraError('cursor_expired', 'The session list cursor is not valid; list again from the start.');
  if (!cursor.startsWith('c1.')) throw bad();
  try {
    const v = JSON.parse(Buffer.from(cursor.slice(3), 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(v) || typeof v[0] !== 'number' || typeof v[1] !== 'string') throw bad();
    return { createdAt: v[0], id: v[1] };
  } catch {
    throw bad();
  }
}

/** Newest first: createdAt descending, then id descending. */
function compareNewestFirst(a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** One page of rows (sorted here, newest first) after `cursor`, and the cursor of the next page when there is one. */
export function pageOfSessions<T>(rows: SessionRow<T>[], cursor: string | undefined | null, limitParam: number | undefined): { page: SessionRow<T>[]; nextCursor?: string } {
  const limit = Math.max(1, Math.min(limitParam ?? 50, MAX_LIST_LIMIT));
  const after = cursor !== undefined && cursor !== null ? decodeCursor(cursor) : undefined;
  rows.sort(compareNewestFirst);
  let start = 0;
  if (after) {
    start = rows.findIndex((r) => compareNewestFirst(r, after) > 0);
    if (start < 0) start = rows.length;
  }
  const page = rows.slice(start, start + limit);
  const last = page[page.length - 1];
  return last && start + limit < rows.length ? { page, nextCursor: encodeCursor(last.createdAt, last.id) } : { page };
}
