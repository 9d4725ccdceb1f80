// Shared by the user commands: connecting, finding a session by id, prefix or title, naming lease holders.
import { AstraError, isAstraError, type Session } from '../protocol/index.js';
import { AstraClient, type AstraClientOptions, type ControllerLease } from '../client/index.js';
import { CLI_VERSION, cleanText } from './output.js';
import { fitWidth } from './view/width.js';

export async function connectClient(env: NodeJS.ProcessEnv, clientName: string, extra: Partial<AstraClientOptions> = {}): Promise<AstraClient> {
  // A daemon that accepts but does not answer (SIGSTOPped, stuck) is named after a second, once;
  // the connect then fails naming its pid and the fix.
  let said = false;
  const onWaiting = ({ pid }: { pid: number }) => {
    if (said) return;
    said = true;
    process.stderr.write(`astra: waiting for the daemon (pid ${pid}) to answer…\n`);
  };
  // No daemon answers and `astra daemon restart` is starting one: say why this waits (up to 30 s).
  // Only before the first connect: a reconnect under attach's screen says nothing.
  let connected = false;
  const onRestartWait = ({ pid }: { pid: number }) => {
    if (!connected) process.stderr.write(`astra: \`astra daemon restart\` (pid ${pid}) is starting the daemon; waiting for it…\n`);
  };
  const client = await AstraClient.connect({ clientName, clientVersion: CLI_VERSION, env, onWaiting, onRestartWait, ...extra });
  connected = true;
  return client;
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

/** Runs `fn` with a connected client, closed (leases released) afterwards. */
export async function withClient<T>(env: NodeJS.ProcessEnv, name: string, fn: (c: AstraClient) => Promise<T>): Promise<T> {
  const client = await connectClient(env, name);
  try {
    return await fn(client);
  } finally {
    await client.close({ releaseLeases: true });
  }
}

/** Becomes the controller, or fails with the holder's name and the fix. */
export async function acquireOrExplain(client: AstraClient, sessionId: string): Promise<ControllerLease> {
  try {
    return await client.acquireController(sessionId);
  } catch (e) {
    if (isAstraError(e, 'lease_held')) throw new AstraError('lease_held', leaseHeldMessage(sessionId, e), e.data);
    throw e;
  }
}

/** How a session is named in lists and messages: its id and, when it has one, its cleaned title. */
export function sessionLabel(s: Pick<Session, 'id' | 'title'>): string {
  const title = cleanText(s.title);
  return title ? `${s.id} "${fitWidth(title, 40)}"` : s.id;
}

/**
 * The session `wanted` names: its id; or the one session whose id starts with it (with or without
 * `ses_`: ids made together share their leading characters, so users type the distinctive part); or
 * the one whose title is exactly it. Reads the snapshot, so a typo fails here with a clear
 * `not_found` rather than deep inside a command; several matches list the candidates.
 */
export async function resolveSession(client: AstraClient, idOrPrefix: string): Promise<Session> {
  const wanted = idOrPrefix.trim();
  if (wanted.length === 0) throw new AstraError('invalid_params', 'a session id is required; `astra sessions` lists them');
  try {
    return (await client.session.read({ sessionId: wanted, limit: 1 })).session;
  } catch (e) {
    if (!isAstraError(e, 'not_found') && !isAstraError(e, 'invalid_params')) throw e;
  }
  const all = await listAllSessions(client, true);
  const byId = all.filter((s) => s.id.startsWith(wanted) || s.id.startsWith(`ses_${wanted}`));
  const byTitle = all.filter((s) => s.title === wanted && !byId.includes(s));
  // A title that names one live session wins over archived namesakes.
  const liveTitle = byTitle.filter((s) => s.state !== 'archived');
  const matches = [...byId, ...(byId.length === 0 && liveTitle.length === 1 ? liveTitle : byTitle)];
  if (matches.length === 1) return (await client.session.read({ sessionId: matches[0]!.id, limit: 1 })).session;
  if (matches.length === 0)
    throw new AstraError('not_found', `no session has the id, id prefix or title "${cleanText(wanted)}"; \`astra sessions --all\` lists them, \`astra new\` creates one`, { sessionId: wanted });
  const shown = matches.slice(0, 5).map((s) => `  ${sessionLabel(s)}`).join('\n');
  throw new AstraError(
    'invalid_params',
    `"${cleanText(wanted)}" matches ${matches.length} sessions; give more of the id:\n${shown}${matches.length > 5 ? `\n  … and ${matches.length - 5} more (\`astra sessions --all\`)` : ''}`,
    { sessionId: wanted },
  );
}

/** The session active most recently (not archived), for `astra attach` without an id. */
export async function mostRecentSession(client: AstraClient): Promise<Session> {
  const live = await listAllSessions(client, false);
  if (live.length === 0) throw new AstraError('not_found', 'there are no sessions yet; create one with `astra new`');
  const newest = live.reduce((a, b) => (b.updatedAt > a.updatedAt ? b : a));
  return (await client.session.read({ sessionId: newest.id, limit: 1 })).session;
}

export interface HolderLike {
  clientName: string;
  pid?: number | undefined;
  connectionId?: string | undefined;
}

export function describeHolder(h: HolderLike | null | undefined): string {
  if (!h) return 'nobody';
  return `${cleanText(h.clientName)}${h.pid !== undefined ? ` (pid ${h.pid})` : ''}`;
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
