// Wire shapes shared by methods, notifications and events, written as schemas (see schema.ts).
import { type Schema, any, arr, bool, bytes, int, nullable, obj, oneOf, opt, record, str, type Infer } from './schema.js';

/** Milliseconds since the Unix epoch; always a msgpack integer on the wire. */
export const timestamp = () => int({ min: 0 });
export const sessionId = () => str({ minLength: 1, maxLength: 128 });
export const epoch = () => int({ min: 0 });
export const seq = () => int({ min: 0 });

export const APPROVAL_POLICIES = ['ask', 'auto'] as const;
export type ApprovalPolicy = (typeof APPROVAL_POLICIES)[number];

export const SESSION_STATES = ['idle', 'running', 'archived'] as const;
export type SessionState = (typeof SESSION_STATES)[number];

export const TURN_STATUSES = ['running', 'cancelling', 'completed', 'cancelled', 'failed', 'interrupted'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];
export const FINAL_TURN_STATUSES = ['completed', 'cancelled', 'failed', 'interrupted'] as const;
export type FinalTurnStatus = (typeof FINAL_TURN_STATUSES)[number];

/** What to do with a running turn when its controller's grace runs out. */
export const ON_CONTROLLER_LOST = ['cancel', 'continue'] as const;
export type OnControllerLost = (typeof ON_CONTROLLER_LOST)[number];

export const DECISIONS = ['approve', 'deny'] as const;

/** How a tool call of the chat engine ended (tool.result.status). */
export const TOOL_RESULT_STATUSES = ['succeeded', 'failed', 'denied', 'interrupted'] as const;
export type ToolResultStatus = (typeof TOOL_RESULT_STATUSES)[number];
export type Decision = (typeof DECISIONS)[number];

export const controllerInfoSchema = obj({
  connectionId: str(),
  clientName: str(),
  pid: opt(int()),
  since: timestamp(),
  graceUntil: opt(timestamp()),
});
export type ControllerInfo = Infer<typeof controllerInfoSchema>;

/** session/create's approvalTimeoutMs: from 1 s to 7 days. */
export const APPROVAL_TIMEOUT_BOUNDS = { min: 1000, max: 7 * 24 * 3600 * 1000 } as const;

export const sessionSchema = obj({
  id: sessionId(),
  title: str(),
  cwd: str(),
  engine: str(),
  approvalPolicy: oneOf(APPROVAL_POLICIES),
  onControllerLost: opt(oneOf(ON_CONTROLLER_LOST)),
  /** What the engine kept of session/create's engineOptions (never a secret; absent when none). */
  engineOptions: opt(record(any('an option value'))),
  approvalTimeoutMs: opt(int()),
  state: oneOf(SESSION_STATES),
  createdAt: timestamp(),
  updatedAt: timestamp(),
  headSeq: seq(),
  epoch: epoch(),
  runningTurnId: opt(str()),
  controller: opt(controllerInfoSchema),
});
export type Session = Infer<typeof sessionSchema>;

// ---- events (docs/architecture.md, runtime/) ----

const turnId = () => str({ minLength: 1 });

/** One choice of an approval with options: `kind` `allow_*` approves, `reject_*` denies. */
export const APPROVAL_OPTION = obj({ optionId: str({ minLength: 1 }), name: str(), kind: str() });

/** What an ACP tool call says of itself (tool.call, tool.updated); every text and diff bounded, cut with a marker. */
const TOOL_DETAIL = {
  kind: opt(str()),
  title: opt(str()),
  status: opt(str()),
  locations: opt(arr(obj({ path: str(), line: opt(nullable(int())) }))),
  /** `text` (type 'text'), a diff (type 'diff': path, oldText — null for a new file —, newText), a terminal (type 'terminal': terminalId). */
  content: opt(arr(obj({ type: str(), text: opt(str()), path: opt(str()), oldText: opt(nullable(str())), newText: opt(str()), terminalId: opt(str()) }))),
};

