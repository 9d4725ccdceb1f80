// The gateway's tabs (docs/http.md §Tabs): one Tab per browser and tab id, created on first use,
// bounded, and closed when the page is gone — released at once (POST /v1/tab/release), shortly after
// its last event stream ended, or after idleMs without a stream or a request.
import { AstraError } from '../../protocol/index.js';
import type { LeaseStore } from './lease-store.js';
import type { Grant } from './pairing.js';
import { Tab } from './tabs.js';

export interface TabLimits {
  /** Tabs for one paired browser. */
  tabsPerBrowser: number;
  /** Tabs in all. */
  tabs: number;
  /** Open event streams of one tab. */
  streamsPerTab: number;
  /** A tab with no open stream and no request for this long is closed (its leases enter their grace). */
  idleMs: number;
  /**
   * A tab whose last event stream ended (the page went away, or moved to another session) is closed
   * once this long passes without a new stream or a request: its leases enter their grace then, not
   * after idleMs. A page that comes back within the grace reclaims them (lease-store.ts).
   */
  streamsGoneMs: number;
}

export const DEFAULT_TAB_LIMITS: TabLimits = { tabsPerBrowser: 16, tabs: 64, streamsPerTab: 8, idleMs: 120_000, streamsGoneMs: 5_000 };

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
      const created: Tab = new Tab(key, tabId, grant, this.env, this.clientVersion, this.limits.streamsPerTab, this.leaseStore, () => this.whenStreamsGone(created));
      tab = created;
      this.tabs.set(key, tab);
    }
    tab.lastUsed = Date.now();
    return tab;
  }

  get size(): number {
    return this.tabs.size;
  }

  /** The tab's last stream ended: it is closed once streamsGoneMs passes without a stream or a request. */
  private whenStreamsGone(tab: Tab): void {
    const check = (): void => {
      if (this.tabs.get(tab.key) !== tab || tab.streams.size > 0) return;
      const quiet = Date.now() - tab.lastUsed;
      if (quiet < this.limits.streamsGoneMs) {
        setTimeout(check, this.limits.streamsGoneMs - quiet).unref();
        return;
      }
      this.tabs.delete(tab.key);
      void tab.close();
    };
    setTimeout(check, this.limits.streamsGoneMs).unref();
  }

  /** The page is going away (POST /v1/tab/release): its leases are released at once and the tab closed. */
  async release(tab: Tab): Promise<string[]> {
    if (this.tabs.get(tab.key) === tab) this.tabs.delete(tab.key);
    const released = tab.readOnly ? [] : await tab.releaseAll();
    await tab.close();
    return released;
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
