// Shared by the user commands: connecting, finding a session by id prefix, naming lease holders.
import { AstraError, isAstraError, type Session } from '../protocol/index.js';
import { AstraClient, type AstraClientOptions } from '../client/index.js';
import { CLI_VERSION } from './output.js';

export async function connectClient(env: NodeJS.ProcessEnv, clientName: string, extra: Partial<AstraClientOptions> = {}): Promise<AstraClient> {
  // A daemon that accepts but does not answer (SIGSTOPped, stuck) is named after a second, once;
  // the connect then fails naming its pid and the fix.
  let said = false;
  const onWaiting = ({ pid }: { pid: number }) => {
    if (said) return;
    said = true;
    process.stderr.write(`astra: waiting for the daemon (pid ${pid}) to answer…\n`);
  };
  return AstraClient.connect({ clientName, clientVersion: CLI_VERSION, env, onWaiting, ...extra });
}

/** Every session, newest first, following the pagination. */
export async function listAllSessions(client: AstraClient, includeArchived: boolean): Promise<Session[]> {
  const all: Session[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10_000; page++) {
    const r = await client.session.list({ limit: 1000, includeArchived, ...(cursor !== undefined ? { cursor } : {}) });
    all.push(...r.sessions);
    if (!r.nextCursor) break;
    cursor = r.nextCursor;
  }
  return all;
}

/**
 * The session whose id is `idOrPrefix`, or the one session whose id starts with it. Reads the
 * snapshot, so a typo fails here with a clear `not_found` rather than deep inside a command.
 */
export async function resolveSession(client: AstraClient, idOrPrefix: string): Promise<Session> {
  const wanted = idOrPrefix.trim();
  if (wanted.length === 0) throw new AstraError('invalid_params', 'a session id is required; `astra sessions` lists them');
  try {
    return (await client.session.read({ sessionId: wanted, limit: 1 })).session;
  } catch (e) {
    if (!isAstraError(e, 'not_found') && !isAstraError(e, 'invalid_params')) throw e;
  }
  const matches = (await listAllSessions(client, true)).filter((s) => s.id.startsWith(wanted));
  if (matches.length === 1) return (await client.session.read({ sessionId: matches[0]!.id, limit: 1 })).session;
  if (matches.length === 0)
    throw new AstraError('not_found', `no session matches "${wanted}"; \`astra sessions --all\` lists them, \`astra new\` creates one`, { sessionId: wanted });
  const shown = matches.slice(0, 5).map((s) => s.id).join(', ');
  throw new AstraError(
    'invalid_params',
    `"${wanted}" matches ${matches.length} sessions (${shown}${matches.length > 5 ? ', ...' : ''}); type more of the id`,
    { sessionId: wanted },
  );
}

export interface HolderLike {
  clientName: string;
  pid?: number | undefined;
  connectionId?: string | undefined;
}

export function describeHolder(h: HolderLike | null | undefined): string {
  if (!h) return 'nobody';
  return `${h.clientName}${h.pid !== undefined ? ` (pid ${h.pid})` : ''}`;
}

/** The holder named in a `lease_held` error, if the daemon sent one. */
export function holderOf(e: AstraError): HolderLike | undefined {
  const h = e.data.holder as { clientName?: unknown; pid?: unknown; connectionId?: unknown } | undefined;
  if (!h || typeof h.clientName !== 'string') return undefined;
  return {
    clientName: h.clientName,
    ...(typeof h.pid === 'number' ? { pid: h.pid } : {}),
    ...(typeof h.connectionId === 'string' ? { connectionId: h.connectionId } : {}),
  };
}

/** The one-line `lease_held` message the CLI prints, with the fix. */
export function leaseHeldMessage(sessionId: string, e: AstraError): string {
  const holder = holderOf(e);
  const grace = typeof e.data.graceUntil === 'number' ? ` (its connection dropped; reserved for it until ${new Date(e.data.graceUntil).toLocaleTimeString()})` : '';
  return `lease_held: session ${sessionId} is controlled by ${describeHolder(holder)}${grace}; run \`astra take ${sessionId}\` to take control, or \`astra attach ${sessionId}\` to watch`;
}

export function formatAgo(ts: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ago`;
  return `${Math.floor(h / 24)}d ago`;
}
