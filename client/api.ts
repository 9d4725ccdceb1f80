// The typed client API, derived from the protocol's method table: a method added to
// protocol/methods.ts appears here (as client.call('ns/name') and client.ns.name()) with no
// hand-written client code.
import type { MethodName, ParamsOf, ResultOf, TraceContext } from '../protocol/index.js';

/** Every method a client may call (initialize is the handshake, done by connect). */
export type ClientMethodName = Exclude<MethodName, 'initialize'>;

/** Fields the client fills in when they are missing: the held lease's epoch, a fresh idempotency key. */
export type AutoFilledField = 'epoch' | 'idempotencyKey';

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** A method's params as the client accepts them: `epoch` and `idempotencyKey` become optional. */
export type ClientParams<M extends ClientMethodName> = Simplify<
  Omit<ParamsOf<M>, AutoFilledField> & Partial<Pick<ParamsOf<M>, Extract<keyof ParamsOf<M>, AutoFilledField>>>
>;

export interface CallOptions {
  /** Overrides the client's requestTimeoutMs for this call; 0 = none. */
  timeoutMs?: number;
  /** Aborting rejects the call locally (a mutation already sent may still take effect). */
  signal?: AbortSignal;
  trace?: TraceContext;
}

/** The argument list of a method: params may be left out when every field is optional. */
export type CallArgs<M extends ClientMethodName> = {} extends ClientParams<M>
  ? [params?: ClientParams<M>, opts?: CallOptions]
  : [params: ClientParams<M>, opts?: CallOptions];

export type MethodFn<M extends ClientMethodName> = (...args: CallArgs<M>) => Promise<ResultOf<M>>;

type NamespaceOf<M extends string> = M extends `${infer NS}/${string}` ? NS : never;
/** The first segment of every namespaced method: 'session', 'turn', 'lease', 'daemon', 'mutation'. */
export type MethodNamespace = NamespaceOf<ClientMethodName>;
/** Methods without a namespace, such as 'ping'. */
export type TopLevelMethodName = Exclude<ClientMethodName, `${string}/${string}`>;

/** `client.session`: `{ create, list, read, ... }`, one function per `session/...` method. */
export type NamespaceApi<NS extends string> = {
  readonly [M in ClientMethodName as M extends `${NS}/${infer Name}` ? Name : never]: MethodFn<M>;
};

/** Everything the method table gives the client: `client.session.create(...)`, `client.ping()`, ... */
export type DerivedApi = { readonly [NS in MethodNamespace]: NamespaceApi<NS> } & {
  readonly [M in TopLevelMethodName]: MethodFn<M>;
};
