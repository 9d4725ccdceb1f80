import { describe, it, expect } from 'vitest';
import {
  AstraError,
  checkNotificationParams,
  checkRequestParams,
  checkServerRequestParams,
  parseMessage,
  parseTrustedMessage,
  validateEvent,
  validateEventEnvelope,
  type ErrorReason,
} from '../../protocol/index.js';

function reasonOf(fn: () => unknown): ErrorReason | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof AstraError) return e.reason;
    throw e;
  }
  return undefined;
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return '';
}

describe('parseMessage', () => {
  it('tags each well-formed envelope with its kind', () => {
    expect(parseMessage({ id: 1, method: 'ping', params: {} })).toMatchObject({ kind: 'request', id: 1, method: 'ping' });
    expect(parseMessage({ id: 'abc', result: { now: 1 } })).toMatchObject({ kind: 'response', id: 'abc' });
    expect(parseMessage({ id: null, error: { code: -32700, message: 'bad', data: { reason: 'parse_error' } } })).toMatchObject({ kind: 'error', id: null });
    expect(parseMessage({ method: 'initialized' })).toMatchObject({ kind: 'notification', method: 'initialized' });
    expect(parseMessage({ method: 'initialized', id: null })).toMatchObject({ kind: 'notification' });
  });

  it('ignores unknown fields from a newer peer', () => {
    expect(parseMessage({ id: 2, method: 'ping', params: {}, future: { x: 1 } })).toMatchObject({ kind: 'request', id: 2 });
  });

  it('rejects wrong shapes and wrong types with invalid_request', () => {
    const bad: unknown[] = [
      null,
      7,
      'text',
      [1, 2],
      {},
      { id: 1 },
      { id: 1, method: 3 },
      { id: 1, method: '' },
      { id: 1, method: 'x'.repeat(129) },
      { id: 1, method: 'm', params: 'str' },
      { id: 1, method: 'm', params: [1] },
      { id: 1.5, method: 'm' },
      { id: '', method: 'm' },
      { id: true, method: 'm' },
      { id: 1, method: 'm', trace: 5 },
      { id: 1, method: 'm', trace: { traceparent: 5 } },
      { result: 1 },
      { id: [1], result: 1 },
      { id: 1, error: 'nope' },
      { id: 1, error: { code: 'x', message: 'm' } },
      { id: 1, error: { code: 1.5, message: 'm' } },
      { id: 1, error: { code: 1, message: 'm', data: { reason: 3 } } },
      { id: 1, method: 'm', params: { n: Number.NaN } },
      { id: 1, method: 'm', params: { d: new Date() } },
      { id: 1, method: 'm', params: { m: new Map() } },
      { id: 1, method: 'm', params: { big: 2n ** 70n } },
    ];
    for (const value of bad) expect(reasonOf(() => parseMessage(value)), JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).toBe('invalid_request');
  });

  it('rejects nesting deeper than the limit with invalid_request', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(reasonOf(() => parseMessage({ id: 1, method: 'm', params: { deep } }))).toBe('invalid_request');
  });

  it('rejects forbidden keys at any depth with forbidden_key', () => {
    for (const key of ['__proto__', '__proto_', 'constructor', 'prototype']) {
      const inner = JSON.parse(`{"${key}": {"x": 1}}`) as unknown;
      expect(reasonOf(() => parseMessage({ id: 1, method: 'm', params: inner })), key).toBe('forbidden_key');
      expect(reasonOf(() => parseMessage({ id: 1, method: 'm', params: { a: [{ b: inner }] } })), `${key} deep`).toBe('forbidden_key');
      expect(reasonOf(() => parseMessage(inner)), `${key} top`).toBe('forbidden_key');
    }
  });
});

