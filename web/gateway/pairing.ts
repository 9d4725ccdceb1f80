// Pairing (docs/http.md §Pairing): a link carries a single-use, short-lived code; the page trades
// it for a cookie token. Only SHA-256 digests of tokens are kept — in memory and in web-auth.json
// (0600, the runtime directory), so a restarted gateway still knows its paired browsers. Neither a
// code nor a token is ever logged.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { newToken } from '../../discovery/index.js';
import { writeFileAtomic } from '../../durable/index.js';

export const DEFAULT_CODE_TTL_MS = 5 * 60_000;
/** Paired browsers remembered at most; the oldest is forgotten first. */
const MAX_PAIRED = 64;

export interface Grant {
  /** A short, non-secret name for this paired browser (a digest prefix), used in client names. */
  id: string;
  readOnly: boolean;
}

interface StoredGrant {
  digest: string;
  readOnly: boolean;
  createdAt: number;
}

function digest(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}

function randomSecret(bytes: number): string {
  return crypto.randomBytes(bytes).toString('base64url');
}

export class Pairing {
  private readonly codes = new Map<string, { readOnly: boolean; expiresAt: number }>();
  private grants: StoredGrant[] = [];

  constructor(
    private readonly file: string,
    private readonly codeTtlMs = DEFAULT_CODE_TTL_MS,
  ) {
    try {
      const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { grants?: StoredGrant[] };
      if (Array.isArray(parsed.grants))
        this.grants = parsed.grants.filter((g) => typeof g?.digest === 'string' && typeof g.readOnly === 'boolean' && typeof g.createdAt === 'number');
    } catch {
      // none yet, or unreadable: pair again
    }
  }

  /** A fresh single-use code; `readOnly` makes the browser that uses it an observer. */
  newCode(readOnly: boolean): string {
    const now = Date.now();
    for (const [d, c] of this.codes) if (c.expiresAt <= now) this.codes.delete(d);
    const code = randomSecret(18);
    this.codes.set(digest(code), { readOnly, expiresAt: now + this.codeTtlMs });
    return code;
  }

  /** Trades a code for a cookie token, once; undefined when the code is unknown, used or expired. */
  redeem(code: string): { token: string; grant: Grant } | undefined {
    const d = digest(code);
    const entry = this.codes.get(d);
    if (!entry) return undefined;
    this.codes.delete(d);
    if (entry.expiresAt <= Date.now()) return undefined;
    const token = newToken();
    const stored = { digest: digest(token), readOnly: entry.readOnly, createdAt: Date.now() };
    this.grants.push(stored);
    if (this.grants.length > MAX_PAIRED) this.grants.splice(0, this.grants.length - MAX_PAIRED);
    this.save();
    return { token, grant: { id: stored.digest.slice(0, 8), readOnly: stored.readOnly } };
  }

  /** Who a cookie token belongs to, or undefined. */
  check(token: string | undefined): Grant | undefined {
    if (!token || token.length > 256) return undefined;
    const d = digest(token);
    const g = this.grants.find((x) => crypto.timingSafeEqual(Buffer.from(x.digest), Buffer.from(d)));
    return g ? { id: g.digest.slice(0, 8), readOnly: g.readOnly } : undefined;
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify({ grants: this.grants }), { mode: 0o600 });
  }
}
