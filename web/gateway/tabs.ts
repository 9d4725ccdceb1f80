// One browser tab = one client of the daemon (docs/http.md §Tabs): its own AstraClient connection,
// hence its own client identity, lease and resume token, exactly like a terminal. This module owns a
// tab's client, its leases and its pending approval prompts; tab-registry.ts the set of tabs and their limits.
import { AstraClient, type ApprovalRequest, type ClientEvents, type ControllerLease } from '../../client/index.js';
import { AstraError, isAstraError, type Decision } from '../../protocol/index.js';
import { isProcessAlive, readRecord, resolvePaths } from '../../discovery/index.js';
import { HttpError } from './errors.js';
import type { LeaseStore } from './lease-store.js';
import type { Grant } from './pairing.js';

export const TAB_ID = /^[A-Za-z0-9_-]{1,64}$/;

const REMEMBERED_DECISIONS = 256;
/** Approval ids remembered with their session (from prompts and streamed events), for answers that name no sessionId. */
const REMEMBERED_APPROVALS = 1024;
/** Held prompts past this many are handed back (the oldest first); the daemon offers them again on the next lease change. */
const MAX_PROMPTS = 256;
/** A prompt with an expiry is handed back this long after it (the daemon has resolved it as denied by then). */
const PROMPT_EXPIRY_SLACK_MS = 1_000;

export interface DecisionResult {
  approvalId: string;
  sessionId: string;
  decision: Decision;
  revision: number;
  optionId?: string;
}

/** An answer the page sent, by its idempotencyKey: what it asked, and the result or refusal. */
interface RememberedDecision {
  approvalId: string;
  decision: Decision;
  revision: number;
  optionId?: string;
  result?: DecisionResult;
  error?: unknown;
}

interface PendingPrompt {
  request: ApprovalRequest;
  resolve: (d: Decision) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
}

/** While the tab's client is stopped (`astra daemon stop`), how often the gateway looks for a daemon someone started. */
const STOPPED_POLL_MS = 500;

/** Why the tab's daemon connection is down, for the streams that open meanwhile. */
export interface DaemonDown {
  reason: string;
  daemonShuttingDown: boolean;
}

/** The daemon's session/notice (a full disk), as AstraClient's 'notice' event gives it. */
export type SessionNotice = ClientEvents['notice'];

/** What a tab needs of its event streams (sse.ts EventStream): told of the daemon connection and of notices, and stopped. */
export interface TabStream {
  daemonDisconnected(reason: string, daemonShuttingDown: boolean): void;
  daemonReconnected(daemonRestarted: boolean, attempts: number): void;
  sessionNotice(n: SessionNotice): void;
  stop(): void;
  /** Resolves when the stream has ended and its subscription is closed. */
  readonly ended: Promise<void>;
}

export class Tab {
  readonly streams = new Map<string, TabStream>();
  /** Told the daemon's session notices besides this tab's streams (the shared feeds' link: feedLink). */
  onNotice: ((n: SessionNotice) => void) | undefined;
  lastUsed = Date.now();
  private client: AstraClient | undefined;
  private connecting: Promise<AstraClient> | undefined;
  private readonly prompts = new Map<string, PendingPrompt>();
  private readonly approvalSessions = new Map<string, string>();
  private readonly decisions = new Map<string, RememberedDecision>();
  private closed = false;
  /** The last drop's reason; what counts is the client's state (down unless connected). */
  private lastDrop: DaemonDown = { reason: 'the connection to the daemon dropped', daemonShuttingDown: false };
  private stoppedPoll: NodeJS.Timeout | undefined;

  constructor(
    readonly key: string,
    readonly tabId: string,
    readonly grant: Grant,
    private readonly env: NodeJS.ProcessEnv,
    private readonly clientVersion: string,
    readonly limitStreams: number,
    private readonly leaseStore: LeaseStore,
    /** Called when the tab's last event stream ends. */
    private readonly onStreamsGone: () => void = () => undefined,
    /** The connection's name at the daemon (default: `astra web tab|observer <browser>/<tab>`). */
    private readonly name?: string,
  ) {}

  /** An event stream of this tab ended (sse.ts). */
  streamEnded(): void {
    this.lastUsed = Date.now();
    if (this.streams.size === 0) this.onStreamsGone();
  }

  get readOnly(): boolean {
    return this.grant.readOnly;
  }

  get clientName(): string {
    return this.name ?? `astra web ${this.readOnly ? 'observer' : 'tab'} ${this.grant.id}/${this.tabId.slice(0, 8)}`;
  }

