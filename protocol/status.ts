// What `daemon/status` answers (docs/protocol.md §6): the daemon, its connections and its loaded sessions.
import { arr, bool, int, nullable, obj, opt, str, type Infer } from './schema.js';
import { epoch, seq, timestamp } from './types.js';

export const connectionStatusSchema = obj({
  id: str(),
  clientName: str(),
  clientVersion: str(),
  pid: opt(int()),
  connectedAt: timestamp(),
  queuedBytes: int({ min: 0 }),
  subscriptions: arr(str()),
});

export const sessionStatusSchema = obj({
  id: str(),
  title: str(),
  state: str(),
  headSeq: seq(),
  epoch: epoch(),
  controller: nullable(
    obj({ connectionId: str(), clientName: str(), pid: opt(int()), since: timestamp(), graceUntil: opt(timestamp()) }),
  ),
  observers: int({ min: 0 }),
  runningTurnId: nullable(str()),
  pendingApprovals: int({ min: 0 }),
});

export const daemonStatusSchema = obj({
  running: bool(),
  instanceId: str(),
  pid: int(),
  version: str(),
  protocolVersion: int(),
  startedAt: timestamp(),
  uptimeMs: int({ min: 0 }),
  endpoint: str(),
  logFile: str(),
  dataDir: str(),
  idleTimeoutMs: int({ min: 0 }),
  connections: arr(connectionStatusSchema),
  /** Loaded sessions, and controlled ones even if closed as idle. */
  sessions: arr(sessionStatusSchema),
  /** Every session the daemon knows of, loaded or not, archived included. */
  sessionsOnDisk: opt(int({ min: 0 })),
  /** Log lines the daemon could not write (a full disk under the log directory) since it started. */
  logLinesDropped: opt(int({ min: 0 })),
});
export type DaemonStatus = Infer<typeof daemonStatusSchema>;
