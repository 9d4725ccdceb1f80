// The error table: every error has a stable numeric code and a stable string reason (carried on the
// wire as error.data.reason). docs/protocol.md repeats this table; a test keeps them in step.
// `local: true` marks errors that a client library or the daemon process raises by itself and that
// never arrive on the wire (a connection that dropped, a daemon that could not start, ...).

export const ERRORS = {
  parse_error: { code: -32700, summary: 'The frame is not valid MessagePack.' },
  invalid_request: { code: -32600, summary: 'The message is not a valid request, response or notification.' },
  forbidden_key: { code: -32600, summary: 'A key such as __proto__, constructor or prototype appeared in the message.' },
  method_not_found: { code: -32601, summary: 'No such method.' },
  invalid_params: { code: -32602, summary: 'The params do not match the method\'s schema.' },
  input_too_large: { code: -32602, summary: 'Turn input exceeds maxInputChars; data has input_error_code (`input_too_large`), max_chars and actual_chars.' },
  internal_error: { code: -32603, summary: 'The daemon failed unexpectedly; the log has details.' },
  unauthorized: { code: -33001, summary: 'The token is wrong. Read it again from the discovery record.' },
  incompatible_protocol: { code: -33002, summary: 'The daemon does not speak this protocol version; run `astra daemon restart`.' },
  wrong_instance: { code: -33003, summary: 'The daemon is not the instance the client asked for.' },
  not_initialized: { code: -33004, summary: 'A request arrived before the `initialized` notification.' },
  frame_too_large: { code: -33005, summary: 'A frame exceeds the limit for its direction.' },
  frame_timeout: { code: -33006, summary: 'A frame started but did not finish within the deadline.' },
  handshake_timeout: { code: -33007, summary: 'No `initialize` request arrived within the deadline.' },
  already_initialized: { code: -33008, summary: '`initialize` was sent twice on one connection.' },
  overloaded: { code: -33010, summary: 'A bound was reached (connections, in-flight requests, subscriptions); retry with backoff.' },
  slow_consumer: { code: -33011, summary: 'The connection could not drain its outbound queue in time and was closed.', local: true },
  connection_closed: { code: -33012, summary: 'The connection closed before the request was answered.', local: true },
  request_timeout: { code: -33013, summary: 'No answer arrived within the request timeout.', local: true },
  shutting_down: { code: -33014, summary: 'The daemon is shutting down; reconnect to start a new one.' },
  request_cancelled: { code: -33015, summary: 'The caller cancelled the request (its AbortSignal fired) before an answer came; a mutation may still take effect.', local: true },
  subscription_closed: { code: -33016, summary: 'The daemon ended the subscription (data.closeReason: deleted, archived, ...), not the client.', local: true },
  not_found: { code: -33020, summary: 'No such session, turn or approval.' },
  not_controller: { code: -33021, summary: 'Only the session\'s controller may do this; acquire the lease first.' },
  stale_epoch: { code: -33022, summary: 'The epoch is older than the session\'s current lease epoch; control was taken over.' },
  lease_held: { code: -33023, summary: 'Another client controls the session; data names it. Use takeover to take control.' },
  turn_in_progress: { code: -33024, summary: 'A turn is already running in this session; cancel it or wait.' },
  idempotency_conflict: { code: -33025, summary: 'The idempotency key was used before with different params.' },
  outcome_unknown: { code: -33026, summary: 'The connection dropped while a mutation was in flight; ask mutation/status.', local: true },
  cursor_expired: { code: -33027, summary: 'The pagination cursor is no longer valid; list again from the start.' },
  invalid_state: { code: -33028, summary: 'The session is in a state that does not allow this (for example archived).' },
  cursor_ahead: { code: -33029, summary: 'sinceSeq is beyond the session\'s head (data.headSeq): the client saw events the session no longer has; resync from headSeq.' },
  journal_unsupported: { code: -33030, summary: 'A journal on disk has a newer format than this daemon reads; upgrade Astra.' },
  journal_corrupt: { code: -33031, summary: 'A journal on disk could not be read.' },
  disk_full: { code: -33032, summary: 'The disk holding Astra\'s data is full (data.path names it); free space and retry. Nothing acknowledged was lost.' },
  approval_expired: { code: -33033, summary: 'The approval expired, or the answer named an old revision; it was (or will be) resolved as denied. Answer the current request.' },
  engine_unavailable: { code: -33034, summary: 'The engine cannot run sessions now (data.engine; the message says why and what to do); initialize lists each engine\'s availability.' },
  experimental_not_enabled: { code: -33035, summary: 'The method is experimental: send capabilities.experimentalApi: true in initialize to use it.' },
  unsafe_runtime_dir: { code: -33040, summary: 'The runtime directory is a symlink, owned by another user, or open to others.', local: true },
  socket_path_too_long: { code: -33041, summary: 'The socket path exceeds 103 bytes; set ASTRA_HOME to a shorter directory.', local: true },
  invalid_record: { code: -33042, summary: 'The discovery record daemon.json is malformed.', local: true },
  daemon_not_running: { code: -33043, summary: 'No daemon is running; start one with `astra daemon start`.', local: true },
  spawn_failed: { code: -33044, summary: 'The daemon could not be started; its log\'s last lines say why.', local: true },
  lock_timeout: { code: -33045, summary: 'A lock could not be taken in time; another process holds it.', local: true },
} as const satisfies Record<string, { code: number; summary: string; local?: true }>;

export type ErrorReason = keyof typeof ERRORS;

export interface WireError {
  code: number;
  message: string;
  data?: { reason: string; [key: string]: unknown };
}

/** Whether an error is raised locally only (a client library, the daemon's own start-up) and never sent on the wire. */
export function isLocalOnlyError(reason: ErrorReason): boolean {
  return (ERRORS[reason] as { local?: true }).local === true;
}

export function isErrorReason(value: unknown): value is ErrorReason {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, value);
}

/** The one error type that crosses module and wire boundaries. */
export class AstraError extends Error {
  readonly reason: ErrorReason;
  readonly code: number;
  readonly data: Record<string, unknown>;

  constructor(reason: ErrorReason, message?: string, data: Record<string, unknown> = {}) {
    super(message ?? ERRORS[reason].summary);
    this.name = 'AstraError';
    this.reason = reason;
    this.code = ERRORS[reason].code;
    this.data = data;
  }

  toWire(): WireError {
    return { code: this.code, message: this.message, data: { ...this.data, reason: this.reason } };
  }

  /** Rebuilds a typed error from the wire; an unknown reason from a newer peer keeps its code. */
  static fromWire(error: WireError): AstraError {
    const reason = isErrorReason(error.data?.reason) ? error.data.reason : reasonForCode(error.code);
    const { reason: _ignored, ...data } = error.data ?? { reason };
    const e = new AstraError(reason, error.message, data);
    if (e.code !== error.code) (e as { code: number }).code = error.code;
    return e;
  }
}

function reasonForCode(code: number): ErrorReason {
  for (const [reason, entry] of Object.entries(ERRORS)) if (entry.code === code) return reason as ErrorReason;
  return 'internal_error';
}

export function isAstraError(e: unknown, reason?: ErrorReason): e is AstraError {
  return e instanceof AstraError && (reason === undefined || e.reason === reason);
}
