// The wire test vectors: each is one whole frame (4-byte big-endian length + MessagePack) and its
// meaning as JSON. Bytes are written {"$bin": "<base64>"}, integers outside ±(2^53 - 1) as
// {"$int": "<decimal>"}; JSON null is MessagePack nil and a missing key is an absent field.
// Pure: the protocol and ipc modules are passed in, so scripts/gen-vectors.mjs can use dist/ while
// test/contract/vectors.test.ts uses the TypeScript source.

/** A fixed 13-digit millisecond timestamp (2025-11-30T06:40:00Z), so the vectors never change. */
export const T0 = 1764484800000;

const SESSION_ID = 'ses_mil3x9k0a1b2c3d4e5f6';
const TURN_ID = 'turn_mil3xa1fb7c8d9e0f1a2';
const APPROVAL_ID = 'apr_mil3xa2c0a0b1c2d3e4f5';
const CONNECTION_ID = 'c_5f2e9a01b3c4';
const INSTANCE_ID = '3f0c6b8e-2d1a-4c5e-9b7f-0a1e2d3c4b5a';
const TOKEN = 'q7Lr0b3Zx9YwVt6Ks2Nn8Pp4Hh1Jj5Gg0Ff3Dd7Ss9A';
// Multi-byte (2 and 3 bytes), astral plane (4 bytes, a surrogate pair in UTF-16) and NUL.
const UNICODE_TITLE = 'Ünïcødé — 日本語 🚀 a\u0000b';

// Plain assignment of a "__proto__" key would set the prototype instead of a field; the
// forbidden-key vector needs it kept as data.
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function toMeaning(value) {
  if (value instanceof Uint8Array) return { $bin: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (typeof value === 'bigint') return { $int: value.toString() };
  if (Array.isArray(value)) return value.map(toMeaning);
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) put(out, k, toMeaning(v));
    return out;
  }
  return value;
}

export function fromMeaning(meaning) {
  if (Array.isArray(meaning)) return meaning.map(fromMeaning);
  if (meaning !== null && typeof meaning === 'object') {
    const keys = Object.keys(meaning);
    if (keys.length === 1 && keys[0] === '$bin') return Buffer.from(meaning.$bin, 'base64');
    if (keys.length === 1 && keys[0] === '$int') {
      const n = BigInt(meaning.$int);
      // Inside the safe range a plain number is the only representation; $int is for beyond it.
      if (n >= -9007199254740991n && n <= 9007199254740991n) throw new Error(`$int ${meaning.$int} is a safe integer; write it as a JSON number`);
      return n;
    }
    const out = {};
    for (const k of keys) put(out, k, fromMeaning(meaning[k]));
    return out;
  }
  return meaning;
}

function session(p, over = {}) {
  return {
    id: SESSION_ID,
    title: 'build fix',
    cwd: '/home/ada/project',
    engine: 'shell',
    approvalPolicy: 'ask',
    onControllerLost: 'cancel',
    state: 'idle',
    createdAt: T0,
    updatedAt: T0 + 1,
    headSeq: 1,
    epoch: 0,
    ...over,
  };
}

function event(seq, type, data, ts = T0 + seq) {
  return { sessionId: SESSION_ID, seq, ts, type, data };
}

/** Calls build(n) with a growing filler size until the payload is exactly `target` bytes. */
export function fitPayload(ipc, build, target) {
  let n = 0;
  for (let i = 0; i < 20; i++) {
    const size = ipc.encode(build(n)).length;
    if (size === target) return build(n);
    n += target - size;
    if (n < 0) throw new Error(`the message without filler is already ${size} bytes, over ${target}`);
  }
  throw new Error(`could not fit a message to exactly ${target} bytes`);
}