  /** The tab's daemon client, connected on first use (the daemon is started when none runs). */
  async daemon(opts: { whileStopped?: boolean } = {}): Promise<AstraClient> {
    if (this.closed) throw new AstraError('connection_closed', 'this tab was closed by the gateway; reload the page');
    if (this.client?.state === 'stopped' && !opts.whileStopped)
      throw new AstraError('daemon_not_running', 'the daemon was stopped (astra daemon stop): run `astra daemon start`; open pages go on by themselves once it runs');
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      try {
        const client = await AstraClient.connect({
          clientName: this.clientName,
          clientVersion: this.clientVersion,
          env: this.env,
          // A browser tab outlives daemon restarts: keep trying for as long as the tab is open.
          reconnect: { initialDelayMs: 100, maxDelayMs: 2_000, maxElapsedMs: Infinity },
        });
        if (!this.readOnly) client.onApproval((request) => this.prompt(request));
        client.on('leaseLost', ({ sessionId }) => {
          this.leaseStore.forget(this.key, sessionId);
          this.dropPrompts(sessionId, 'control of the session was lost');
        });
        // After a daemon restart the client reclaims the lease with a new token: keep the newest.
        client.on('leaseReclaimed', ({ lease }) => this.rememberLease(lease));
        client.on('disconnected', (e) => {
          const reason = e.daemonShuttingDown ? `the daemon is stopping${e.shutdownReason ? ` (${e.shutdownReason})` : ''}` : 'the connection to the daemon dropped';
          this.daemonDown({ reason, daemonShuttingDown: e.daemonShuttingDown });
        });
        // A deliberate stop: nothing starts a daemon by itself; the tab goes on once someone does.
        client.on('stopped', () => {
          this.daemonDown({ reason: 'the daemon was stopped (astra daemon stop); the page goes on once it runs again (astra daemon start)', daemonShuttingDown: true });
          this.watchForDaemon(client);
        });
        // A full disk (session/notice) goes to the stream of that session, which says it to the page.
        client.on('notice', (n) => {
          this.streams.get(n.sessionId)?.sessionNotice(n);
          this.onNotice?.(n);
        });
        client.on('reconnected', (e) => {
          this.stopWatching();
          for (const s of this.streams.values()) s.daemonReconnected(e.daemonRestarted, e.attempts);
        });
        if (!this.readOnly) await this.reclaimLeases(client);
        if (this.closed) {
          await client.close();
          throw new AstraError('connection_closed', 'this tab was closed by the gateway; reload the page');
        }
        this.client = client;
        return client;
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  /**
   * Control this tab held before the gateway restarted, reclaimed with the kept resume tokens before
   * the tab's first request is answered (so that request already sees the tab as controller). A
   * token the daemon refuses (the grace ran out, someone took over) is forgotten.
   */
  private async reclaimLeases(client: AstraClient): Promise<void> {
    for (const [sessionId, resumeToken] of this.leaseStore.tokens(this.key)) {
      try {
        this.rememberLease(await client.acquireController(sessionId, { resumeToken }));
      } catch {
        this.leaseStore.forget(this.key, sessionId);
      }
    }
  }

  /** Keeps a granted lease's resume token for a restarted gateway (lease-store.ts). */
  rememberLease(lease: ControllerLease): void {
    this.leaseStore.remember(this.key, lease.sessionId, lease.resumeToken);
  }

  /** Releases control of every session this tab holds (the page is going away); the ids released. */
  async releaseAll(): Promise<string[]> {
    const held = [...(this.client?.heldLeases.keys() ?? [])];
    const released: string[] = [];
    for (const sessionId of held) {
      try {
        if (await this.releaseLease(sessionId)) released.push(sessionId);
      } catch {
        // the daemon is away: closing the tab's connection below starts the lease's grace instead
      }
    }
    return released;
  }

  /** Releases control of a session (if held) and forgets its token. */
  async releaseLease(sessionId: string): Promise<boolean> {
    const lease = this.client?.heldLeases.get(sessionId);
    if (lease) await lease.release();
    this.leaseStore.forget(this.key, sessionId);
    return lease !== undefined;
  }

  private daemonDown(down: DaemonDown): void {
    this.lastDrop = down;
    for (const s of this.streams.values()) s.daemonDisconnected(down.reason, down.daemonShuttingDown);
  }

  /** Why the daemon connection is down, or undefined while it is up (or not made yet). */
  get down(): DaemonDown | undefined {
    const state = this.client?.state;
    return state === 'reconnecting' || state === 'stopped' ? this.lastDrop : undefined;
  }

  private watchForDaemon(client: AstraClient): void {
    this.stopWatching();
    const recordPath = resolvePaths(this.env).recordPath;
    this.stoppedPoll = setInterval(() => {
      if (client.state !== 'stopped') return this.stopWatching();
      let record;
      try {
        record = readRecord(recordPath);
      } catch {
        return; // half-written by a starting daemon: look again next time
      }
      if (!record || !isProcessAlive(record.pid)) return;
      this.stopWatching();
      // Connects to the daemon that runs now (resume() would start one only if it went again).
      client.resume().catch(() => undefined);
    }, STOPPED_POLL_MS);
    this.stoppedPoll.unref();
  }

  private stopWatching(): void {
    if (this.stoppedPoll) clearInterval(this.stoppedPoll);
    this.stoppedPoll = undefined;
  }

  /** The client if connected, without connecting. */
  get connected(): AstraClient | undefined {
    return this.client;
  }

  /**
   * The daemon's approval/request for a session this tab controls. The page answers with
   * approval/answer (decide), so the prompt is only held for the daemon's sake: it is completed
   * once answered, handed back when control is lost, and dropped after its expiry.
   */
  private prompt(request: ApprovalRequest): Promise<Decision> {
    this.noteApproval(request.approvalId, request.sessionId);
    return new Promise<Decision>((resolve, reject) => {
      const p: PendingPrompt = { request, resolve, reject };
      if (request.expiresAt !== undefined) {
        p.timer = setTimeout(() => this.handBack(request.approvalId, new AstraError('approval_expired', 'the approval expired unanswered')), Math.max(0, request.expiresAt - Date.now()) + PROMPT_EXPIRY_SLACK_MS);
        p.timer.unref();
      }
      this.prompts.set(request.approvalId, p);
      if (this.prompts.size > MAX_PROMPTS) this.handBack(this.prompts.keys().next().value!, new AstraError('not_found', 'too many prompts held by one tab'));
    });
  }

  private handBack(approvalId: string, e: AstraError): void {
    const p = this.prompts.get(approvalId);
    if (!p) return;
    this.prompts.delete(approvalId);
    if (p.timer) clearTimeout(p.timer);
    p.reject(e);
  }

  /** Remembers which session an approval belongs to (an answer may name no sessionId). */
  noteApproval(approvalId: string, sessionId: string): void {
    this.approvalSessions.set(approvalId, sessionId);
    if (this.approvalSessions.size > REMEMBERED_APPROVALS) this.approvalSessions.delete(this.approvalSessions.keys().next().value!);
  }

  /** Prompts of a session this tab no longer controls go back to the daemon, which offers them to the next controller. */
  private dropPrompts(sessionId: string, why: string): void {
    for (const [id, p] of this.prompts) if (p.request.sessionId === sessionId) this.handBack(id, new AstraError('not_controller', why));
  }

  /**
   * The page's answer to an approval, through the daemon's approval/answer as the session's
   * controller: a stale revision or an expired approval is the daemon's approval_expired, an
   * approval no longer pending its not_found, a tab without control not_controller. The same
   * idempotencyKey gives the first answer's result (or error) again.
   */
  async decide(approvalId: string, decision: Decision, revision: number, idempotencyKey: string, sessionId?: string, optionId?: string): Promise<DecisionResult> {
    if (this.readOnly) throw new HttpError(403, 'not_controller', 'this is a read-only (observer) link: it cannot answer approvals');
    const earlier = this.decisions.get(idempotencyKey);
    if (earlier) {
      if (earlier.approvalId !== approvalId || earlier.decision !== decision || earlier.revision !== revision || earlier.optionId !== optionId)
        throw new AstraError('idempotency_conflict', 'this idempotencyKey was used for another decision; use a fresh key');
      if (earlier.result) return earlier.result;
      throw earlier.error;
    }
    const session = sessionId ?? this.prompts.get(approvalId)?.request.sessionId ?? this.approvalSessions.get(approvalId);
    if (session === undefined)
      throw new AstraError('not_found', `this tab has not seen approval ${approvalId}; name its session ("sessionId" in the body)`, { approvalId });
    const client = await this.daemon();
    const entry: RememberedDecision = { approvalId, decision, revision, ...(optionId !== undefined ? { optionId } : {}) };
    try {
      await client.approval.answer({ sessionId: session, approvalId, revision, decision, ...(optionId !== undefined ? { optionId } : {}) });
      entry.result = { approvalId, sessionId: session, decision, revision, ...(optionId !== undefined ? { optionId } : {}) };
    } catch (e) {
      // Errors that say nothing about the answer itself are not remembered: the same key may be sent again.
      if (!isAstraError(e) || !['approval_expired', 'not_found', 'not_controller', 'stale_epoch', 'invalid_params'].includes(e.reason)) throw e;
      entry.error = e;
    }
    this.decisions.set(idempotencyKey, entry);
    if (this.decisions.size > REMEMBERED_DECISIONS) this.decisions.delete(this.decisions.keys().next().value!);
    if (entry.error) throw entry.error;
    // The daemon's prompt to this tab is answered too; the daemon finds the approval resolved and lets it be.
    const p = this.prompts.get(approvalId);
    if (p) {
      this.prompts.delete(approvalId);
      if (p.timer) clearTimeout(p.timer);
      p.resolve(decision);
    }
    return entry.result!;
  }

  /** Closes the tab's streams and its daemon client; leases are not released, so they enter their grace period. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopWatching();
    for (const s of [...this.streams.values()]) s.stop();
    for (const id of [...this.prompts.keys()]) this.handBack(id, new AstraError('connection_closed', 'the tab closed'));
    const client = this.client ?? (this.connecting ? await this.connecting.catch(() => undefined) : undefined);
    this.client = undefined;
    if (client) await client.close().catch(() => undefined);
  }
}

/**
 * The connection the gateway's shared feeds (session-feed.ts) subscribe on: a read-only client of
 * the gateway's own, named "astra web feed", which holds no lease and is offered no approvals.
 */
export function feedLink(env: NodeJS.ProcessEnv, clientVersion: string, leaseStore: LeaseStore): Tab {
  return new Tab('gateway:feed', 'feed', { id: 'gateway', readOnly: true }, env, clientVersion, 0, leaseStore, undefined, 'astra web feed');
}
