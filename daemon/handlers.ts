// The method handlers, one per entry of the protocol's method table (router.ts checks params and
// policy before any of these runs). They translate the wire's params into runtime, lease and
// subscription calls and add each session's controller to what goes out.
import type { DaemonStatus } from '../protocol/index.js';
import type { Runtime } from '../runtime/index.js';
import type { LeaseHost } from './lease-host.js';
import type { Peer } from './peer.js';
import type { Capabilities } from './capabilities.js';
import { withoutExperimentalFields } from './event-bodies.js';
import type { Handlers } from './router.js';
import type { SubscriptionHub } from './subscriptions.js';
import type { TurnOwners } from './turn-owners.js';

export interface HandlerDeps {
  runtime: Runtime;
  leaseHost: LeaseHost;
  hub: SubscriptionHub;
  turnOwners: TurnOwners;
  now: () => number;
  status(): Promise<DaemonStatus>;
  /** What this connection can use, each engine's availability checked now (capabilities.ts). */
  capabilities(peer: Peer): Promise<Capabilities>;
  /**
   * Begins a stop once the answer has gone out; returns how many other clients are attached (they
   * are told why with daemon/shuttingDown).
   */
  requestStop(restart: boolean, message: string, caller: Peer): number;
}

export function createHandlers(d: HandlerDeps): Handlers {
  const rt = d.runtime;
  const shown = d.leaseHost.withController.bind(d.leaseHost);
  return {
    ping: () => ({ now: d.now() }),
    'daemon/status': () => d.status(),
    'daemon/capabilities': (_p, peer) => d.capabilities(peer),
    'daemon/shutdown': (p, peer) => ({
      connections: d.requestStop(p.restart === true, p.reason ?? 'requested by a client', peer),
    }),
    'session/create': async (p) => ({ session: shown(await rt.createSession(p)) }),
    'session/list': async (p) => {
      const page = await rt.listSessions(p);
      return { ...page, sessions: page.sessions.map(shown) };
    },
    'session/read': async (p, peer) => {
      const r = await rt.readSession(p.sessionId, p);
      return { ...r, session: shown(r.session), events: peer.experimentalApi ? r.events : withoutExperimentalFields(r.events) };
    },
    'session/subscribe': (p, peer) => {
      const opts: { screen?: boolean; historyLines?: number } = {};
      if (p.screen === true) opts.screen = true;
      if (p.historyLines !== undefined && p.historyLines !== null) opts.historyLines = p.historyLines;
      return d.hub.subscribe(peer, p.sessionId, p.sinceSeq ?? 0, opts, p.textFromDeltas === true ? { textFromDeltas: true } : {});
    },
    'session/unsubscribe': (p, peer) => {
      d.hub.unsubscribe(peer, p.sessionId);
      return {};
    },
    'session/rename': async (p) => ({ session: shown(await rt.renameSession(p.sessionId, p.title)) }),
    'session/archive': async (p) => {
      const session = shown(await rt.archiveSession(p.sessionId));
      d.hub.close(p.sessionId, 'archived');
      return { session };
    },
    'session/unarchive': async (p) => ({ session: shown(await rt.unarchiveSession(p.sessionId)) }),
    'approval/answer': async (p, peer) => {
      await rt.resolveApproval(p.sessionId, p.approvalId, p.decision, { clientName: peer.clientName, connectionId: peer.id }, p.revision ?? undefined, p.optionId ?? undefined);
      return {};
    },
    'session/delete': async (p) => {
      await rt.deleteSession(p.sessionId);
      d.hub.close(p.sessionId, 'deleted');
      return { sessionId: p.sessionId };
    },
    'lease/acquire': (p, peer) => d.leaseHost.acquire(peer, p.sessionId, p),
    'lease/release': async (p, peer) => {
      await d.leaseHost.release(peer, p.sessionId, p.epoch);
      return {};
    },
    // The idle timer checks for running turns when it fires, so starting one needs no cancel here.
    'turn/start': async (p, peer, trace) => {
      const started = await rt.startTurn(p.sessionId, p.input, p.idempotencyKey, p.terminal, trace);
      if (p.cancelOnDisconnect === true) d.turnOwners.own(peer.id, p.sessionId, started.turnId);
      return started;
    },
    'turn/cancel': (p) => rt.cancelTurn(p.sessionId, p.turnId),
    'command/input': (p) => rt.commandInput(p.sessionId, p.turnId, p.data),
    'command/resize': (p) => rt.commandResize(p.sessionId, p.turnId, p.cols, p.rows),
    'mutation/status': (p) => rt.mutationStatus(p.sessionId, p.idempotencyKey),
  };
}
