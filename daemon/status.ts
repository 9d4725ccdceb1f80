// daemon/status: what the daemon is doing — its identity, its connections, and the sessions that are
// loaded or controlled (a controlled session closed as idle still shows, with its lease).
import { PROTOCOL_VERSION, type DaemonStatus } from '../protocol/index.js';
import { ASTRA_VERSION, type AstraPaths } from '../discovery/index.js';
import type { Runtime } from '../runtime/index.js';
import type { LeaseHost } from './lease-host.js';
import type { Peer } from './peer.js';
import type { SubscriptionHub } from './subscriptions.js';

export interface StatusSources {
  instanceId: string;
  startedAt: number;
  endpoint: string;
  paths: AstraPaths;
  idleTimeoutMs: number;
  now: () => number;
  runtime: Runtime;
  leaseHost: LeaseHost;
  hub: SubscriptionHub;
  peers: ReadonlyMap<string, Peer>;
  /** Log lines the daemon could not write (a full disk); 0 when none. */
  logLinesDropped(): number;
}

/** Every session the runtime knows of, archived ones included (the loaded ones are a subset). */
async function countSessionsOnDisk(runtime: Runtime): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await runtime.listSessions({ cursor, limit: 1000, includeArchived: true });
    count += page.sessions.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return count;
}

export async function buildStatus(src: StatusSources): Promise<DaemonStatus> {
  const { runtime, leaseHost, hub, peers } = src;
  const sessionIds = new Set<string>([...runtime.loadedSessionIds(), ...leaseHost.heldSessionIds()]);
  const sessions: DaemonStatus['sessions'] = [];
  for (const id of sessionIds) {
    const peeked = runtime.peekSession(id);
    if (!peeked) continue;
    const s = leaseHost.withController(peeked);
    const subscribers = hub.subscriberCount(id);
    const controllerPeer = s.controller ? peers.get(s.controller.connectionId) : undefined;
    const controllerSubscribed = controllerPeer !== undefined && hub.sessionsOf(controllerPeer).includes(id);
    sessions.push({
      id: s.id,
      title: s.title,
      state: s.state,
      headSeq: s.headSeq,
      epoch: s.epoch,
      controller: s.controller ? { ...s.controller } : null,
      observers: subscribers - (controllerSubscribed ? 1 : 0),
      runningTurnId: s.runningTurnId ?? null,
      pendingApprovals: runtime.pendingApprovals(id).length,
    });
  }
  const now = src.now();
  const connections = [...peers.values()]
    .filter((p) => p.authenticated)
    .map((p) => {
      const c: DaemonStatus['connections'][number] = {
        id: p.id,
        clientName: p.clientName,
        clientVersion: p.info?.version ?? '',
        connectedAt: p.connectedAt,
        queuedBytes: p.conn.queuedBytes,
        subscriptions: hub.sessionsOf(p),
      };
      if (p.info?.pid !== undefined) c.pid = p.info.pid;
      return c;
    });
  return {
    running: true,
    instanceId: src.instanceId,
    pid: process.pid,
    version: ASTRA_VERSION,
    protocolVersion: PROTOCOL_VERSION,
    startedAt: src.startedAt,
    uptimeMs: Math.max(0, now - src.startedAt),
    endpoint: src.endpoint,
    logFile: src.paths.logFile,
    dataDir: src.paths.dataDir,
    idleTimeoutMs: src.idleTimeoutMs,
    connections,
    sessions,
    sessionsOnDisk: await countSessionsOnDisk(runtime),
    logLinesDropped: src.logLinesDropped(),
  };
}