describe('checkRequestParams', () => {
  it('rejects unknown methods with method_not_found', () => {
    expect(reasonOf(() => checkRequestParams('session/explode', {}))).toBe('method_not_found');
    expect(reasonOf(() => checkRequestParams('toString', {}))).toBe('method_not_found');
    expect(reasonOf(() => checkRequestParams('__proto__', {}))).toBe('method_not_found');
  });

  it('accepts the params each method documents', () => {
    const good: [string, unknown][] = [
      ['initialize', { protocolVersion: 1, token: 't', clientInfo: { name: 'tui', version: '1.0' } }],
      ['initialize', { protocolVersion: 1, token: 't', clientInfo: { name: 'tui', version: '1.0' }, instanceId: 'i', capabilities: { optOutNotificationMethods: ['session/event'] } }],
      ['ping', {}],
      ['ping', undefined],
      ['daemon/status', {}],
      ['daemon/shutdown', { reason: 'test' }],
      ['session/create', { title: 't', cwd: '/tmp', approvalPolicy: 'auto' }],
      ['session/list', { limit: 10, includeArchived: true }],
      ['session/read', { sessionId: 's', sinceSeq: 0, limit: 100 }],
      ['session/subscribe', { sessionId: 's', sinceSeq: 5 }],
      ['lease/acquire', { sessionId: 's', takeover: true }],
      ['turn/start', { sessionId: 's', epoch: 3, input: { text: 'ls' }, idempotencyKey: 'k1' }],
      ['turn/cancel', { sessionId: 's', epoch: 3 }],
      ['mutation/status', { sessionId: 's', idempotencyKey: 'k1' }],
    ];
    for (const [method, params] of good) expect(reasonOf(() => checkRequestParams(method, params)), method).toBeUndefined();
  });

  it('rejects wrong types and missing fields with invalid_params naming the field', () => {
    const bad: [string, unknown, RegExp][] = [
      ['initialize', { protocolVersion: '1', token: 't', clientInfo: { name: 'a', version: 'b' } }, /protocolVersion must be an integer/],
      ['initialize', { protocolVersion: 1, clientInfo: { name: 'a', version: 'b' } }, /token is required/],
      ['initialize', { protocolVersion: 1, token: 't', clientInfo: { name: 'a' } }, /clientInfo\.version is required/],
      ['session/create', { approvalPolicy: 'sometimes' }, /approvalPolicy must be one of ask, auto/],
      ['session/list', { limit: 0 }, /limit must be >= 1/],
      ['session/read', {}, /sessionId is required/],
      ['session/read', { sessionId: 's', sinceSeq: -1 }, /sinceSeq must be >= 0/],
      ['turn/start', { sessionId: 's', epoch: 1, input: { text: 'x' } }, /idempotencyKey is required/],
      ['turn/start', { sessionId: 's', epoch: 1.5, input: { text: 'x' }, idempotencyKey: 'k' }, /epoch must be an integer/],
      ['turn/start', { sessionId: 's', epoch: 1, input: 'x', idempotencyKey: 'k' }, /input must be an object/],
      ['lease/acquire', { sessionId: 's', takeover: 'yes' }, /takeover must be a boolean/],
      ['session/rename', { sessionId: 's', epoch: 1 }, /title is required/],
    ];
    for (const [method, params, pattern] of bad) {
      expect(reasonOf(() => checkRequestParams(method, params)), method).toBe('invalid_params');
      expect(messageOf(() => checkRequestParams(method, params)), method).toMatch(pattern);
    }
  });

  it('checks server requests and notifications against their own tables', () => {
    expect(reasonOf(() => checkServerRequestParams('approval/request', { sessionId: 's', approvalId: 'a', turnId: 't', command: 'ls', cwd: '/' }))).toBeUndefined();
    expect(reasonOf(() => checkServerRequestParams('approval/request', { sessionId: 's' }))).toBe('invalid_params');
    expect(reasonOf(() => checkServerRequestParams('approval/other', {}))).toBe('method_not_found');
    expect(checkNotificationParams('initialized', {}, 'toDaemon')).toBe(true);
    expect(checkNotificationParams('session/replayed', { sessionId: 's', throughSeq: 4 }, 'toClient')).toBe(true);
    expect(checkNotificationParams('session/brand-new', {}, 'toClient')).toBe(false);
    expect(reasonOf(() => checkNotificationParams('session/lagged', { sessionId: 's' }, 'toClient'))).toBe('invalid_params');
  });
});

