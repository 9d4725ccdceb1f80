// The method table (docs/protocol.md §6): every method is declared once, with its params and result
// schemas and its policy. The daemon's router and the client's typed API are derived from it.
import { any, arr, bool, bytes, int, nullable, obj, oneOf, opt, record, str, type Infer, type Schema } from './schema.js';
import { LIMITS } from './version.js';
import {
  APPROVAL_OPTION,
  APPROVAL_POLICIES,
  APPROVAL_TIMEOUT_BOUNDS,
  DECISIONS,
  ON_CONTROLLER_LOST,
  TURN_STATUSES,
  epoch,
  sessionEventSchema,
  seq,
  sessionId,
  sessionSchema,
  timestamp,
} from './types.js';

export interface Policy {
  /** The caller must hold the session's controller lease and pass its current `epoch`. */
  readonly controller: boolean;
  /** Changes state. Mutations are never retried blindly by the client library. */
  readonly mutates: boolean;
  /** Safe to repeat with the same params: the client library retries it after a reconnect. */
  readonly idempotent: boolean;
  /** Takes an `idempotencyKey` whose first result is remembered (see mutation/status). */
  readonly idempotencyKey?: 'required' | 'optional';
  /**
   * The params carry the caller's lease `epoch` (the client library fills it in from the lease it
   * holds). 'optional' (METADATA): anyone may call without one; an `epoch` that is given is checked
   * as a controller write's is (`not_controller`, `stale_epoch`), so a controller can fence its call.
   */
  readonly epoch: boolean | 'optional';
}

export interface MethodSpec<P, R> {
  readonly params: Schema<P>;
  readonly result: Schema<R>;
  readonly policy: Policy;
  readonly summary: string;
  /** Served only to a connection that said `capabilities.experimentalApi: true` (else experimental_not_enabled). */
  readonly experimental?: true;
}

function method<P, R>(spec: MethodSpec<P, R>): MethodSpec<P, R> {
  return spec;
}

const READ: Policy = { controller: false, mutates: false, idempotent: true, epoch: false };
const WRITE: Policy = { controller: true, mutates: true, idempotent: false, epoch: true };
/**
 * A change to what the session is called or where it is listed, not to its turn stream: allowed
 * without the controller lease (a terminal attached as controller does not block `astra rename`),
 * and safe to repeat (the same params leave the same state).
 */
const METADATA: Policy = { controller: false, mutates: true, idempotent: true, epoch: 'optional' };

/** Largest `data` of one command/input request. */
export const MAX_COMMAND_INPUT_BYTES = 64 * 1024;

const idempotencyKey = () => str({ minLength: 1, maxLength: 128 });

export const clientInfoSchema = obj({ name: str({ maxLength: 256 }), version: str({ maxLength: 64 }), pid: opt(int()) });

export const limitsSchema = obj({ maxRequestBytes: int(), maxFrameBytes: int(), maxInputChars: int() });

export { connectionStatusSchema, sessionStatusSchema, daemonStatusSchema, type DaemonStatus } from './status.js';
import { daemonStatusSchema } from './status.js';
import { capabilitiesShape } from './capabilities.js';

export const initializeParamsSchema = obj({
  protocolVersion: int(),
  token: str({ maxLength: 1024 }),
  clientInfo: clientInfoSchema,
  instanceId: opt(str()),
  capabilities: opt(
    obj({
      optOutNotificationMethods: opt(arr(str(), { maxItems: 64 })),
      /** The client reads `session/events` (several events per frame when it is behind). */
      batchEvents: opt(bool()),
      /** The client takes the experimental surface: the methods marked `experimental` and EXPERIMENTAL_EVENT_FIELDS. */
      experimentalApi: opt(bool()),
    }),
  ),
});

export const initializeResultSchema = obj({
  instanceId: str(),
  connectionId: str(),
  protocolVersion: int(),
  daemon: obj({ version: str(), pid: int(), startedAt: timestamp() }),
  limits: limitsSchema,
  /** The methods this connection may call (an experimental one only with experimentalApi). */
  methods: arr(str()),
  ...capabilitiesShape,
});

/** What `daemon/capabilities` answers: the initialize result's capabilities, checked again now. */
export const daemonCapabilitiesSchema = obj({ methods: arr(str()), ...capabilitiesShape });

