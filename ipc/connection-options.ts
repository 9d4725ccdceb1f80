// What a Connection (connection.ts) is made with and calls back: its options, a request's options,
// the handlers' shapes, and its lifecycle's states.
import type { AstraError, RequestId, TraceContext } from '../protocol/index.js';
import type { DirectReads } from './direct-reads.js';

export interface ConnectionOptions {
  /** Frame payload limit for what we receive. */
  maxIncomingBytes: number;
  /** Frame payload limit for what we send. */
  maxOutgoingBytes: number;
  /** Default LIMITS.frameDeadlineMs. */
  frameDeadlineMs?: number;
  /** Default 30 000 ms; 0 = none. */
  requestTimeoutMs?: number;
  /** Names the connection in error messages. */
  label?: string;
  /** Told about exceptions thrown by our own handlers (for the log); they never reach the peer. */
  onHandlerError?: (err: unknown, where: string) => void;
  /**
   * 'always' (default): every incoming frame is scanned for MessagePack extension types before it
   * is decoded. 'onError': decode first and scan only a frame that fails validation — for a client
   * reading its own authenticated daemon, where the envelope check (checkPlainValue) already
   * refuses what an extension decodes to, and the scan would cost every frame a second walk.
   */
  extensionScan?: 'always' | 'onError';
  /** The socket was created with `onread: directReads.onread` (ipc/direct-reads.ts): it emits no 'data'. */
  directReads?: DirectReads;
}

export interface RequestOptions {
  /** Overrides the connection's requestTimeoutMs; 0 = none. */
  timeoutMs?: number;
  /** Aborting rejects the request locally; a late answer is ignored. */
  signal?: AbortSignal;
  trace?: TraceContext;
}

export interface RequestContext {
  id: RequestId;
  trace?: TraceContext;
}

export type RequestHandler = (method: string, params: unknown, ctx: RequestContext) => unknown | Promise<unknown>;
export type NotificationHandler = (method: string, params: unknown) => void;
export type CloseHandler = (err: AstraError | undefined) => void;

/**
 * 'open' until close() or destroy(); 'closing' while a graceful close flushes (or a destroyed
 * socket has yet to emit 'close'); 'closed' once the socket closed and the close handlers ran.
 */
export type ConnectionState = 'open' | 'closing' | 'closed';