describe('validateEvent', () => {
  const base = { sessionId: 's', seq: 1, ts: 1_700_000_000_000 };

  it('accepts known events with the right data and unknown event types from a newer daemon', () => {
    expect(() => validateEvent({ ...base, type: 'message.delta', data: { turnId: 't', text: 'hi' } })).not.toThrow();
    expect(() => validateEvent({ ...base, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: Buffer.from('x') } })).not.toThrow();
    expect(() => validateEvent({ ...base, type: 'future.thing', data: { anything: 1 } })).not.toThrow();
  });

  it('rejects a bad envelope or bad data for a known type with invalid_params', () => {
    expect(reasonOf(() => validateEvent({ ...base, seq: 0, type: 'error', data: { message: 'm' } }))).toBe('invalid_params');
    expect(reasonOf(() => validateEvent({ ...base, ts: 1.5, type: 'error', data: { message: 'm' } }))).toBe('invalid_params');
    expect(reasonOf(() => validateEvent({ ...base, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: 'not bytes' } }))).toBe('invalid_params');
    expect(reasonOf(() => validateEvent({ ...base, type: 'turn.completed', data: { turnId: 't', status: 'exploded' } }))).toBe('invalid_params');
  });
});

describe('validateEventEnvelope (a daemon trusted for shape)', () => {
  const base = { sessionId: 's', seq: 1, ts: 1_700_000_000_000 };

  it("checks the envelope exactly as validateEvent does, but not a known type's data", () => {
    expect(validateEventEnvelope({ ...base, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: 'not bytes' } }).seq).toBe(1);
    for (const bad of [
      { ...base, seq: 0, type: 'error', data: {} },
      { ...base, seq: 2 ** 53, type: 'error', data: {} },
      { ...base, seq: '1', type: 'error', data: {} },
      { ...base, ts: 1.5, type: 'error', data: {} },
      { ...base, ts: -1, type: 'error', data: {} },
      { ...base, sessionId: '', type: 'error', data: {} },
      { ...base, sessionId: 'x'.repeat(129), type: 'error', data: {} },
      { ...base, type: 7, data: {} },
      { ...base, type: 'error', data: [] },
      { ...base, type: 'error' },
      { sessionId: 's', ts: 1, type: 'error', data: {} },
      null,
      [base],
    ]) {
      expect(reasonOf(() => validateEvent(bad)), JSON.stringify(bad)).toBe('invalid_params');
      let message = '';
      try {
        validateEventEnvelope(bad);
      } catch (e) {
        message = (e as AstraError).reason + ': ' + (e as AstraError).message;
      }
      let full = '';
      try {
        validateEvent(bad);
      } catch (e) {
        full = (e as AstraError).reason + ': ' + (e as AstraError).message;
      }
      expect(message, JSON.stringify(bad)).toBe(full);
    }
  });

  it('parseTrustedMessage checks the envelope but does not walk the values inside', () => {
    const withDate = { method: 'session/event', params: { when: new Date(0) } };
    expect(reasonOf(() => parseMessage(withDate))).toBe('invalid_request');
    expect(parseTrustedMessage(withDate)).toMatchObject({ kind: 'notification', method: 'session/event' });
    expect(reasonOf(() => parseTrustedMessage({ method: 'x', params: new Date(0) }))).toBe('invalid_request');
    expect(reasonOf(() => parseTrustedMessage({ id: 1.5, result: {} }))).toBe('invalid_request');
    expect(reasonOf(() => parseTrustedMessage('hello'))).toBe('invalid_request');
  });
});

describe('AstraError on the wire', () => {
  it('round-trips reason, code and data, and keeps the code of a reason it does not know', () => {
    const e = new AstraError('lease_held', 'held by tui', { holder: 'c1' });
    const back = AstraError.fromWire(e.toWire());
    expect(back).toMatchObject({ reason: 'lease_held', code: -33023, message: 'held by tui', data: { holder: 'c1' } });
    const future = AstraError.fromWire({ code: -33999, message: 'new thing', data: { reason: 'brand_new' } });
    expect(future.code).toBe(-33999);
    expect(future.reason).toBe('internal_error');
  });
});