/** Client → daemon requests. */
export const METHODS = {
  initialize: method({
    summary: 'The handshake; must be the first frame, within 2 s of connecting.',
    params: initializeParamsSchema,
    result: initializeResultSchema,
    policy: { controller: false, mutates: false, idempotent: false, epoch: false },
  }),
  ping: method({
    summary: 'Liveness check; answers the daemon clock.',
    params: obj({}),
    result: obj({ now: timestamp() }),
    policy: READ,
  }),
  'daemon/status': method({
    summary: 'What the daemon is doing: connections, sessions, leases, queues.',
    params: obj({}),
    result: daemonStatusSchema,
    policy: READ,
  }),
  'daemon/capabilities': method({
    summary: 'Experimental: what initialize said this connection can use, with each engine\'s availability checked again now.',
    params: obj({}),
    result: daemonCapabilitiesSchema,
    policy: READ,
    experimental: true,
  }),
  'daemon/shutdown': method({
    summary: 'Shut the daemon down cleanly; clients are told with daemon/shuttingDown.',
    params: obj({ reason: opt(str({ maxLength: 256 })), restart: opt(bool()) }),
    /** `connections`: how many other clients were attached (they are told with daemon/shuttingDown). */
    result: obj({ connections: opt(int({ min: 0 })) }),
    policy: { controller: false, mutates: true, idempotent: true, epoch: false },
  }),
  'session/create': method({
    summary: 'Create a session.',
    params: obj({
      title: opt(str({ maxLength: 256 })),
      cwd: opt(str({ minLength: 1, maxLength: 4096 })),
      engine: opt(str({ minLength: 1, maxLength: 64 })),
      approvalPolicy: opt(oneOf(APPROVAL_POLICIES)),
      onControllerLost: opt(oneOf(ON_CONTROLLER_LOST)),
      engineOptions: opt(record(any('an option value'))),
      approvalTimeoutMs: opt(int(APPROVAL_TIMEOUT_BOUNDS)),
      idempotencyKey: opt(idempotencyKey()),
    }),
    result: obj({ session: sessionSchema }),
    policy: { controller: false, mutates: true, idempotent: false, idempotencyKey: 'optional', epoch: false },
  }),
  'session/list': method({
    summary: 'List sessions, newest first; archived ones only when asked.',
    params: obj({ cursor: opt(str()), limit: opt(int({ min: 1, max: 1000 })), includeArchived: opt(bool()) }),
    result: obj({ sessions: arr(sessionSchema), nextCursor: opt(str()) }),
    policy: READ,
  }),
  'session/read': method({
    summary: 'A session snapshot and its events after sinceSeq, paginated by count and bytes.',
    params: obj({ sessionId: sessionId(), sinceSeq: opt(seq()), limit: opt(int({ min: 1, max: 100_000 })) }),
    result: obj({ session: sessionSchema, events: arr(sessionEventSchema), headSeq: seq(), nextSeq: opt(seq()) }),
    policy: READ,
  }),
  'session/subscribe': method({
    summary: 'Live events after sinceSeq: the backlog, then session/replayed, then live events.',
    /**
     * `screen: true`: if a command is running in a pseudo-terminal, the backlog leaves out that turn's
     * command.output through some seq S and a `session/screen` notification (its current screen as of
     * S) comes instead, after the backlog and before session/replayed. `historyLines` (only without
     * sinceSeq): the backlog starts at a turn boundary chosen so that finished turns' output in it is
     * about that many lines at most (the latest finished turn and the running one always included);
     * session/replayed then says `historyFromSeq`, the seq before which events were left out.
     * `textFromDeltas: true`: a message.completed whose text this subscription already delivered as
     * the turn's message.delta events comes with an empty `text` and `textFromDeltas: true` (the
     * text is those deltas' concatenation; EVENT_DATA), so a long answer crosses the socket once.
     */
    params: obj({
      sessionId: sessionId(),
      sinceSeq: opt(seq()),
      screen: opt(bool()),
      historyLines: opt(int({ min: 1, max: LIMITS.maxHistoryLines })),
      textFromDeltas: opt(bool()),
    }),
    result: obj({ sessionId: sessionId(), headSeq: seq() }),
    policy: { controller: false, mutates: false, idempotent: true, epoch: false },
  }),
  'session/unsubscribe': method({
    summary: 'Stop receiving a session\'s events.',
    params: obj({ sessionId: sessionId() }),
    result: obj({}),
    policy: READ,
  }),
  'session/rename': method({
    summary: 'Rename a session (metadata: no lease needed; an epoch given is checked).',
    params: obj({ sessionId: sessionId(), epoch: opt(epoch()), title: str({ maxLength: 256 }) }),
    result: obj({ session: sessionSchema }),
    policy: METADATA,
  }),
  'session/archive': method({
    summary: 'Archive a session (controller only); it is hidden from session/list unless asked.',
    params: obj({ sessionId: sessionId(), epoch: epoch() }),
    result: obj({ session: sessionSchema }),
    policy: WRITE,
  }),
  'session/unarchive': method({
    summary: 'Undo session/archive: the session is listed again and can run turns (metadata: no lease needed).',
    params: obj({ sessionId: sessionId(), epoch: opt(epoch()) }),
    result: obj({ session: sessionSchema }),
    policy: METADATA,
  }),
  'session/delete': method({
    summary: 'Delete a session and its journal for good (controller only; refused while a turn runs).',
    params: obj({ sessionId: sessionId(), epoch: epoch() }),
    result: obj({ sessionId: sessionId() }),
    policy: WRITE,
  }),
  'approval/answer': method({
    summary: 'Answer a pending approval as its controller, naming the revision answered; a stale revision or an expired approval is approval_expired.',
    params: obj({
      sessionId: sessionId(),
      epoch: epoch(),
      approvalId: str({ minLength: 1, maxLength: 128 }),
      revision: opt(int({ min: 1 })),
      decision: oneOf(DECISIONS),
      /** One of the approval's `options`: its kind must agree with `decision`. */
      optionId: opt(str({ minLength: 1, maxLength: 256 })),
    }),
    result: obj({}),
    policy: WRITE,
  }),
  'lease/acquire': method({
    summary: 'Become the session\'s controller; takeover demotes the holder; resumeToken reclaims in grace.',
    params: obj({ sessionId: sessionId(), takeover: opt(bool()), resumeToken: opt(str({ maxLength: 256 })) }),
    result: obj({ sessionId: sessionId(), epoch: epoch(), resumeToken: str(), graceMs: int({ min: 0 }) }),
    policy: { controller: false, mutates: true, idempotent: false, epoch: false },
  }),
  'lease/release': method({
    summary: 'Give up control of a session.',
    params: obj({ sessionId: sessionId(), epoch: epoch() }),
    result: obj({}),
    policy: WRITE,
  }),
  'turn/start': method({
    summary: 'Start a turn with the given input (controller only; one turn at a time).',
    /**
     * `terminal`: the controller's terminal size for the session's commands from this turn on (as
     * command/resize sets it), so the turn's first command starts at the right size.
     */
    params: obj({
      sessionId: sessionId(),
      epoch: epoch(),
      input: obj({ text: str() }),
      idempotencyKey: idempotencyKey(),
      terminal: opt(obj({ cols: int({ min: 1, max: 1000 }), rows: int({ min: 1, max: 1000 }) })),
      /** The turn is this connection's: if it drops, the turn is cancelled after the lease grace unless the session has a controller then. */
      cancelOnDisconnect: opt(bool()),
    }),
    result: obj({ turnId: str() }),
    policy: { ...WRITE, idempotencyKey: 'required' },
  }),
  'turn/cancel': method({
    summary: 'Cancel the running turn; answers once accepted. Completion is the turn.completed event.',
    params: obj({ sessionId: sessionId(), epoch: epoch(), turnId: opt(str()) }),
    result: obj({ turnId: str(), status: oneOf(TURN_STATUSES) }),
    policy: { controller: true, mutates: true, idempotent: true, epoch: true },
  }),
  'command/input': method({
    summary: 'Write bytes to the running command\'s terminal (controller only; at most 64 KiB a request).',
    params: obj({ sessionId: sessionId(), epoch: epoch(), turnId: str({ minLength: 1 }), data: bytes({ maxBytes: MAX_COMMAND_INPUT_BYTES }) }),
    result: obj({}),
    policy: WRITE,
  }),
  'command/resize': method({
    summary: 'Set the terminal size of the session\'s commands, the running one at once (controller only).',
    params: obj({
      sessionId: sessionId(),
      epoch: epoch(),
      turnId: str({ minLength: 1 }),
      cols: int({ min: 1, max: 1000 }),
      rows: int({ min: 1, max: 1000 }),
    }),
    /** `applied`: false when the command runs on pipes (no terminal to resize); the size is kept for the next command. */
    result: obj({ applied: bool() }),
    policy: WRITE,
  }),
  'mutation/status': method({
    summary: 'What became of a mutation sent with an idempotency key (a session/create key needs no sessionId).',
    params: obj({ sessionId: opt(sessionId()), idempotencyKey: idempotencyKey() }),
    result: obj({ state: oneOf(['unknown', 'in_progress', 'done'] as const), result: opt(any('the mutation\'s result')) }),
    policy: READ,
  }),
} as const;

