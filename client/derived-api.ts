// The typed members (client.session.read, client.ping, ...) defined from the method table at run
// time, matching the DerivedApi type of api.ts: a method added to the table needs no client code.
import { AstraError, METHOD_NAMES } from '../protocol/index.js';
import type { CallOptions, ClientMethodName } from './api.js';

export function defineDerivedApi(target: object, call: (method: ClientMethodName, params: unknown, opts: CallOptions | undefined) => Promise<unknown>): void {
  const namespaces = new Map<string, Record<string, unknown>>();
  for (const name of METHOD_NAMES) {
    if (name === 'initialize') continue;
    const method = name as ClientMethodName;
    const fn = (params?: unknown, opts?: CallOptions) => call(method, params, opts);
    const slash = method.indexOf('/');
    if (slash < 0) {
      defineMember(target, method, fn);
      continue;
    }
    const ns = method.slice(0, slash);
    let table = namespaces.get(ns);
    if (!table) namespaces.set(ns, (table = {}));
    table[method.slice(slash + 1)] = fn;
  }
  for (const [ns, table] of namespaces) defineMember(target, ns, Object.freeze(table));
}

function defineMember(target: object, name: string, value: unknown): void {
  if (name in target)
    throw new AstraError('internal_error', `the method table's "${name}" clashes with an AstraClient member; rename one of them`);
  Object.defineProperty(target, name, { value, enumerable: true, writable: false, configurable: false });
}
