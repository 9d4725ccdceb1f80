// The requests a connection sent and has not had answered: by id, each with its deadline and abort
// signal. One timer serves every deadline (armed for the earliest): a timer set and cleared per
// request cost a round trip about a tenth of its time (node timers are a list insert and removal).
import { AstraError, type RequestId } from '../protocol/index.js';

export interface Pending {
  method: string;
  resolve: (result: unknown) => void;
  reject: (err: AstraError) => void;
  /** performance.now() after which the request times out; 0 = never. */
  deadline: number;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * performance.now(), read once per run of the microtask queue: a burst of requests (64 in flight
 * answered in one read) needs one clock read, not one each (a read was a twentieth of a call's CPU).
 * Only deadlines use it; a deadline from a value a few microtasks old is early by that much, and the
 * sweep compares with a fresh clock.
 */
let tickNow = -1;
const forgetTickNow = (): void => {
  tickNow = -1;
};
function nowThisTick(): number {
  if (tickNow < 0) {
    tickNow = performance.now();
    queueMicrotask(forgetTickNow);
  }
  return tickNow;
}

export class PendingRequests {
  private readonly byId = new Map<RequestId, Pending>();
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (Infinity: not armed). */
  private timerAt = Infinity;
  private readonly sweepBound = () => this.sweep();

  /** `onTimeout`: a request's deadline passed (it has been removed already). */
  constructor(private readonly onTimeout: (p: Pending) => void) {}

  /** The deadline of a request sent now that times out after `timeoutMs` (0 = never). */
  static deadlineIn(timeoutMs: number): number {
    return timeoutMs > 0 ? nowThisTick() + timeoutMs : 0;
  }

  get size(): number {
    return this.byId.size;
  }

  add(id: RequestId, p: Pending): void {
    this.byId.set(id, p);
    if (p.deadline > 0 && p.deadline < this.timerAt) this.arm(p.deadline);
  }

  /** Removes a pending request and its abort listener; undefined for an unknown id. */
  settle(id: RequestId): Pending | undefined {
    const p = this.byId.get(id);
    if (!p) return undefined;
    this.byId.delete(id);
    if (p.signal && p.onAbort) p.signal.removeEventListener('abort', p.onAbort);
    return p;
  }

  /** Removes every pending request, in the order they were sent, and stops the timer. */
  takeAll(): Pending[] {
    const all: Pending[] = [];
    for (const id of [...this.byId.keys()]) all.push(this.settle(id)!);
    this.disarm();
    return all;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.sweepBound, Math.max(0, at - performance.now()));
    // Never what keeps the process alive: the socket does while a request waits, and a timer armed
    // for an answered request is kept. (Toggling ref/unref per request was two calls into C++ each.)
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private sweep(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    const expired: RequestId[] = [];
    for (const [id, p] of this.byId) {
      if (p.deadline === 0) continue;
      // Timers may fire a little early by performance.now(): within a millisecond counts as due.
      if (p.deadline <= now + 1) expired.push(id);
      else if (p.deadline < next) next = p.deadline;
    }
    for (const id of expired) {
      const p = this.settle(id);
      if (p) this.onTimeout(p);
    }
    // onTimeout may have sent a request (and armed the timer for it).
    if (next < this.timerAt) this.arm(next);
  }
}

/** A request's answer did not come within its timeout. `label` names the connection. */
export function timeoutError(label: string, p: Pending): AstraError {
  return new AstraError('request_timeout', `${label}: no answer to ${p.method} within ${p.timeoutMs} ms; the peer may be hung or overloaded`, {
    method: p.method,
    timeoutMs: p.timeoutMs,
  });
}

/** The connection closed before `method` was answered: with the cause (ours or the peer's) or the socket's error. */
export function closedError(label: string, method: string, cause: AstraError | undefined, socketError: Error | undefined): AstraError {
  const why = cause ? ` (${cause.reason}: ${cause.message})` : socketError ? ` (${socketError.message})` : '';
  return new AstraError('connection_closed', `${label}: the connection closed before ${method} was answered${why}; reconnect and retry if it is safe`, {
    method,
    ...(cause ? { cause: cause.reason } : {}),
  });
}

/** The caller aborted `method`: the signal's reason when it is an AstraError, else request_cancelled. */
export function abortError(label: string, method: string, signal: AbortSignal): AstraError {
  if (signal.reason instanceof AstraError) return signal.reason;
  return new AstraError('request_cancelled', `${label}: ${method} was cancelled by the caller`, { method });
}
