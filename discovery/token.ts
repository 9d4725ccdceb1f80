// Tokens and instance ids. The token is the only secret between client and daemon: never log it.

import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

/** Bytes of randomness in a token: 256 bits. */
export const TOKEN_BYTES = 32;
/** Length of a TOKEN_BYTES token in base64url (no padding). */
export const MIN_TOKEN_CHARS = 43;

export function newToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

/** Constant time in the tokens' content: both sides are hashed to equal-length digests first. */
export function tokensEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/** A one-way hash of a token, for storing a resume token's fingerprint instead of the token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

export function newInstanceId(): string {
  return randomUUID();
}
