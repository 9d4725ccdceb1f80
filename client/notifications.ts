// What the daemon tells the client unasked: each notification is checked against the table, then
// handed to the room that owns what it is about (subscriptions, leases, the connection's lifecycle).
import {
  AstraError,
  SERVER_NOTIFICATIONS,
  checkNotificationParams,
  type ServerNotificationParams,
  type SessionEvent,
} from '../protocol/index.js';
import { toAstraError } from './results.js';
import type { LeaseBook } from './leases.js';
import type { Subscriptions } from './subscriptions.js';

export interface NotificationTargets {
  subs: Subscriptions;
  leases: LeaseBook;
  /** Whether the notification came on the client's current connection (not a dying old one). */
  readonly current: boolean;
  /** The event check: validateEvent, or validateEventEnvelope for a daemon trusted for shape (AstraClientOptions.validate). */
  validateEvent(value: unknown): SessionEvent;
  /** session/notice: what no event can carry (a full disk). */
  notice(n: ServerNotificationParams<'session/notice'>): void;
  /** approval/resolved: an approval this client was asked was settled another way. */
  approvalResolved(p: ServerNotificationParams<'approval/resolved'>): void;
  /** daemon/shuttingDown: why the daemon is going. */
  shuttingDown(reason: string, message: string | undefined): void;
  malformed(err: AstraError): void;
}

export function routeNotification(to: NotificationTargets, method: string, params: unknown): void {
  if (!Object.prototype.hasOwnProperty.call(SERVER_NOTIFICATIONS, method)) return; // from a newer daemon
  try {
    if (method === 'session/event') {
      to.subs.deliver(to.validateEvent(params));
      return;
    }
    if (method === 'session/events') {
      // Validate the whole batch first: a malformed frame delivers nothing, as for session/event.
      const p = params as { sessionId?: unknown; events?: unknown };
      if (typeof p?.sessionId !== 'string' || !Array.isArray(p.events))
        throw new AstraError('invalid_params', 'session/events needs {sessionId: string, events: [event, ...]}');
      const events = p.events as unknown[];
      for (let i = 0; i < events.length; i++) {
        const event = to.validateEvent(events[i]);
        if (event.sessionId !== p.sessionId) throw new AstraError('invalid_params', `events[${i}] belongs to session ${event.sessionId}, not ${p.sessionId}`);
      }
      const sub = to.subs.get(p.sessionId);
      if (sub) for (let i = 0; i < events.length; i++) sub.deliver(events[i] as SessionEvent);
      return;
    }
    checkNotificationParams(method, params, 'toClient');
  } catch (e) {
    to.malformed(new AstraError('invalid_request', `the daemon sent a malformed ${method}: ${toAstraError(e).message}`));
    return;
  }
  switch (method) {
    case 'session/replayed': {
      const p = params as ServerNotificationParams<'session/replayed'>;
      to.subs.get(p.sessionId)?.replayed(p.throughSeq, p.historyFromSeq ?? undefined);
      return;
    }
    case 'session/screen': {
      const p = params as ServerNotificationParams<'session/screen'>;
      to.subs.get(p.sessionId)?.screen(p);
      return;
    }
    case 'session/lagged': {
      // The daemon dropped this stream; pick it up again from what was really delivered.
      const p = params as ServerNotificationParams<'session/lagged'>;
      const sub = to.subs.get(p.sessionId);
      if (!sub) return;
      sub.lagCount++;
      if (to.current) to.subs.resubscribe(sub);
      return;
    }
    case 'session/closed': {
      const p = params as ServerNotificationParams<'session/closed'>;
      if (to.current) to.subs.closed(p.sessionId, p.reason);
      return;
    }
    case 'session/invalidated': {
      const p = params as ServerNotificationParams<'session/invalidated'>;
      if (to.current) to.subs.closed(p.sessionId, p.reason, p.resyncFrom);
      return;
    }
    case 'session/notice':
      if (to.current) to.notice(params as ServerNotificationParams<'session/notice'>);
      return;
    case 'approval/resolved':
      to.approvalResolved(params as ServerNotificationParams<'approval/resolved'>);
      return;
    case 'lease/revoked':
      to.leases.revoked(params as ServerNotificationParams<'lease/revoked'>);
      return;
    case 'daemon/shuttingDown': {
      const p = params as ServerNotificationParams<'daemon/shuttingDown'>;
      if (to.current) to.shuttingDown(p.reason, p.message ?? undefined);
      return;
    }
  }
}
