// web-leases.json in the runtime directory (0600): each tab's lease resume tokens, so that a
// restarted gateway reclaims a tab's control within the daemon's grace period instead of waiting it
// out (docs/http.md §Tabs). The tokens stay on the gateway's side: the page never sees them, it only
// names its tab (sessionStorage) and sends its HttpOnly cookie, whose grant id is part of the key.
// This module owns the file; Tab calls it whenever one of its leases is granted, reclaimed or lost.
import fs from 'node:fs';
import { writeFileAtomic } from '../../durable/index.js';

/** Tabs remembered in all; the least recently changed are forgotten first (their leases just wait out their grace). */
const MAX_TABS = 256;

type Tokens = Record<string, string>;

export class LeaseStore {
  private tabs = new Map<string, Tokens>();

  constructor(private readonly file: string) {
    try {
      const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { tabs?: Record<string, Tokens> };
      for (const [key, tokens] of Object.entries(parsed.tabs ?? {})) {
        if (!tokens || typeof tokens !== 'object') continue;
        const clean: Tokens = {};
        for (const [sessionId, token] of Object.entries(tokens)) if (typeof token === 'string') clean[sessionId] = token;
        if (Object.keys(clean).length > 0) this.tabs.set(key, clean);
      }
    } catch {
      // no gateway has kept leases here, or the file is unreadable: nothing to reclaim
    }
  }

  /** The resume tokens a tab held when the gateway last saw it, by session id. */
  tokens(tabKey: string): Array<[sessionId: string, resumeToken: string]> {
    return Object.entries(this.tabs.get(tabKey) ?? {});
  }

  remember(tabKey: string, sessionId: string, resumeToken: string): void {
    const tokens = this.tabs.get(tabKey) ?? {};
    if (tokens[sessionId] === resumeToken) return;
    tokens[sessionId] = resumeToken;
    this.tabs.delete(tabKey);
    this.tabs.set(tabKey, tokens);
    while (this.tabs.size > MAX_TABS) this.tabs.delete(this.tabs.keys().next().value!);
    this.save();
  }

  forget(tabKey: string, sessionId: string): void {
    const tokens = this.tabs.get(tabKey);
    if (!tokens || !(sessionId in tokens)) return;
    delete tokens[sessionId];
    if (Object.keys(tokens).length === 0) this.tabs.delete(tabKey);
    this.save();
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify({ tabs: Object.fromEntries(this.tabs) }), { mode: 0o600 });
  }
}
