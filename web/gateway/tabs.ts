// One browser tab = one client of the daemon (docs/http.md §Tabs): its own AstraClient connection,
// hence its own client identity, lease and resume token, exactly like a terminal. This module owns
// the tabs, their pending approval prompts, and the tab limits.
import { AstraClient, type ApprovalRequest, type ControllerLease } from '../../client/index.js';
import { AstraError, type Decision } from '../../protocol/index.js';
import { HttpError } from './errors.js';
import type { LeaseStore } from './lease-store.js';
import type { Grant } from './pairing.js';
import type { EventStream } from './sse.js';

export const TAB_ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface TabLimits {
  /** Tabs for one paired browser. */
  tabsPerBrowser: number;
  /** Tabs in all. */
  tabs: number;
  /** Open event streams of one tab. */
  streamsPerTab: number;
  /** A tab with no open stream and no request for this long is closed (its leases enter their grace). */
  idleMs: number;
}

export const DEFAULT_TAB_LIMITS: TabLimits = { tabsPerBrowser: 16, tabs: 64, streamsPerTab: 8, idleMs: 120_000 };

/** How long a decision waits for the daemon's prompt, which may arrive just after the journaled event. */
const PROMPT_ARRIVAL_MS = 3_000;
const REMEMBERED_DECISIONS = 256;

export interface DecisionResult {
  approvalId: string;
  decision: Decision;
  outcome: 'accepted' | 'expired';
}

interface PendingPrompt {
  request: ApprovalRequest;
  resolve: (d: Decision) => void;
  reject: (e: Error) => void;
}

export class Tab {
  readonly streams = new Map<string, EventStream>();
  lastUsed = Date.now();
  private client: AstraClient | undefined;
  private connecting: Promise<AstraClient> | undefined;
  private readonly prompts = new Map<string, PendingPrompt>();
  private readonly promptWaiters = new Map<string, Array<() => void>>();
  private readonly decisions = new Map<string, DecisionResult>();
  private closed = false;

  constructor(
    readonly key: string,
    readonly tabId: string,
    readonly grant: Grant,
    private readonly env: NodeJS.ProcessEnv,
    private readonly clientVersion: string,
    readonly limitStreams: number,
    private readonly leaseStore: LeaseStore,
  ) {}

  get readOnly(): boolean {
    return this.grant.readOnly;
  }

  get clientName(): string {
    return `astra web ${this.readOnly ? 'observer' : 'tab'} ${this.grant.id}/${this.tabId.slice(0, 8)}`;
  }

