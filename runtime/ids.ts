// Ids of sessions, turns and approvals.
import * as crypto from 'node:crypto';

export function newId(prefix: string): string {
  // Time first so ids sort roughly by creation; random tail so they never collide.
  return `${prefix}_${Date.now().toString(36)}${crypto.randomBytes(6).toString('hex')}`;
}