export const EVENT_DATA = {
  'session.created': obj({ title: str(), cwd: str(), engine: str(), approvalPolicy: oneOf(APPROVAL_POLICIES) }),
  'session.updated': obj({ title: opt(str()), state: opt(oneOf(SESSION_STATES)) }),
  'turn.started': obj({ turnId: turnId(), input: obj({ text: str() }) }),
  'message.user': obj({ turnId: turnId(), text: str() }),
  'message.delta': obj({ turnId: turnId(), text: str() }),
  /**
   * `textFromDeltas: true` (only to a subscription that asked for it, session/subscribe): `text` is
   * empty on the wire and the message's text is the concatenation of the turn's message.delta texts
   * since its turn.started or previous message.completed, all of which the subscription delivered.
   */
  'message.completed': obj({ turnId: turnId(), text: str(), finishReason: opt(str()), textFromDeltas: opt(bool()) }),
  /** `arguments` with secrets masked; `argsDigest`: sha-256 (hex) of the real arguments' canonical JSON (docs/secrets.md); kind, title, status, locations, content: from an ACP agent's tool call (the acp engine; docs/engines.md). */
  'tool.call': obj({ turnId: turnId(), callId: str({ minLength: 1 }), name: str(), arguments: str(), argsDigest: opt(str()), ...TOOL_DETAIL }),
  'tool.result': obj({ turnId: turnId(), callId: str({ minLength: 1 }), status: oneOf(TOOL_RESULT_STATUSES), exitCode: opt(nullable(int())), output: str() }),
  usage: obj({ turnId: turnId(), promptTokens: int({ min: 0 }), completionTokens: int({ min: 0 }) }),
  'command.started': obj({
    turnId: turnId(),
    command: str(),
    cwd: str(),
    pid: opt(int()),
    /** True: the command has a pseudo-terminal (one stream, input and resize work); false: pipes. Absent before issue 17. */
    tty: opt(bool()),
    /**
     * With tty: the terminal's size when the command started (a later command/resize changes it: a
     * screen subscription then gets the screen again at the new size, session/screen). Absent before issue 26.
     */
    cols: opt(int({ min: 1, max: 1000 })),
    rows: opt(int({ min: 1, max: 1000 })),
    /** `command` has secrets masked; this is sha-256 (hex) of the canonical JSON of the real {command, cwd} (docs/secrets.md). */
    argsDigest: opt(str()),
  }),
  'command.output': obj({ turnId: turnId(), stream: oneOf(['stdout', 'stderr'] as const), data: bytes() }),
  'command.completed': obj({ turnId: turnId(), exitCode: nullable(int()), signal: nullable(str()) }),
  /** `command` and `reason` with secrets masked; `paramsDigest`: sha-256 (hex) of the canonical JSON of the real {command, cwd, reason} (docs/secrets.md); `options`: the choices an engine offers (an ACP agent's permission options); an answer may name one (approval/answer's optionId). */
  'approval.requested': obj({ turnId: turnId(), approvalId: str(), command: str(), cwd: str(), reason: opt(str()), revision: opt(int({ min: 1 })), expiresAt: opt(timestamp()), paramsDigest: opt(str()), options: opt(arr(APPROVAL_OPTION)) }),
  'approval.resolved': obj({
    turnId: turnId(),
    approvalId: str(),
    decision: oneOf(DECISIONS),
    by: opt(obj({ clientName: opt(str()), connectionId: opt(str()) })),
    reason: opt(str()),
    optionId: opt(str()),
  }),
  'lease.changed': obj({
    epoch: epoch(),
    holder: nullable(obj({ connectionId: str(), clientName: str(), pid: opt(int()) })),
    reason: oneOf(['acquired', 'released', 'takeover', 'grace', 'reclaimed', 'expired', 'restart'] as const),
    graceUntil: opt(timestamp()),
  }),
  'turn.completed': obj({
    turnId: turnId(),
    status: oneOf(FINAL_TURN_STATUSES),
    exitCode: opt(nullable(int())),
    error: opt(str()),
    /** Why the turn ended as it did when no one cancelled it and nothing failed: 'denied: …' when its command was denied (or its approval expired). */
    reason: opt(str()),
  }),
  error: obj({ message: str(), reason: opt(str()), turnId: opt(str()), code: opt(str()), retryable: opt(bool()) }),
  // The acp engine's (docs/engines.md, `acp`): an agent's thoughts, plan, tool call updates, its ACP session, and updates of kinds Astra does not map.
  'thought.delta': obj({ turnId: turnId(), text: str() }),
  'plan.updated': obj({ turnId: turnId(), entries: arr(obj({ content: str(), priority: str(), status: str() })) }),
  'tool.updated': obj({ turnId: turnId(), callId: str({ minLength: 1 }), ...TOOL_DETAIL }),
  'acp.session': obj({ turnId: opt(str()), acpSessionId: str(), agent: str(), how: oneOf(['new', 'loaded'] as const), note: opt(str()) }),
  'acp.update': obj({ turnId: opt(str()), kind: str(), update: any() }),
} as const;

export type EventType = keyof typeof EVENT_DATA;
export const EVENT_TYPES = Object.keys(EVENT_DATA) as EventType[];
export type EventData<T extends EventType> = Infer<(typeof EVENT_DATA)[T]>;

/** A session event as stored and sent: `{sessionId, seq, ts, type, data}`. */
export type SessionEvent<T extends EventType = EventType> = {
  [K in T]: { sessionId: string; seq: number; ts: number; type: K; data: EventData<K> };
}[T];

/** The envelope check; `data` is checked against EVENT_DATA by validateEvent. */
export const eventEnvelopeSchema = obj({
  sessionId: sessionId(),
  seq: int({ min: 1 }),
  ts: timestamp(),
  type: str(),
  data: obj({}),
});

/**
 * A whole event: the envelope, and the data of a known type checked against EVENT_DATA (an unknown
 * type from a newer daemon passes with any data). Its JSON Schema is the envelope's.
 */
export const sessionEventSchema: Schema<SessionEvent> = {
  check(value, path) {
    const problem = eventEnvelopeSchema.check(value, path);
    if (problem) return problem;
    const e = value as { type: string; data: unknown };
    const data = (EVENT_DATA as Record<string, Schema<unknown>>)[e.type];
    return data?.check(e.data, `${path}(${e.type}).data`);
  },
  json: () => eventEnvelopeSchema.json(),
};