  /** The tab's daemon client, connected on first use (the daemon is started when none runs). */
  async daemon(): Promise<AstraClient> {
    if (this.closed) throw new AstraError('connection_closed', 'this tab was closed by the gateway; reload the page');
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
          for (const s of this.streams.values()) s.daemonDisconnected(reason, e.daemonShuttingDown);
        });
        client.on('reconnected', (e) => {
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

  /** Releases control of a session (if held) and forgets its token. */
  async releaseLease(sessionId: string): Promise<boolean> {
    const lease = this.client?.heldLeases.get(sessionId);
    if (lease) await lease.release();
    this.leaseStore.forget(this.key, sessionId);
    return lease !== undefined;
  }

  /** The client if connected, without connecting. */
  get connected(): AstraClient | undefined {
    return this.client;
  }

  private prompt(request: ApprovalRequest): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      this.prompts.set(request.approvalId, { request, resolve, reject });
      for (const w of this.promptWaiters.get(request.approvalId) ?? []) w();
      this.promptWaiters.delete(request.approvalId);
    });
  }

  /** Prompts of a session this tab no longer controls go back to the daemon, which offers them to the next controller. */
  private dropPrompts(sessionId: string, why: string): void {
    for (const [id, p] of this.prompts) {
      if (p.request.sessionId !== sessionId) continue;
      this.prompts.delete(id);
      p.reject(new AstraError('not_controller', why));
    }
  }

  /**
   * The page's answer to an approval. The revision is the approval's identity (the wire protocol has
   * no revision of its own): an answer to any other revision, or to a prompt this tab does not hold
   * (resolved, or offered to another controller), is `expired`. The same idempotencyKey answers the
   * first result again.
   */
  async decide(approvalId: string, decision: Decision, revision: string, idempotencyKey: string): Promise<DecisionResult> {
    if (this.readOnly) throw new HttpError(403, 'not_controller', 'this is a read-only (observer) link: it cannot answer approvals');
    const earlier = this.decisions.get(idempotencyKey);
    if (earlier) {
      if (earlier.approvalId !== approvalId || earlier.decision !== decision)
        throw new AstraError('idempotency_conflict', 'this idempotencyKey was used for another decision; use a fresh key');
      return earlier;
    }
    let result: DecisionResult = { approvalId, decision, outcome: 'expired' };
    if (revision === approvalId) {
      if (!this.prompts.has(approvalId)) await this.waitForPrompt(approvalId, PROMPT_ARRIVAL_MS);
      const p = this.prompts.get(approvalId);
      if (p) {
        this.prompts.delete(approvalId);
        p.resolve(decision);
        result = { approvalId, decision, outcome: 'accepted' };
      }
    }
    this.decisions.set(idempotencyKey, result);
    if (this.decisions.size > REMEMBERED_DECISIONS) this.decisions.delete(this.decisions.keys().next().value!);
    return result;
  }

  private waitForPrompt(approvalId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      const list = this.promptWaiters.get(approvalId) ?? [];
      list.push(done);
      this.promptWaiters.set(approvalId, list);
    });
  }

  /** Closes the tab's streams and its daemon client; leases are not released, so they enter their grace period. */
  async close(): Promise<void> {
    this.closed = true;
    for (const s of [...this.streams.values()]) s.stop();
    for (const p of this.prompts.values()) p.reject(new AstraError('connection_closed', 'the tab closed'));
    this.prompts.clear();
    const client = this.client ?? (this.connecting ? await this.connecting.catch(() => undefined) : undefined);
    this.client = undefined;
    if (client) await client.close().catch(() => undefined);
  }
}

export class Tabs {
  private readonly tabs = new Map<string, Tab>();
  private readonly reaper: NodeJS.Timeout;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly clientVersion: string,
    readonly limits: TabLimits,
    private readonly leaseStore: LeaseStore,
  ) {
    this.reaper = setInterval(() => this.reap(), Math.max(1_000, Math.min(30_000, limits.idleMs / 2)));
    this.reaper.unref();
  }

  /** The tab for this browser and tab id, created on first use. */
  get(grant: Grant, tabId: string): Tab {
    const key = `${grant.id}:${tabId}`;
    let tab = this.tabs.get(key);
    if (!tab) {
      const mine = [...this.tabs.values()].filter((t) => t.grant.id === grant.id).length;
      if (mine >= this.limits.tabsPerBrowser || this.tabs.size >= this.limits.tabs)
        throw new AstraError('overloaded', `too many tabs are open (at most ${this.limits.tabsPerBrowser} per browser, ${this.limits.tabs} in all); close one and retry`);
      tab = new Tab(key, tabId, grant, this.env, this.clientVersion, this.limits.streamsPerTab, this.leaseStore);
      this.tabs.set(key, tab);
    }
    tab.lastUsed = Date.now();
    return tab;
  }

  get size(): number {
    return this.tabs.size;
  }

  private reap(): void {
    const now = Date.now();
    for (const [key, tab] of this.tabs) {
      if (tab.streams.size === 0 && now - tab.lastUsed > this.limits.idleMs) {
        this.tabs.delete(key);
        void tab.close();
      }
    }
  }

  async closeAll(): Promise<void> {
    clearInterval(this.reaper);
    const all = [...this.tabs.values()];
    this.tabs.clear();
    await Promise.all(all.map((t) => t.close()));
  }
}
