// A framed, msgpack-speaking connection over a net.Socket, used by both the daemon and the client:
// request/response correlation in both directions, notifications, dispatch, typed errors, and the
// lifecycle (one `state`). Writing frames to the socket (batching, backpressure) is FrameWriter's.
// It checks envelopes (parseMessage), not params: routing and params are the daemon's business.
// Over 400 lines on purpose: the inbound error paths (bad MessagePack, bad envelope, the rescan for
// an extension, never answering an error with an error) are one concern and read best together.
import type net from 'node:net';
import {
  AstraError,
  LIMITS,
  isPlainObject,
  parseMessage,
  parseTrustedMessage,
  type Message,
  type RequestId,
  type TraceContext,
} from '../protocol/index.js';
import type { DirectReads } from './direct-reads.js';
import { FrameDecoder } from './frame-decoder.js';
import { packFrame } from './frame-encoder.js';
import { FrameWriter, SOCKET_HIGH_MARK } from './frame-writer.js';
import { PendingRequests, type Pending } from './pending-requests.js';
import { decode, decodeFromTrustedPeer } from './msgpack.js';
import { EventBatchDecoder } from './event-batch.js';

export { SOCKET_HIGH_MARK };
/** A graceful close that cannot flush within this time becomes a destroy. */
const CLOSE_FLUSH_TIMEOUT_MS = 5_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

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

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/** The id of a message that failed validation, when it can still be read, so the error can echo it. */
function readableId(value: unknown): RequestId | null {
  if (!isPlainObject(value)) return null;
  const id = Object.prototype.hasOwnProperty.call(value, 'id') ? value.id : undefined;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return id;
  if (typeof id === 'string' && id.length > 0 && id.length <= 128) return id;
  return null;
}

/**
 * 'open' until close() or destroy(); 'closing' while a graceful close flushes (or a destroyed
 * socket has yet to emit 'close'); 'closed' once the socket closed and the close handlers ran.
 */
export type ConnectionState = 'open' | 'closing' | 'closed';

export class Connection {
  private readonly socket: net.Socket;
  private readonly maxOutgoingBytes: number;
  private readonly requestTimeoutMs: number;
  private readonly label: string;
  private readonly onHandlerError: ((err: unknown, where: string) => void) | undefined;
  private readonly decoder: FrameDecoder;
  private readonly writer: FrameWriter;

  private nextId = 1;
  private readonly pending = new PendingRequests((p) =>
    p.reject(
      new AstraError('request_timeout', `${this.label}: no answer to ${p.method} within ${p.timeoutMs} ms; the peer may be hung or overloaded`, {
        method: p.method,
        timeoutMs: p.timeoutMs,
      }),
    ),
  );
  private requestHandler: RequestHandler | undefined;
  private readonly notificationHandlers: NotificationHandler[] = [];
  private closeHandlers: CloseHandler[] = [];
  private readonly drainHandlers: (() => void)[] = [];
  private readonly lenientDecode: boolean;
  /** A trusted peer's output batches, decoded without msgpackr (event-batch.ts); made at the first frame. */
  private batches: EventBatchDecoder | undefined;
  /** Set by trustShapes(): envelopes only (parseTrustedMessage), no walk over every value of a frame. */
  private envelopeOnly = false;

  private stateNow: ConnectionState = 'open';
  private closeError: AstraError | undefined;
  private socketError: Error | undefined;
  private peerError: AstraError | undefined;
  private closeTimer: NodeJS.Timeout | undefined;

  constructor(socket: net.Socket, opts: ConnectionOptions) {
    this.socket = socket;
    this.maxOutgoingBytes = opts.maxOutgoingBytes;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.label = opts.label ?? 'connection';
    this.onHandlerError = opts.onHandlerError;
    this.lenientDecode = opts.extensionScan === 'onError';
    this.decoder = new FrameDecoder({
      maxPayloadBytes: opts.maxIncomingBytes,
      frameDeadlineMs: opts.frameDeadlineMs ?? LIMITS.frameDeadlineMs,
      onFrame: (payload) => this.handleFrame(payload, false),
      onBorrowedFrame: (payload) => this.handleFrame(payload, true),
      onError: (err) => this.handleFramingError(err),
    });
    this.writer = new FrameWriter(socket, opts.maxOutgoingBytes, () => {
      for (const handler of this.drainHandlers) this.callSafely(handler, 'onDrain');
    });
    if (opts.directReads) opts.directReads.attach(this.decoder);
    else socket.on('data', (chunk: Buffer) => this.decoder.push(chunk));
    socket.on('error', (err) => {
      this.socketError ??= err;
    });
    // The peer ended its side: nothing more will arrive, so pending requests cannot be answered.
    socket.on('end', () => this.close());
    socket.on('close', () => this.finish());
    if (socket.destroyed) queueMicrotask(() => this.finish());
  }