/** A deterministic byte pattern (not valid UTF-8 in places, with NULs): output is bytes, not text. */
export function patternBytes(length, seed = 0) {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

/**
 * The largest request a client may send: a turn/start of exactly maxRequestBytes payload bytes.
 * The text stays under maxInputChars (UTF-16 units) by using 3-byte characters.
 */
export function maxRequestMessage(p, ipc) {
  return fitPayload(
    ipc,
    (n) => ({
      id: 21,
      method: 'turn/start',
      params: { sessionId: SESSION_ID, epoch: 1, input: { text: '€'.repeat(40_000) + 'x'.repeat(n) }, idempotencyKey: 'k-max-request' },
    }),
    p.LIMITS.maxRequestBytes,
  );
}

/**
 * The largest frame the daemon may send: a session/read page of command.output events (64 KiB
 * chunks) whose payload is exactly maxFrameBytes. Too big to check in; built at test time.
 */
export function maxFrameMessage(p, ipc) {
  const chunk = p.LIMITS.maxOutputChunkBytes;
  const full = Math.floor(p.LIMITS.maxFrameBytes / (chunk + 128)) - 1;
  return fitPayload(
    ipc,
    (n) => {
      const events = [];
      for (let i = 0; i < full; i++)
        events.push(event(10 + i, 'command.output', { turnId: TURN_ID, stream: 'stdout', data: patternBytes(chunk, i) }));
      events.push(event(10 + full, 'command.output', { turnId: TURN_ID, stream: 'stderr', data: patternBytes(n, full) }));
      return { id: 22, result: { session: session(p, { headSeq: 9000 }), events, headSeq: 9000, nextSeq: 11 + full } };
    },
    p.LIMITS.maxFrameBytes,
  );
}

/**
 * Every vector: {name, description, direction, kind, method?, eventType?, rejectedWith?, message}.
 * kind is what parseMessage says (request, response, error, notification); a daemon→client request
 * is kind "request" with direction "daemon-to-client".
 */
export function buildVectors(p, ipc) {
  const C2D = 'client-to-daemon';
  const D2C = 'daemon-to-client';
  const v = [];
  const add = (name, description, direction, kind, message, extra = {}) => v.push({ name, description, direction, kind, ...extra, message });

  // ---- handshake ----
  add('request-initialize', 'The first frame of every connection.', C2D, 'request', {
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: p.PROTOCOL_VERSION,
      token: TOKEN,
      clientInfo: { name: 'astra-python', version: '0.1.0', pid: 4242 },
      capabilities: { optOutNotificationMethods: [] },
    },
  }, { method: 'initialize' });
  add('response-initialize', 'The handshake result: real limits of this connection, the methods it may call (no experimental one without experimentalApi), the engines and their availability.', D2C, 'response', {
    id: 1,
    result: {
      instanceId: INSTANCE_ID,
      connectionId: CONNECTION_ID,
      protocolVersion: p.PROTOCOL_VERSION,
      daemon: { version: '0.1.0', pid: 31337, startedAt: T0 },
      limits: { maxRequestBytes: p.LIMITS.maxRequestBytes, maxFrameBytes: p.LIMITS.maxFrameBytes, maxInputChars: p.LIMITS.maxInputChars },
      methods: p.METHOD_NAMES.filter((m) => !p.isExperimentalMethod(m)),
      engines: [
        { name: 'shell', available: true, terminal: 'pty' },
        { name: 'synthetic', available: true },
        { name: 'chat', available: false, reason: 'not configured: no model server and model are set for the daemon (ASTRA_CHAT_MODEL=<model> [ASTRA_CHAT_BASE_URL=<url>] astra daemon restart), so each session must name its model (engineOptions.model, astra chat --model)' },
        { name: 'acp', available: true },
      ],
      userAgent: 'astra/0.1.0 (node 20.18.0; linux x64)',
      home: '/home/ada/.astra-test',
      platform: 'linux',
      experimentalApi: false,
    },
  }, { method: 'initialize' });
  add('notification-initialized', 'Sent after the initialize result; params absent.', C2D, 'notification', { method: 'initialized' }, { method: 'initialized' });
  add('error-unauthorized', 'A wrong token: one error, then the daemon closes.', D2C, 'error', {
    id: 1,
    error: { code: p.ERRORS.unauthorized.code, message: p.ERRORS.unauthorized.summary, data: { reason: 'unauthorized' } },
  });
  add('error-incompatible-protocol', 'The daemon does not speak the client\'s version.', D2C, 'error', {
    id: 1,
    error: {
      code: p.ERRORS.incompatible_protocol.code,
      message: 'this daemon speaks protocol 1..1, the client asked for 2; run `astra daemon restart`',
      data: { reason: 'incompatible_protocol', supported: { min: 1, max: 1 }, daemonVersion: '0.1.0' },
    },
  });

  // ---- requests ----
  add('request-ping-params-absent', 'params may be left out; it means {}.', C2D, 'request', { id: 2, method: 'ping' }, { method: 'ping' });
  add('request-ping-params-nil', 'params nil also means {}.', C2D, 'request', { id: 3, method: 'ping', params: null }, { method: 'ping' });
  add('response-ping', 'A 13-digit millisecond timestamp travels as uint64 (0xcf), never float64.', D2C, 'response', { id: 3, result: { now: T0 + 12345 } }, { method: 'ping' });
  add('request-session-create', 'Create a session that asks before running commands.', C2D, 'request', {
    id: 4,
    method: 'session/create',
    params: { title: 'build fix', cwd: '/home/ada/project', approvalPolicy: 'ask', idempotencyKey: 'create-1' },
  }, { method: 'session/create' });
  add('request-session-create-unicode', 'Multi-byte, astral-plane (4-byte UTF-8) and NUL characters inside strings.', C2D, 'request', {
    id: 5,
    method: 'session/create',
    params: { title: UNICODE_TITLE, cwd: '/home/ada/プロジェクト/𝄞', approvalPolicy: 'auto' },
  }, { method: 'session/create' });
  add('request-session-create-nil-optional', 'Optional fields sent as nil mean the same as absent ones.', C2D, 'request', {
    id: 6,
    method: 'session/create',
    params: { title: null, cwd: null, engine: null, approvalPolicy: null, idempotencyKey: null },
  }, { method: 'session/create' });
  add('request-session-create-chat', 'A chat session: engineOptions is a map the engine checks.', C2D, 'request', {
    id: 40,
    method: 'session/create',
    params: { title: 'ask the model', cwd: '/home/ada/project', engine: 'chat', approvalPolicy: 'ask', engineOptions: { model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', maxSteps: 10 } },
  }, { method: 'session/create' });
  add('response-session-create', 'A Session; optional fields runningTurnId and controller absent.', D2C, 'response', { id: 4, result: { session: session(p) } }, { method: 'session/create' });
  add('response-session-create-unicode', 'The same strings come back byte for byte.', D2C, 'response', {
    id: 5,
    result: { session: session(p, { title: UNICODE_TITLE, cwd: '/home/ada/プロジェクト/𝄞', approvalPolicy: 'auto' }) },
  }, { method: 'session/create' });
  add('request-session-subscribe', 'Subscribe from the start: backlog, session/replayed, then live events.', C2D, 'request', {
    id: 7,
    method: 'session/subscribe',
    params: { sessionId: SESSION_ID, sinceSeq: 0 },
  }, { method: 'session/subscribe' });
  add('response-session-subscribe', '', D2C, 'response', { id: 7, result: { sessionId: SESSION_ID, headSeq: 1 } }, { method: 'session/subscribe' });
  add('request-session-subscribe-text-from-deltas', 'A streamed answer\'s text once: a live message.completed whose text came as this subscription\'s deltas comes without it.', C2D, 'request', {
    id: 7,
    method: 'session/subscribe',
    params: { sessionId: SESSION_ID, sinceSeq: 0, textFromDeltas: true },
  }, { method: 'session/subscribe' });
  add('request-lease-acquire', 'Become the controller.', C2D, 'request', { id: 8, method: 'lease/acquire', params: { sessionId: SESSION_ID } }, { method: 'lease/acquire' });
  add('response-lease-acquire', '', D2C, 'response', {
    id: 8,
    result: { sessionId: SESSION_ID, epoch: 1, resumeToken: 'rT4kq0Zx8mN2bV6cX1zL9pQ3wE7rT5yU0iO4pA8sD2f', graceMs: 30000 },
  }, { method: 'lease/acquire' });
  add('request-turn-start', 'A string request id and a W3C trace context.', C2D, 'request', {
    id: 'req-9',
    method: 'turn/start',
    params: { sessionId: SESSION_ID, epoch: 1, input: { text: 'echo hello from python' }, idempotencyKey: 'turn-1' },
    trace: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  }, { method: 'turn/start' });
  add('response-turn-start', 'The answer echoes the string id.', D2C, 'response', { id: 'req-9', result: { turnId: TURN_ID } }, { method: 'turn/start' });
  add('request-turn-cancel', '', C2D, 'request', { id: 10, method: 'turn/cancel', params: { sessionId: SESSION_ID, epoch: 1, turnId: TURN_ID } }, { method: 'turn/cancel' });
  add('response-turn-cancel', 'Accepted; completion is the turn.completed event.', D2C, 'response', { id: 10, result: { turnId: TURN_ID, status: 'cancelling' } }, { method: 'turn/cancel' });
  add('response-session-unsubscribe', 'An empty map result.', D2C, 'response', { id: 11, result: {} }, { method: 'session/unsubscribe' });
  add('request-large-integers', 'Request id 2^53-1 (the largest safe integer) and sinceSeq 2^32: both msgpack uint64.', C2D, 'request', {
    id: 9007199254740991,
    method: 'session/read',
    params: { sessionId: SESSION_ID, sinceSeq: 4294967296, limit: 100000 },
  }, { method: 'session/read' });
  add('request-negative-integer-id', 'Request id -2^32-1: msgpack int64 (0xd3).', C2D, 'request', {
    id: -4294967297,
    method: 'ping',
    params: {},
  }, { method: 'ping' });
  add('response-session-read', 'A page of events with a next page; bytes inside events stay bin.', D2C, 'response', {
    id: 12,
    result: {
      session: session(p, { headSeq: 3, epoch: 1, controller: { connectionId: CONNECTION_ID, clientName: 'astra-python', pid: 4242, since: T0 + 2 } }),
      events: [
        event(1, 'session.created', { title: 'build fix', cwd: '/home/ada/project', engine: 'shell', approvalPolicy: 'ask' }),
        event(2, 'command.output', { turnId: TURN_ID, stream: 'stdout', data: Buffer.from('ok\n') }),
      ],
      headSeq: 3,
      nextSeq: 3,
    },
  }, { method: 'session/read' });
  add('request-max-size', `A request of exactly ${p.LIMITS.maxRequestBytes} payload bytes, the client→daemon maximum (one more byte is frame_too_large).`, C2D, 'request', maxRequestMessage(p, ipc), { method: 'turn/start' });

  // ---- errors ----
  add('error-input-too-large', 'input_too_large shares -32602 with invalid_params; data.reason tells them apart.', D2C, 'error', {
    id: 13,
    error: {
      code: p.ERRORS.input_too_large.code,
      message: 'the input has 70000 characters; the limit is 65536',
      data: { reason: 'input_too_large', input_error_code: 'input_too_large', max_chars: 65536, actual_chars: 70000 },
    },
  });
  add('error-frame-too-large-nil-id', 'An error with id nil: the oversize frame was never read.', D2C, 'error', {
    id: null,
    error: {
      code: p.ERRORS.frame_too_large.code,
      message: 'an incoming frame announces 131073 bytes; the limit is 131072',
      data: { reason: 'frame_too_large', size: 131073, limit: 131072 },
    },
  });
  add('error-lease-held', 'data names the holder.', D2C, 'error', {
    id: 14,
    error: {
      code: p.ERRORS.lease_held.code,
      message: 'session is controlled by astra-tui; pass takeover to take control',
      data: { reason: 'lease_held', holder: { connectionId: 'c_0a1b2c3d4e5f', clientName: 'astra-tui', pid: 777 } },
    },
  });
  add('error-method-not-found-no-data', 'An error without data (a peer outside Astra may send one); match on code.', D2C, 'error', {
    id: 15,
    error: { code: p.ERRORS.method_not_found.code, message: 'unknown method "session/frobnicate"' },
  });

  // ---- server requests ----
  add('server-request-approval', 'The daemon asks the controller; ids are the daemon\'s own.', D2C, 'request', {
    id: 1,
    method: 'approval/request',
    params: { sessionId: SESSION_ID, approvalId: APPROVAL_ID, turnId: TURN_ID, command: 'echo hello from python', cwd: '/home/ada/project', revision: 1 },
  }, { method: 'approval/request' });
  add('server-request-approval-expiring', 'A session with approvalTimeoutMs: the request says when it expires.', D2C, 'request', {
    id: 2,
    method: 'approval/request',
    params: { sessionId: SESSION_ID, approvalId: APPROVAL_ID, turnId: TURN_ID, command: 'rm -rf build', cwd: '/home/ada/project', revision: 1, expiresAt: T0 + 60000 },
  }, { method: 'approval/request' });
  add('server-response-approval', 'The client\'s answer, with the daemon\'s id.', C2D, 'response', { id: 1, result: { decision: 'approve' } }, { method: 'approval/request' });
  add('server-response-approval-revision', 'An answer naming the revision it is for.', C2D, 'response', { id: 2, result: { decision: 'deny', revision: 1 } }, { method: 'approval/request' });

  // ---- notifications ----
  add('notification-session-replayed', '', D2C, 'notification', { method: 'session/replayed', params: { sessionId: SESSION_ID, throughSeq: 1 } }, { method: 'session/replayed' });
  add('notification-session-replayed-history', 'With historyLines: the events before historyFromSeq were left out.', D2C, 'notification', { method: 'session/replayed', params: { sessionId: SESSION_ID, throughSeq: 240, historyFromSeq: 180 } }, { method: 'session/replayed' });
  add('notification-session-screen', 'With screen: true, the running command\'s screen instead of its output through atSeq; data draws it on a cleared 80×24 terminal.', D2C, 'notification', {
    method: 'session/screen',
    params: {
      sessionId: SESSION_ID,
      turnId: TURN_ID,
      atSeq: 57,
      cols: 80,
      rows: 24,
      data: Buffer.from('\x1b[1mcounter\x1b[0m 300\r\nsecond line\x1b[2;12H', 'utf8'),
      scrollback: 'an older line\nand the one after it',
      alternate: false,
    },
  }, { method: 'session/screen' });
  add('notification-session-lagged', '', D2C, 'notification', { method: 'session/lagged', params: { sessionId: SESSION_ID, resumeFromSeq: 120 } }, { method: 'session/lagged' });
  add('notification-session-notice', 'What no event can carry: here, the session\'s disk is full.', D2C, 'notification', {
    method: 'session/notice',
    params: { sessionId: SESSION_ID, reason: 'disk_full', message: `The disk holding /home/ada/.astra/data/sessions/${SESSION_ID}/journal.astra is full; free some space there.`, path: `/home/ada/.astra/data/sessions/${SESSION_ID}/journal.astra` },
  }, { method: 'session/notice' });
  add('notification-session-events', 'Several events in one frame; sent only to a client that set capabilities.batchEvents.', D2C, 'notification', {
    method: 'session/events',
    params: {
      sessionId: SESSION_ID,
      events: [
        event(7, 'command.output', { turnId: TURN_ID, stream: 'stdout', data: Buffer.from('line 1\n') }),
        event(8, 'command.output', { turnId: TURN_ID, stream: 'stderr', data: Buffer.from('line 2\n') }),
      ],
    },
  }, { method: 'session/events' });
  add('notification-session-closed', 'The last frame of a subscription the daemon ended: here, another client deleted the session.', D2C, 'notification', { method: 'session/closed', params: { sessionId: SESSION_ID, reason: 'deleted' } }, { method: 'session/closed' });
  add('notification-session-invalidated', 'The last frame of a subscription whose backlog could not be read back (a damaged journal): subscribe again from resyncFrom.', D2C, 'notification', { method: 'session/invalidated', params: { sessionId: SESSION_ID, reason: 'journal_damage', resyncFrom: 3005 } }, { method: 'session/invalidated' });
  add('notification-approval-resolved', 'To the client asked: the approval was settled another way (here, it expired).', D2C, 'notification', { method: 'approval/resolved', params: { sessionId: SESSION_ID, approvalId: APPROVAL_ID, decision: 'deny', reason: 'expired' } }, { method: 'approval/resolved' });
  add('notification-lease-revoked', '', D2C, 'notification', { method: 'lease/revoked', params: { sessionId: SESSION_ID, reason: 'takeover', epoch: 2, holder: { connectionId: 'c_0002', clientName: 'astra attach', pid: 4242 } } }, { method: 'lease/revoked' });
  add('notification-daemon-shutting-down', '', D2C, 'notification', { method: 'daemon/shuttingDown', params: { reason: 'astra daemon stop' } }, { method: 'daemon/shuttingDown' });

  // ---- events (session/event notifications), one per type ----
  const data = {
    'session.created': { title: 'build fix', cwd: '/home/ada/project', engine: 'shell', approvalPolicy: 'ask' },
    'session.updated': { title: 'renamed' },
    'turn.started': { turnId: TURN_ID, input: { text: 'echo hello from python' } },
    'message.user': { turnId: TURN_ID, text: 'echo hello from python' },
    'message.delta': { turnId: TURN_ID, text: 'partial 🚀 a\u0000b' },
    'message.completed': { turnId: TURN_ID, text: 'done', finishReason: 'stop' },
    'tool.call': { turnId: TURN_ID, callId: 'call_1', name: 'shell', arguments: '{"command":"ls -la"}' },
    'tool.result': { turnId: TURN_ID, callId: 'call_1', status: 'succeeded', exitCode: 0, output: 'total 0\n[exit code 0]' },
    usage: { turnId: TURN_ID, promptTokens: 812, completionTokens: 64 },
    'command.started': { turnId: TURN_ID, command: 'echo hello from python', cwd: '/home/ada/project', pid: 51234 },
    'command.output': { turnId: TURN_ID, stream: 'stdout', data: Buffer.from('hello from python\n') },
    'command.completed': { turnId: TURN_ID, exitCode: 0, signal: null },
    'approval.requested': { turnId: TURN_ID, approvalId: APPROVAL_ID, command: 'echo hello from python', cwd: '/home/ada/project', revision: 1, expiresAt: T0 + 60000 },
    'approval.resolved': { turnId: TURN_ID, approvalId: APPROVAL_ID, decision: 'approve', by: { clientName: 'astra-python', connectionId: CONNECTION_ID } },
    'lease.changed': { epoch: 1, holder: { connectionId: CONNECTION_ID, clientName: 'astra-python', pid: 4242 }, reason: 'acquired' },
    'turn.completed': { turnId: TURN_ID, status: 'completed', exitCode: 0 },
    error: { message: 'the engine crashed', reason: 'internal_error', turnId: TURN_ID },
    'thought.delta': { turnId: TURN_ID, text: 'Reading the failing test first.' },
    'plan.updated': { turnId: TURN_ID, entries: [{ content: 'fix the parser', priority: 'high', status: 'in_progress' }] },
    'tool.updated': { turnId: TURN_ID, callId: 'call_1', status: 'completed', content: [{ type: 'diff', path: '/home/ada/project/a.txt', oldText: 'old', newText: 'new' }] },
    'acp.session': { turnId: TURN_ID, acpSessionId: 'ses-agent-1', agent: 'opencode acp', how: 'new' },
    'acp.update': { turnId: TURN_ID, kind: 'usage_update', update: { sessionUpdate: 'usage_update', used: 1200, size: 200000 } },
  };
  const chatError = { turnId: TURN_ID, code: 'model_unreachable', message: 'is a model server listening at http://127.0.0.1:11434/v1? start `ollama serve` or set ASTRA_CHAT_BASE_URL', retryable: true };
  let seq = 1;
  for (const type of p.EVENT_TYPES) {
    if (!(type in data)) throw new Error(`no test vector for event type ${type}: add one to scripts/vectors-lib.mjs`);
    add(`event-${type}`, `A ${type} event.`, D2C, 'notification', { method: 'session/event', params: event(seq++, type, data[type]) }, {
      method: 'session/event',
      eventType: type,
    });
  }
  add('event-command.output-binary', 'Output is bin: invalid UTF-8 and NUL bytes are kept exactly.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'command.output', { turnId: TURN_ID, stream: 'stderr', data: Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0x0a]) }),
  }, { method: 'session/event', eventType: 'command.output' });
  add('event-command.completed-killed', 'Required-but-nil: exitCode is nil (killed by a signal), not absent.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'command.completed', { turnId: TURN_ID, exitCode: null, signal: 'SIGKILL' }),
  }, { method: 'session/event', eventType: 'command.completed' });
  add('event-turn.completed-exitcode-nil', 'Optional and nullable: exitCode nil (no command ran) vs absent in event-turn.completed-cancelled.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'turn.completed', { turnId: TURN_ID, status: 'failed', exitCode: null, error: 'spawn /bin/sh ENOENT' }),
  }, { method: 'session/event', eventType: 'turn.completed' });
  add('event-error-chat', 'A chat engine fault: code and retryable, no reason.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'error', chatError),
  }, { method: 'session/event', eventType: 'error' });
  add('event-tool.result-denied', 'A denied tool call: exitCode absent.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'tool.result', { turnId: TURN_ID, callId: 'call_2', status: 'denied', output: '[not run: the user denied this command]' }),
  }, { method: 'session/event', eventType: 'tool.result' });
  add('event-turn.completed-cancelled', 'exitCode absent.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'turn.completed', { turnId: TURN_ID, status: 'cancelled' }),
  }, { method: 'session/event', eventType: 'turn.completed' });
  add('event-lease.changed-released', 'holder is nil (required, nullable).', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'lease.changed', { epoch: 1, holder: null, reason: 'grace', graceUntil: T0 + 30000 }),
  }, { method: 'session/event', eventType: 'lease.changed' });
  add('event-unknown-type', 'An event type from a newer daemon: valid, and clients ignore it.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'tool.invoked', { tool: 'grep', future: true }),
  }, { method: 'session/event', eventType: 'tool.invoked' });
  add('event-unknown-fields', 'Unknown fields from a newer peer are ignored, at every level.', D2C, 'notification', {
    method: 'session/event',
    params: { ...event(seq++, 'message.completed', { turnId: TURN_ID, text: 'done', tokens: 12 }), origin: 'future' },
  }, { method: 'session/event', eventType: 'message.completed' });
  add('event-turn.completed-denied', 'A shell turn whose command was denied: cancelled, with reason (absent on a cancel).', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'turn.completed', { turnId: TURN_ID, status: 'cancelled', reason: 'denied: the command was not run' }),
  }, { method: 'session/event', eventType: 'turn.completed' });
  add('event-message.completed-text-from-deltas', 'To a subscription with textFromDeltas: the text is empty; the message\'s text is the concatenation of the turn\'s message.delta texts since its turn.started or previous message.completed.', D2C, 'notification', {
    method: 'session/event',
    params: event(seq++, 'message.completed', { turnId: TURN_ID, text: '', finishReason: 'stop', textFromDeltas: true }),
  }, { method: 'session/event', eventType: 'message.completed' });

  // ---- refused on purpose ----
  add('invalid-integer-2pow53-plus-1', 'sinceSeq 2^53+1 is outside the safe range: refused as invalid_request.', C2D, 'request', {
    id: 16,
    method: 'session/read',
    params: { sessionId: SESSION_ID, sinceSeq: 9007199254740993n },
  }, { method: 'session/read', rejectedWith: 'invalid_request' });
  add('invalid-integer-min-int64', 'An id of -2^63 (int64 minimum) is outside the safe range: refused as invalid_request.', C2D, 'request', {
    id: -9223372036854775808n,
    method: 'ping',
    params: {},
  }, { method: 'ping', rejectedWith: 'invalid_request' });
  add('invalid-forbidden-key', 'A __proto__ key anywhere is refused as forbidden_key.', C2D, 'request', {
    id: 17,
    method: 'session/create',
    params: JSON.parse('{"title": "x", "__proto__": {"polluted": true}}'),
  }, { method: 'session/create', rejectedWith: 'forbidden_key' });
  return v;
}

/** The two files of a vector: the frame bytes and the pretty JSON of its meaning. */
export function renderVector(p, ipc, vector) {
  const limit = vector.direction === 'client-to-daemon' ? p.LIMITS.maxRequestBytes : p.LIMITS.maxFrameBytes;
  const frame = ipc.encodeFrame(vector.message, limit);
  const { message, ...rest } = vector;
  const json = JSON.stringify({ ...rest, payloadBytes: frame.length - p.FRAME_HEADER_BYTES, message: toMeaning(message) }, null, 2) + '\n';
  return { bin: Buffer.from(frame), json };
}
