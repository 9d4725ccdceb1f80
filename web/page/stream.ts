// A session's event stream for the page: EventSource with ?since= / Last-Event-ID, and a stream of
// its own after the browser gives up (the gateway or daemon restarted). Every event reaches the
// renderers once, in seq order: anything at or below the last seq seen is dropped.
import type { StreamEventData, StreamEventName } from '../gateway/contract.js';
import { tabId, type PageEvent } from './api.js';

export type StreamState = 'connecting' | 'catching-up' | 'live' | 'reconnecting' | 'ended';

export interface StreamHandlers {
  onEvent(e: PageEvent): void;
  onState(s: StreamState, detail?: string): void;
  /** The stream (re)opened: the gateway may be new, so the page refreshes what it shows about control. */
  onOpen(): void;
  /** The daemon's word about the session that no event carries (a full disk: `notice`, docs/http.md). */
  onNotice(n: StreamNotice): void;
}

/** The gateway's `notice` (docs/http.md): a full disk, and the disk back. */
export type StreamNotice = StreamEventData<'notice'>;

/** The stream's own events, not session events: each one the contract names, and no other (the type checks both). */
const STREAM_EVENTS: Readonly<Record<StreamEventName, true>> = {
  open: true,
  replayed: true,
  heartbeat: true,
  lagged: true,
  resynced: true,
  reconnecting: true,
  reconnected: true,
  notice: true,
  closed: true,
  error: true,
};

export class SessionStream {
  lastSeq = 0;
  private source: EventSource | undefined;
  private retryTimer: number | undefined;
  private attempts = 0;
  private closed = false;
  /** A stream silent for 2.5 heartbeats is dead (a laptop that slept, a proxy that hung): reopen it. */
  private lastFrameAt = Date.now();
  private heartbeatMs = 15_000;
  private watchdog: number | undefined;

  constructor(
    readonly sessionId: string,
    private readonly eventTypes: string[],
    private readonly h: StreamHandlers,
  ) {}

  start(): void {
    this.open();
    this.watchdog = window.setInterval(() => {
      if (this.source && Date.now() - this.lastFrameAt > this.heartbeatMs * 2.5) {
        this.h.onState('reconnecting', 'the stream went silent');
        this.retry();
      }
    }, 1_000);
  }

  private open(): void {
    if (this.closed) return;
    this.h.onState(this.attempts === 0 ? 'connecting' : 'reconnecting');
    const url = `/v1/sessions/${encodeURIComponent(this.sessionId)}/events?tab=${tabId}&since=${this.lastSeq}`;
    const es = new EventSource(url);
    this.source = es;
    this.lastFrameAt = Date.now();
    es.addEventListener('heartbeat', () => (this.lastFrameAt = Date.now()));
    es.addEventListener('open', (ev) => {
      const m = ev as MessageEvent;
      this.lastFrameAt = Date.now();
      if (typeof m.data !== 'string') return; // the EventSource's own open, not the gateway's
      const hb = (JSON.parse(m.data) as Partial<StreamEventData<'open'>>).heartbeatMs;
      if (typeof hb === 'number' && hb > 0) this.heartbeatMs = hb;
      this.attempts = 0;
      this.h.onState('catching-up');
      this.h.onOpen();
    });
    es.addEventListener('replayed', () => this.h.onState('live'));
    es.addEventListener('lagged', () => this.h.onState('catching-up', 'lagged: resyncing from the journal'));
    es.addEventListener('resynced', () => this.h.onState('live'));
    // The gateway is up but the tab's daemon connection is not (the daemon restarts).
    es.addEventListener('reconnecting', (ev) => {
      this.lastFrameAt = Date.now();
      this.h.onState('reconnecting', (JSON.parse((ev as MessageEvent).data as string) as Partial<StreamEventData<'reconnecting'>>).reason);
    });
    es.addEventListener('reconnected', () => {
      this.lastFrameAt = Date.now();
      this.h.onState('live');
      this.h.onOpen();
    });
    es.addEventListener('notice', (ev) => {
      this.lastFrameAt = Date.now();
      this.h.onNotice(JSON.parse((ev as MessageEvent).data as string) as StreamNotice);
    });
    // The session was deleted or archived: the stream ends for good.
    es.addEventListener('closed', (ev) => {
      this.close();
      this.h.onState('ended', `the session was ${(JSON.parse((ev as MessageEvent).data as string) as Partial<StreamEventData<'closed'>>).reason}`);
    });
    /** A session event (JSON with its seq): once, in seq order. */
    const deliver = (data: string): void => {
      this.lastFrameAt = Date.now();
      const e = JSON.parse(data) as PageEvent;
      if (e.seq <= this.lastSeq) return;
      this.lastSeq = e.seq;
      this.h.onEvent(e);
    };
    es.addEventListener('error', (ev) => {
      const m = ev as MessageEvent;
      if (typeof m.data === 'string') {
        const frame = JSON.parse(m.data) as { seq?: unknown; error?: { message?: string } };
        // `error` is also a session event type (a failed model request): that one carries a seq.
        if (typeof frame.seq === 'number') return deliver(m.data);
        this.h.onState('reconnecting', frame.error?.message);
      } else this.h.onState('reconnecting');
      // The browser retries by itself while it can (with Last-Event-ID); once it gives up, we do.
      if (es.readyState === EventSource.CLOSED) this.retry();
    });
    for (const type of this.eventTypes) {
      if (Object.hasOwn(STREAM_EVENTS, type)) continue;
      es.addEventListener(type, (ev) => deliver((ev as MessageEvent).data as string));
    }
  }

  private retry(): void {
    this.source?.close();
    this.source = undefined;
    if (this.closed || this.retryTimer !== undefined) return;
    const delay = Math.min(5_000, 250 * 2 ** this.attempts++) * (0.5 + Math.random() / 2);
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = undefined;
      this.open();
    }, delay);
  }

  close(): void {
    this.closed = true;
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.source?.close();
  }
}