  /** Socket writes completed so far: it changes whenever the peer is taking data (progress, however slow). */
  get progress(): number {
    return this.writer.progress;
  }

  /** Bytes accepted but not yet handed to the kernel: our unflushed batch plus the socket's buffer. */
  get queuedBytes(): number {
    return this.writer.queuedBytes;
  }

  get state(): ConnectionState {
    return this.stateNow;
  }

  /** True once the connection accepts no more work: close() or destroy() was called, or the socket closed. */
  get closed(): boolean {
    return this.stateNow !== 'open';
  }

  get pendingRequests(): number {
    return this.pending.size;
  }

  request(method: string, params?: unknown, opts: RequestOptions = {}): Promise<unknown> {
    if (this.closed) return Promise.reject(this.closedError(method));
    if (opts.signal?.aborted) return Promise.reject(this.abortError(method, opts.signal));
    const id = this.nextId++;
    const message: { id: number; method: string; params?: unknown; trace?: TraceContext } = { id, method };
    if (params !== undefined) message.params = params;
    if (opts.trace) message.trace = opts.trace;
    let frame: Buffer;
    try {
      frame = this.pack(message, `the params of ${method}`);
    } catch (e) {
      return Promise.reject(e);
    }
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    return new Promise<unknown>((resolve, reject) => {
      const p: Pending = { method, resolve, reject, deadline: PendingRequests.deadlineIn(timeoutMs), timeoutMs, signal: undefined, onAbort: undefined };
      const signal = opts.signal;
      if (signal) {
        p.signal = signal;
        p.onAbort = () => this.pending.settle(id)?.reject(this.abortError(method, signal));
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.pending.add(id, p);
      this.writer.write(frame);
    });
  }

  /**
   * From now on each incoming frame's envelope is checked (parseTrustedMessage), not every value
   * in it (parseMessage's walk for forbidden keys and non-plain values). For a client once the
   * handshake authenticated its daemon and agreed on the protocol version (client option `validate`).
   */
  trustShapes(): void {
    this.envelopeOnly = true;
  }

  /** Whether trustShapes() was called: the client then checks events for their envelope only, too. */
  get shapesTrusted(): boolean {
    return this.envelopeOnly;
  }

  /** Sends a notification. Throws frame_too_large (nothing sent) when it is over the limit; a no-op once closed. */
  notify(method: string, params?: unknown): void {
    if (this.closed) return;
    const message: { method: string; params?: unknown } = { method };
    if (params !== undefined) message.params = params;
    this.writer.write(this.pack(message, `the params of ${method}`));
  }

  /** Queues a frame made by encodeFrame (encode once, send to many). A no-op once closed. */
  sendFrame(frame: Buffer): void {
    if (this.closed) return;
    this.writer.writeWhole(frame);
  }

  /**
   * Queues one frame whose payload is the concatenation of `parts` (already MessagePack: the caller
   * assembles a message from pre-encoded pieces). Small parts are copied into the write batch; large
   * ones are queued by reference, so they must not change afterwards. Throws frame_too_large
   * (nothing sent) over the limit; a no-op once closed.
   */
  sendParts(parts: readonly Uint8Array[]): void {
    if (this.closed) return;
    this.writer.writeParts(parts);
  }

  /**
   * Resolves once queuedBytes is below `below` (checked as the socket hands writes to the kernel),
   * or the connection closed.
   */
  drained(below: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.writer.drained(below);
  }

  /**
   * Handles the peer's requests. The returned value (or resolved promise) is the result; a thrown
   * AstraError is the error response; anything else thrown becomes a generic internal_error.
   */
  onRequest(handler: RequestHandler): void {
    this.requestHandler = handler;
  }

  onNotification(handler: NotificationHandler): void {
    this.notificationHandlers.push(handler);
  }

  /** Called once, when the socket has closed; with the reason, or undefined for a clean close. */
  onClose(handler: CloseHandler): void {
    if (this.stateNow === 'closed') queueMicrotask(() => this.callSafely(() => handler(this.closeError), 'onClose'));
    else this.closeHandlers.push(handler);
  }

  /** Called when the socket's buffer drained after a write filled it past the high-water mark. */
  onDrain(handler: () => void): void {
    this.drainHandlers.push(handler);
  }

  /** Graceful: rejects pending requests, flushes what is queued, then ends the socket. */
  close(err?: AstraError): void {
    if (this.closed) return;
    this.stateNow = 'closing';
    this.writer.release();
    this.closeError ??= err;
    this.decoder.dispose();
    this.rejectAllPending();
    this.writer.flush(true);
    this.socket.end();
    this.closeTimer = setTimeout(() => this.socket.destroy(), CLOSE_FLUSH_TIMEOUT_MS);
    this.closeTimer.unref();
  }

  /** Immediate: drops what is queued and destroys the socket. */
  destroy(err?: AstraError): void {
    if (this.stateNow === 'closed') return;
    this.stateNow = 'closing';
    this.writer.release();
    this.closeError ??= err;
    this.decoder.dispose();
    this.rejectAllPending();
    this.writer.discard(false);
    this.socket.destroy();
  }

  // ---- outbound ----

  private pack(message: object, what: string): Buffer {
    try {
      return packFrame(message, this.maxOutgoingBytes);
    } catch (e) {
      if (e instanceof AstraError) throw e;
      throw new AstraError('invalid_params', `${what} cannot be encoded as MessagePack: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private send(message: object): void {
    if (this.stateNow === 'closed' || this.socket.destroyed) return;
    this.writer.write(packFrame(message, this.maxOutgoingBytes));
  }

  private sendError(id: RequestId | null, err: AstraError): void {
    try {
      this.send({ id, error: err.toWire() });
    } catch (e) {
      // Only an error whose data is too big to send lands here; send it without its data.
      this.report(e, 'sendError');
      this.send({ id, error: { code: err.code, message: err.message, data: { reason: err.reason } } });
    }
  }

  private respond(id: RequestId, method: string, result: unknown): void {
    if (this.stateNow === 'closed' || this.socket.destroyed) return;
    let frame: Buffer;
    try {
      frame = packFrame({ id, result: result ?? null }, this.maxOutgoingBytes);
    } catch (e) {
      if (e instanceof AstraError && e.reason === 'frame_too_large') {
        this.sendError(id, new AstraError('frame_too_large', `the result of ${method} is too large to send; page or narrow the request`, e.data));
      } else {
        this.report(e, `encoding the result of ${method}`);
        this.sendError(id, new AstraError('internal_error', 'internal error; the log has details'));
      }
      return;
    }
    this.writer.write(frame);
  }

  private respondThrown(id: RequestId, method: string, e: unknown): void {
    if (e instanceof AstraError) {
      this.sendError(id, e);
      return;
    }
    this.report(e, `the handler of ${method}`);
    this.sendError(id, new AstraError('internal_error', 'internal error; the log has details'));
  }

  // ---- inbound ----

  /** `borrowed`: the payload lies in the decoder's reused read buffer, valid only during this call (FrameDecoder.onBorrowedFrame). */
  private handleFrame(payload: Buffer, borrowed: boolean): void {
    let value: unknown;
    try {
      // Event frames (nearly every frame of a busy stream) by their known layout, keeping no view of
      // a borrowed payload; anything else by msgpackr, from a copy of a borrowed one (its bin values are views).
      if (this.lenientDecode) {
        value = (this.batches ??= new EventBatchDecoder()).decode(payload, borrowed);
        if (value === undefined) value = decodeFromTrustedPeer(borrowed ? (payload = Buffer.from(payload)) : payload);
      } else value = decode(borrowed ? (payload = Buffer.from(payload)) : payload);
    } catch (e) {
      // The framing is intact, so the connection survives one bad payload.
      this.sendError(null, e instanceof AstraError ? e : new AstraError('parse_error'));
      return;
    }
    let message: Message;
    try {
      message = this.envelopeOnly ? parseTrustedMessage(value) : parseMessage(value);
    } catch (e) {
      if (this.lenientDecode) {
        // Scan now, so an extension type is reported as such (decode throws the precise error).
        try {
          decode(payload);
        } catch (scanned) {
          if (scanned instanceof AstraError) {
            this.sendError(null, scanned);
            return;
          }
        }
      }
      const err = e instanceof AstraError ? e : new AstraError('invalid_request', 'the message could not be validated');
      // Never answer an error with an error: two peers could bounce them forever.
      if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, 'error')) {
        this.report(err, 'an invalid error message from the peer');
        return;
      }
      this.sendError(readableId(value), err);
      return;
    }
    switch (message.kind) {
      case 'request':
        this.handleRequest(message.id, message.method, message.params, message.trace);
        return;
      case 'response':
        this.pending.settle(message.id)?.resolve(message.result);
        return;
      case 'error': {
        const err = AstraError.fromWire(message.error);
        if (message.id === null) this.peerError = err;
        else this.pending.settle(message.id)?.reject(err);
        return;
      }
      case 'notification':
        // No closure per message: this is the hot path of a busy event stream.
        for (let i = 0; i < this.notificationHandlers.length; i++) {
          try {
            this.notificationHandlers[i]!(message.method, message.params);
          } catch (e) {
            this.report(e, `the ${message.method} notification handler`);
          }
        }
        return;
    }
  }

  private handleRequest(id: RequestId, method: string, params: unknown, trace: TraceContext | undefined): void {
    const handler = this.requestHandler;
    if (!handler) {
      this.sendError(id, new AstraError('method_not_found', `${this.label} does not serve requests ("${method}")`));
      return;
    }
    let result: unknown;
    try {
      result = handler(method, params, trace ? { id, trace } : { id });
    } catch (e) {
      this.respondThrown(id, method, e);
      return;
    }
    if (isThenable(result))
      result.then(
        (r) => this.respond(id, method, r),
        (e: unknown) => this.respondThrown(id, method, e),
      );
    else this.respond(id, method, result);
  }

  private handleFramingError(err: AstraError): void {
    // frame_too_large or frame_timeout: framing is lost, so say why once and close (fail closed).
    this.sendError(null, err);
    this.close(err);
  }

  // ---- bookkeeping ----

  private rejectAllPending(): void {
    for (const p of this.pending.takeAll()) p.reject(this.closedError(p.method));
  }

  private closedError(method: string): AstraError {
    const cause = this.closeError ?? this.peerError;
    const why = cause ? ` (${cause.reason}: ${cause.message})` : this.socketError ? ` (${this.socketError.message})` : '';
    return new AstraError('connection_closed', `${this.label}: the connection closed before ${method} was answered${why}; reconnect and retry if it is safe`, {
      method,
      ...(cause ? { cause: cause.reason } : {}),
    });
  }

  private abortError(method: string, signal: AbortSignal): AstraError {
    if (signal.reason instanceof AstraError) return signal.reason;
    return new AstraError('request_cancelled', `${this.label}: ${method} was cancelled by the caller`, { method });
  }

  private finish(): void {
    if (this.stateNow === 'closed') return;
    this.stateNow = 'closed';
    this.writer.release();
    if (this.closeTimer) clearTimeout(this.closeTimer);
    this.decoder.dispose();
    this.writer.discard(true);
    if (!this.closeError) {
      if (this.peerError) this.closeError = this.peerError;
      else if (this.socketError)
        this.closeError = new AstraError('connection_closed', `${this.label}: ${this.socketError.message}`, {
          code: (this.socketError as NodeJS.ErrnoException).code,
        });
    }
    this.rejectAllPending();
    this.writer.checkDrained();
    const handlers = this.closeHandlers;
    this.closeHandlers = [];
    for (const handler of handlers) this.callSafely(() => handler(this.closeError), 'onClose');
  }

  private callSafely(fn: () => void, where: string): void {
    try {
      fn();
    } catch (e) {
      this.report(e, where);
    }
  }

  private report(err: unknown, where: string): void {
    if (!this.onHandlerError) return;
    try {
      this.onHandlerError(err, where);
    } catch {
      // A failing logger must not take the connection down.
    }
  }
}
