// The method router, derived from the protocol's method table: every method in METHODS must have a
// handler here (the type says so), params are checked against the table's schema, and the table's
// policy — not ifs in handlers — decides who may call what.
import {
  AstraError,
  METHODS,
  checkRequestParams,
  isExperimentalMethod,
  isMethodName,
  type MethodName,
  type ParamsOf,
  type ResultOf,
  type TraceContext,
} from '../protocol/index.js';
import type { Peer } from './peer.js';

export type Handler<M extends MethodName> = (params: ParamsOf<M>, peer: Peer, trace?: TraceContext) => Promise<ResultOf<M>> | ResultOf<M>;
export type Handlers = { [M in Exclude<MethodName, 'initialize'>]: Handler<M> };

export interface RouterHooks {
  /** Throws not_controller or stale_epoch unless the peer holds the session's lease at this epoch. */
  checkController(sessionId: string, peer: Peer, epoch: number): Promise<void>;
  /** Throws shutting_down when mutations are no longer accepted. */
  checkAcceptingMutations(method: MethodName): void;
}

export function createRouter(handlers: Handlers, hooks: RouterHooks) {
  return async function route(method: string, params: unknown, peer: Peer, trace?: TraceContext): Promise<unknown> {
    if (!isMethodName(method) || method === 'initialize') {
      if (method === 'initialize') throw new AstraError('already_initialized', 'this connection is already initialized');
      throw new AstraError('method_not_found', `unknown method "${method}"; this daemon serves: ${Object.keys(handlers).join(', ')}`);
    }
    if (isExperimentalMethod(method) && !peer.experimentalApi)
      throw new AstraError('experimental_not_enabled', `${method} is experimental: send capabilities.experimentalApi: true in initialize to use it`, { method });
    const p = (params ?? {}) as Record<string, unknown>;
    checkRequestParams(method, p);
    const { policy } = METHODS[method];
    if (policy.mutates) hooks.checkAcceptingMutations(method);
    // METADATA (epoch 'optional'): open to anyone; an epoch given is checked like a controller write's.
    const fenced = policy.epoch === 'optional' && p.epoch !== undefined && p.epoch !== null;
    if (policy.controller || fenced) await hooks.checkController(p.sessionId as string, peer, p.epoch as number);
    const handler = handlers[method] as (params: unknown, peer: Peer, trace?: TraceContext) => unknown;
    return handler(p, peer, trace);
  };
}

/** The methods this daemon serves; the initialize result lists those a connection may call (capabilities.ts). */
export function servedMethods(handlers: Handlers): string[] {
  return ['initialize', ...Object.keys(handlers)];
}