export type MethodName = keyof typeof METHODS;
export type ParamsOf<M extends MethodName> = Infer<(typeof METHODS)[M]['params']>;
export type ResultOf<M extends MethodName> = Infer<(typeof METHODS)[M]['result']>;
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(METHODS, name);
}

/** Whether a method is served only to connections that opted in to the experimental surface. */
export function isExperimentalMethod(name: MethodName): boolean {
  return (METHODS[name] as MethodSpec<unknown, unknown>).experimental === true;
}

/** Daemon → client requests that the client must answer. */
export const SERVER_REQUESTS = {
  'approval/request': method({
    summary: 'The controller is asked to approve a command.',
    params: obj({
      sessionId: sessionId(),
      approvalId: str(),
      turnId: str(),
      command: str(),
      cwd: str(),
      reason: opt(str()),
      revision: opt(int({ min: 1 })),
      expiresAt: opt(timestamp()),
      paramsDigest: opt(str()), // as in approval.requested: command and reason are masked (docs/secrets.md)
      options: opt(arr(APPROVAL_OPTION)),
    }),
    /** `revision`: the one answered (an old one is refused with approval_expired); absent means the current one. `optionId`: as approval/answer's. */
    result: obj({ decision: oneOf(DECISIONS), revision: opt(int({ min: 1 })), optionId: opt(str({ minLength: 1, maxLength: 256 })) }),
    policy: { controller: true, mutates: true, idempotent: true, epoch: false },
  }),
} as const;

