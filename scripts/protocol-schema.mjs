// Builds the published JSON Schema of wire protocol v1 from the protocol tables. Pure: it takes the
// protocol module as an argument, so scripts/gen-schema.mjs can pass dist/ while the drift test
// passes the TypeScript source, and both must produce the same document.

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

function ref(name) {
  return { $ref: `#/$defs/${name}` };
}

function policyOf(policy) {
  const out = { controller: policy.controller, mutates: policy.mutates, idempotent: policy.idempotent };
  if (policy.idempotencyKey) out.idempotencyKey = policy.idempotencyKey;
  return out;
}

/** The envelopes of docs/protocol.md §4, written by hand: they are checked by code (parseMessage), not by a table. */
function envelopeDefs() {
  const id = {
    anyOf: [
      { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
      { type: 'string', minLength: 1, maxLength: 128 },
    ],
  };
  const method = { type: 'string', minLength: 1, maxLength: 128 };
  const params = { anyOf: [{ type: 'object' }, { type: 'null' }], description: 'a map; absent or nil means {}' };
  return {
    RequestId: id,
    Request: {
      type: 'object',
      description: 'client → daemon request, or daemon → client server request (ids in the sender\'s own space)',
      properties: {
        id: ref('RequestId'),
        method,
        params,
        trace: {
          type: 'object',
          description: 'W3C Trace Context, logged by the daemon',
          properties: { traceparent: { type: 'string' }, tracestate: { type: 'string' } },
          additionalProperties: true,
        },
      },
      required: ['id', 'method'],
      additionalProperties: true,
    },
    Response: {
      type: 'object',
      properties: { id: ref('RequestId'), result: { description: 'the method\'s result' } },
      required: ['id', 'result'],
      additionalProperties: true,
    },
    ErrorObject: {
      type: 'object',
      properties: {
        code: { type: 'integer' },
        message: { type: 'string' },
        data: {
          type: 'object',
          properties: { reason: { type: 'string', description: 'stable name; see errors' } },
          required: ['reason'],
          additionalProperties: true,
        },
      },
      required: ['code', 'message'],
      additionalProperties: true,
    },
    Error: {
      type: 'object',
      properties: { id: { anyOf: [ref('RequestId'), { type: 'null' }] }, error: ref('ErrorObject') },
      required: ['id', 'error'],
      additionalProperties: true,
    },
    Notification: {
      type: 'object',
      description: 'no id (or id nil)',
      properties: { method, params },
      required: ['method'],
      additionalProperties: true,
    },
  };
}

/**
 * @param {typeof import('../protocol/index.js')} p the protocol module (source or dist)
 * @returns {Record<string, unknown>} the schema document
 */
export function buildProtocolSchema(p) {
  const defs = {
    ...envelopeDefs(),
    Session: p.sessionSchema.json(),
    Event: p.eventEnvelopeSchema.json(),
  };
  const methods = {};
  for (const name of Object.keys(p.METHODS)) {
    const spec = p.METHODS[name];
    defs[`${name}.params`] = spec.params.json();
    defs[`${name}.result`] = spec.result.json();
    methods[name] = {
      summary: spec.summary,
      policy: policyOf(spec.policy),
      params: ref(`${name}.params`),
      result: ref(`${name}.result`),
    };
  }
  const serverRequests = {};
  for (const name of Object.keys(p.SERVER_REQUESTS)) {
    const spec = p.SERVER_REQUESTS[name];
    defs[`${name}.params`] = spec.params.json();
    defs[`${name}.result`] = spec.result.json();
    serverRequests[name] = {
      summary: spec.summary,
      policy: policyOf(spec.policy),
      params: ref(`${name}.params`),
      result: ref(`${name}.result`),
    };
  }
  const notifications = { clientToDaemon: {}, daemonToClient: {} };
  for (const [table, direction] of [
    [p.CLIENT_NOTIFICATIONS, 'clientToDaemon'],
    [p.SERVER_NOTIFICATIONS, 'daemonToClient'],
  ]) {
    for (const name of Object.keys(table)) {
      if (name === 'session/event') {
        notifications[direction][name] = { params: ref('Event') };
        continue;
      }
      defs[`${name}.params`] = table[name].json();
      notifications[direction][name] = { params: ref(`${name}.params`) };
    }
  }
  const events = {};
  for (const type of Object.keys(p.EVENT_DATA)) {
    defs[`event.${type}.data`] = p.EVENT_DATA[type].json();
    events[type] = { data: ref(`event.${type}.data`) };
  }
  const errors = {};
  for (const [reason, e] of Object.entries(p.ERRORS)) errors[reason] = { code: e.code, summary: e.summary };

  return {
    $schema: DRAFT,
    $id: 'urn:astra:protocol:v1',
    title: 'Astra wire protocol',
    description:
      'Generated from protocol/ by scripts/gen-schema.mjs; do not edit. Frames are a 4-byte big-endian ' +
      'length then one plain MessagePack value. Integers (timestamps included) are MessagePack integers; ' +
      'schemas marked contentEncoding "msgpack-bin" are MessagePack bin. Unknown fields, notifications and ' +
      'event types must be ignored. A field not listed in "required" may be absent or nil. String lengths (minLength/maxLength) are counted by the daemon in ' +
      'UTF-16 code units.',
    protocolVersion: p.PROTOCOL_VERSION,
    supportedProtocolVersions: { ...p.SUPPORTED_PROTOCOL_VERSIONS },
    framing: { headerBytes: p.FRAME_HEADER_BYTES, byteOrder: 'big-endian', payload: 'MessagePack' },
    limits: { ...p.LIMITS },
    anyOf: [ref('Request'), ref('Response'), ref('Error'), ref('Notification')],
    $defs: defs,
    methods,
    serverRequests,
    notifications,
    events,
    errors,
  };
}

/** The file's exact text: stable key order, two-space indent, trailing newline. */
export function renderProtocolSchema(p) {
  return JSON.stringify(buildProtocolSchema(p), null, 2) + '\n';
}
