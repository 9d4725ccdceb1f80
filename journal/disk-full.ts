// A full disk (ENOSPC, EDQUOT) as Astra's disk_full error, saying what happens to the data.
import { AstraError } from '../protocol/index.js';

/** The disk_full error for `file` after `code` (ENOSPC or EDQUOT); `then` says what happens to the data. */
export function diskFull(file: string, code: string, then: string): AstraError {
  const what = code === 'EDQUOT' ? 'the disk quota is exhausted (EDQUOT)' : 'the disk is full (ENOSPC)';
  return new AstraError('disk_full', `${file}: ${what}; free space on its file system and retry — ${then}.`, { path: file });
}

/** `e` as disk_full when it is a full disk, else `e` itself. */
export function asDiskFull(e: unknown, file: string): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOSPC' || code === 'EDQUOT' ? diskFull(file, code, 'nothing was created') : e;
}
