// What a request gives back, as the client's parts take it: the daemon's answer checked against
// the method table, and anything thrown turned into an AstraError.
import { AstraError, METHODS, type ResultOf } from '../protocol/index.js';
import type { ClientMethodName } from './api.js';

/** Anything thrown by a request, as an AstraError (a socket error becomes connection_closed, with its code). */
export function toAstraError(e: unknown): AstraError {
  if (e instanceof AstraError) return e;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return new AstraError('connection_closed', message, code ? { code } : {});
}

/** The daemon's answer, checked against the method table; anything else is `invalid_request`. */
export function checkResult<M extends ClientMethodName>(method: M, result: unknown): ResultOf<M> {
  const problem = METHODS[method].result.check(result, `${method} result`);
  if (problem) throw new AstraError('invalid_request', `the daemon answered ${method} with something unexpected: ${problem}`);
  return result as ResultOf<M>;
}