export type ServerRequestName = keyof typeof SERVER_REQUESTS;
export type ServerParamsOf<M extends ServerRequestName> = Infer<(typeof SERVER_REQUESTS)[M]['params']>;
export type ServerResultOf<M extends ServerRequestName> = Infer<(typeof SERVER_REQUESTS)[M]['result']>;

/** Notifications, by direction. */
export const CLIENT_NOTIFICATIONS = {
  initialized: obj({}),
} as const;

export const SERVER_NOTIFICATIONS = {
  'session/event': sessionEventSchema,
  /** Sent instead of several `session/event`s, only to connections that set capabilities.batchEvents. */
  'session/events': obj({ sessionId: sessionId(), events: arr(sessionEventSchema) }),
  'session/replayed': obj({ sessionId: sessionId(), throughSeq: seq(), historyFromSeq: opt(seq()) }),
  /**
   * The current screen of a command running in a pseudo-terminal, for a subscription made with
   * `screen: true`: `data` draws it (and the modes the program set) on a cleared terminal of
   * cols × rows; `scrollback` is the text of up to the last 1,000 lines that scrolled off its top
   * ('\n'-separated); `alternate`: the program uses the alternate screen. It stands for the turn's
   * command.output through `atSeq`, which this subscription never receives.
   */
  'session/screen': obj({
    sessionId: sessionId(),
    turnId: str({ minLength: 1 }),
    atSeq: seq(),
    cols: int({ min: 1, max: 1000 }),
    rows: int({ min: 1, max: 1000 }),
    data: bytes(),
    scrollback: str(),
    alternate: bool(),
  }),
  'session/lagged': obj({ sessionId: sessionId(), resumeFromSeq: seq() }),
  /** A subscription's last frame when the daemon ends it: `reason` 'deleted', 'archived', 'daemon_shutdown' (open: an unknown one ends it too). */
  'session/closed': obj({ sessionId: sessionId(), reason: str() }),
  /** A subscription's last frame when its backlog could not be read (`reason` 'journal_damage'): subscribe again from `resyncFrom`. */
  'session/invalidated': obj({ sessionId: sessionId(), reason: str(), resyncFrom: seq() }),
  /** To the client asked by `approval/request`, when the approval was settled another way (`reason`: 'answered', 'expired', 'cancelled'). */
  'approval/resolved': obj({ sessionId: sessionId(), approvalId: str(), decision: oneOf(DECISIONS), reason: str() }),
  /**
   * What no event can carry, to the session's subscribers. `reason`: 'disk_full' (its events cannot
   * be written, so none are published until there is space; `path` names the file), 'disk_ok' (they
   * are again). Open: ignore an unknown reason.
   */
  'session/notice': obj({ sessionId: sessionId(), reason: str(), message: str(), path: opt(str()) }),
  'lease/revoked': obj({
    sessionId: sessionId(),
    reason: str(),
    epoch: opt(epoch()),
    /** Who controls the session now (after a takeover); absent when nobody does. */
    holder: opt(obj({ connectionId: str(), clientName: str(), pid: opt(int()) })),
  }),
  /**
   * `reason`: why the daemon is going — 'stopped' (`astra daemon stop`, daemon/shutdown), 'restarting'
   * (`astra daemon restart`: reconnect to the new one), 'idle', 'signal', 'replaced', 'error' (open:
   * treat an unknown value as 'error'). `message` says it in words.
   */
  'daemon/shuttingDown': obj({ reason: str(), message: opt(str()) }),
} as const;

export type ServerNotificationName = keyof typeof SERVER_NOTIFICATIONS;
export type ServerNotificationParams<N extends ServerNotificationName> = Infer<(typeof SERVER_NOTIFICATIONS)[N]>;

export const ALL_NOTIFICATION_NAMES = [...Object.keys(CLIENT_NOTIFICATIONS), ...Object.keys(SERVER_NOTIFICATIONS)];
