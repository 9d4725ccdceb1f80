// A framed, msgpack-speaking connection over a net.Socket, used by both the daemon and the client:
// request/response correlation in both directions, notifications, dispatch, typed errors, and the
// lifecycle (one `state`). Writing frames to the socket (batching, backpressure) is FrameWriter's.
// It checks envelopes (message-reader.ts), not params: routing and params are the daemon's business.
import type net from 'node:net';
import { AstraError, LIMITS, type RequestId, type TraceContext } from '../protocol/index.js';
import { FrameDecoder } from './frame-decoder.js';
import { packFrame } from './frame-encoder.js';
import { FrameWriter, SOCKET_HIGH_MARK } from './frame-writer.js';
import { PendingRequests, abortError, closedError, timeoutError, type Pending } from './pending-requests.js';
import type { CloseHandler, ConnectionOptions, ConnectionState, NotificationHandler, RequestHandler, RequestOptions } from './connection-options.js';
import { MessageReader } from './message-reader.js';

export { SOCKET_HIGH_MARK };
export type { CloseHandler, ConnectionOptions, ConnectionState, NotificationHandler, RequestContext, RequestHandler, RequestOptions } from './connection-options.js';
/** A graceful close that cannot flush within this time becomes a destroy. */
const CLOSE_FLUSH_TIMEOUT_MS = 5_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

export class Connection {
  private readonly socket: net.Socket;
  private readonly maxOutgoingBytes: number;
  private readonly requestTimeoutMs: number;
  private readonly label: string;
  private readonly onHandlerError: ((err: unknown, where: string) => void) | undefined;
  private readonly decoder: FrameDecoder;
  private readonly writer: FrameWriter;

  private nextId = 1;
  private readonly pending = new PendingRequests((p) => p.reject(timeoutError(this.label, p)));
  private requestHandler: RequestHandler | undefined;
  private readonly notificationHandlers: NotificationHandler[] = [];
  private closeHandlers: CloseHandler[] = [];
  private readonly drainHandlers: (() => void)[] = [];
  private readonly reader: MessageReader;

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
    this.reader = new MessageReader(opts.extensionScan === 'onError');
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
    if (opts.signal?.aborted) return Promise.reject(abortError(this.label, method, opts.signal));
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
        p.onAbort = () => this.pending.settle(id)?.reject(abortError(this.label, method, signal));
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
    this.reader.envelopeOnly = true;
  }

  /** Whether trustShapes() was called: the client then checks events for their envelope only, too. */
  get shapesTrusted(): boolean {
    return this.reader.envelopeOnly;
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
    const read = this.reader.read(payload, borrowed);
    if (!('message' in read)) {
      if ('answer' in read) this.sendError(read.id, read.answer);
      else this.report(read.report, 'an invalid error message from the peer');
      return;
    }
    const message = read.message;
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
    return closedError(this.label, method, this.closeError ?? this.peerError, this.socketError);
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
