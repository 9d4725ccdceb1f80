import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protocol from '../../protocol/index.js';
import * as ipc from '../../ipc/index.js';
import {
  AstraError,
  ERRORS,
  LIMITS,
  METHODS,
  SERVER_REQUESTS,
  checkNotificationParams,
  checkRequestParams,
  checkServerRequestParams,
  isMethodName,
  parseMessage,
  validateEvent,
  type ErrorReason,
} from '../../protocol/index.js';
import { buildVectors, renderVector, fromMeaning, maxFrameMessage, maxRequestMessage, type WireVector } from '../../scripts/vectors-lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIR = path.join(ROOT, 'test', 'vectors');
const FIX = 'run `npm run build && node scripts/gen-vectors.mjs` and commit test/vectors/';

/** A checked-in vector's JSON: the generator's WireVector plus the payload size it wrote. */
type Vector = WireVector & { payloadBytes: number };

const names = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort();

function load(name: string): { vector: Vector; frame: Buffer } {
  return {
    vector: JSON.parse(fs.readFileSync(path.join(DIR, `${name}.json`), 'utf8')) as Vector,
    frame: fs.readFileSync(path.join(DIR, `${name}.bin`)),
  };
}

function limitFor(direction: Vector['direction']): number {
  return direction === 'client-to-daemon' ? LIMITS.maxRequestBytes : LIMITS.maxFrameBytes;
}

type Checker = { check(v: unknown, p: string): string | undefined };

/** Everything the receiving side checks, for the vector's direction and kind. */
function validate(vector: Vector, value: unknown): void {
  const msg = parseMessage(value);
  expect(msg.kind, `${vector.name}: kind`).toBe(vector.kind);
  const toClient = vector.direction === 'daemon-to-client';
  if (msg.kind === 'request') {
    if (toClient) checkServerRequestParams(msg.method, msg.params);
    else checkRequestParams(msg.method, msg.params);
  } else if (msg.kind === 'notification') {
    expect(checkNotificationParams(msg.method, msg.params, toClient ? 'toClient' : 'toDaemon'), `${vector.name}: known notification`).toBe(true);
    if (msg.method === 'session/event') {
      const e = validateEvent(msg.params);
      expect(e.type).toBe(vector.eventType);
    }
  } else if (msg.kind === 'response') {
    const method = vector.method!;
    const table = (toClient ? METHODS : SERVER_REQUESTS) as Record<string, { result: Checker }>;
    expect(table[method], `${vector.name}: the method it answers`).toBeDefined();
    const problem = table[method]!.result.check(msg.result, 'result');
    if (problem) throw new AstraError('invalid_params', problem);
  } else {
    const reason = msg.error.data?.reason;
    if (reason !== undefined) expect(ERRORS[reason as ErrorReason]?.code, `${vector.name}: code of ${reason}`).toBe(msg.error.code);
  }
}

function reasonOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (e instanceof AstraError) return e.reason;
    throw e;
  }
}

/** Offsets of the msgpack value that follows each occurrence of the fixstr key `key`. */
function valueTagsAfterKey(payload: Buffer, key: string): number[] {
  const k = Buffer.concat([Buffer.from([0xa0 | key.length]), Buffer.from(key)]);
  const tags: number[] = [];
  for (let i = payload.indexOf(k); i !== -1; i = payload.indexOf(k, i + 1)) tags.push(payload[i + k.length]!);
  return tags;
}

/** Calls onTag with the type byte of every msgpack token, skipping str and bin bodies. */
function walkTags(buf: Buffer, onTag: (tag: number) => void): void {
  let p = 0;
  while (p < buf.length) {
    const b = buf[p]!;
    onTag(b);
    if (b <= 0x9f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) p += 1;
    else if (b <= 0xbf) p += 1 + (b & 0x1f);
    else if (b === 0xc4 || b === 0xd9) p += 2 + buf[p + 1]!;
    else if (b === 0xc5 || b === 0xda) p += 3 + buf.readUInt16BE(p + 1);
    else if (b === 0xc6 || b === 0xdb) p += 5 + buf.readUInt32BE(p + 1);
    else if (b === 0xcc || b === 0xd0) p += 2;
    else if (b === 0xcd || b === 0xd1 || b === 0xdc || b === 0xde) p += 3;
    else if (b === 0xce || b === 0xd2 || b === 0xca || b === 0xdd || b === 0xdf) p += 5;
    else if (b === 0xcf || b === 0xd3 || b === 0xcb) p += 9;
    else throw new Error(`unexpected msgpack tag 0x${b.toString(16)} at ${p}`);
  }
}

describe('the wire test vectors', () => {
  it('are exactly what the generator builds from protocol/ and ipc/', () => {
    const built = buildVectors(protocol, ipc);
    expect(names, `the set of vectors in test/vectors differs from the generator's; ${FIX}`).toEqual(built.map((v) => v.name).sort());
    for (const v of built) {
      const { bin, json } = renderVector(protocol, ipc, v);
      const { frame } = load(v.name);
      expect(fs.readFileSync(path.join(DIR, `${v.name}.json`), 'utf8') === json, `${v.name}.json is stale; ${FIX}`).toBe(true);
      expect(frame.equals(bin), `${v.name}.bin is stale; ${FIX}`).toBe(true);
    }
  });

  it('cover every method, server request, notification and event type in at least one vector', () => {
    const vectors = names.map((n) => load(n).vector);
    const methods = new Set(vectors.filter((v) => v.kind === 'request').map((v) => v.method));
    for (const m of ['initialize', 'ping', 'session/create', 'session/subscribe', 'lease/acquire', 'turn/start', 'turn/cancel', 'session/read'])
      expect(methods.has(m), m).toBe(true);
    for (const m of Object.keys(SERVER_REQUESTS)) expect(methods.has(m), m).toBe(true);
    const notified = new Set(vectors.filter((v) => v.kind === 'notification').map((v) => v.method));
    for (const m of [...Object.keys(protocol.CLIENT_NOTIFICATIONS), ...Object.keys(protocol.SERVER_NOTIFICATIONS)]) expect(notified.has(m), m).toBe(true);
    const events = new Set(vectors.map((v) => v.eventType));
    for (const t of protocol.EVENT_TYPES) expect(events.has(t), t).toBe(true);
    for (const k of ['request', 'response', 'error', 'notification']) expect(vectors.some((v) => v.kind === k), k).toBe(true);
  });

  describe.each(names)('%s', (name) => {
    const { vector, frame } = load(name);
    const value = fromMeaning(vector.message) as unknown;

    it('encodes from its JSON meaning to exactly the checked-in frame', () => {
      const encoded = ipc.encodeFrame(value, limitFor(vector.direction));
      expect(encoded.equals(frame)).toBe(true);
    });

    it('has a header that states its payload length, within its direction\'s limit', () => {
      expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
      expect(frame.length - 4).toBe(vector.payloadBytes);
      expect(vector.payloadBytes).toBeLessThanOrEqual(limitFor(vector.direction));
    });

    it('decodes from the frame to exactly its JSON meaning', () => {
      const frames: Buffer[] = [];
      const decoder = new ipc.FrameDecoder({ maxPayloadBytes: limitFor(vector.direction), frameDeadlineMs: 0, onFrame: (f) => frames.push(f), onError: (e) => expect.fail(e.message) });
      // Byte by byte for small frames: the codec must not care how reads split a frame.
      if (frame.length < 512) for (let i = 0; i < frame.length; i++) decoder.push(frame.subarray(i, i + 1));
      else decoder.push(frame);
      expect(frames).toHaveLength(1);
      // msgpackr renames a "__proto__" key to "__proto_" while decoding (so it can never set a
      // prototype); parseMessage then refuses either spelling. Other decoders keep it as sent.
      const expected = vector.rejectedWith === 'forbidden_key' ? JSON.parse(JSON.stringify(vector.message).replaceAll('"__proto__"', '"__proto_"')) : value;
      expect(ipc.decode(frames[0]!)).toStrictEqual(expected);
    });

    if (vector.rejectedWith) {
      it(`is refused by protocol validation as ${vector.rejectedWith}`, () => {
        expect(reasonOf(() => validate(vector, ipc.decode(frame.subarray(4))))).toBe(vector.rejectedWith);
      });
    } else {
      it('passes protocol validation for its direction and kind', () => {
        validate(vector, ipc.decode(frame.subarray(4)));
      });
    }

    it('carries every timestamp and integer as a msgpack integer, never a float', () => {
      const payload = frame.subarray(4);
      for (const key of ['ts', 'now', 'createdAt', 'updatedAt', 'startedAt', 'since', 'graceUntil'])
        for (const tag of valueTagsAfterKey(payload, key)) expect(tag, `${key} is uint64`).toBe(0xcf);
      // No vector holds a float, so no float32/float64 tag may appear outside string and bin bodies.
      const floats: number[] = [];
      walkTags(payload, (tag) => (tag === 0xca || tag === 0xcb ? floats.push(tag) : undefined));
      expect(floats).toEqual([]);
    });
  });
});

describe('the size limits at their edges', () => {
  it('accepts a request of exactly 131072 payload bytes and refuses one byte more before sending', () => {
    const max = maxRequestMessage(protocol, ipc) as { params: { input: { text: string } } };
    expect(ipc.encodeFrame(max, LIMITS.maxRequestBytes).length).toBe(LIMITS.maxRequestBytes + 4);
    expect(max.params.input.text.length).toBeLessThanOrEqual(LIMITS.maxInputChars);
    checkRequestParams('turn/start', max.params);
    const over = { ...max, params: { ...max.params, input: { text: max.params.input.text + 'x' } } };
    expect(reasonOf(() => ipc.encodeFrame(over, LIMITS.maxRequestBytes))).toBe('frame_too_large');
  });

  it('builds a daemon frame of exactly 8388608 payload bytes that a client decodes and validates', () => {
    const max = maxFrameMessage(protocol, ipc) as { result: unknown };
    const frame = ipc.encodeFrame(max, LIMITS.maxFrameBytes);
    expect(frame.readUInt32BE(0)).toBe(LIMITS.maxFrameBytes);
    const frames: Buffer[] = [];
    const decoder = new ipc.FrameDecoder({ maxPayloadBytes: LIMITS.maxFrameBytes, frameDeadlineMs: 0, onFrame: (f) => frames.push(f), onError: (e) => expect.fail(e.message) });
    for (let i = 0; i < frame.length; i += 65536) decoder.push(frame.subarray(i, i + 65536));
    expect(frames).toHaveLength(1);
    const msg = parseMessage(ipc.decode(frames[0]!));
    expect(msg.kind).toBe('response');
    expect(METHODS['session/read'].result.check(msg.kind === 'response' ? msg.result : undefined, 'result')).toBeUndefined();
    // A frame one byte longer is refused from its header alone.
    const big = Buffer.alloc(4);
    big.writeUInt32BE(LIMITS.maxFrameBytes + 1);
    let refused: AstraError | undefined;
    new ipc.FrameDecoder({ maxPayloadBytes: LIMITS.maxFrameBytes, frameDeadlineMs: 0, onFrame: () => expect.fail('accepted'), onError: (e) => (refused = e) }).push(big);
    expect(refused?.reason).toBe('frame_too_large');
  });

  it('only declares methods the method table knows', () => {
    for (const name of names) {
      const { vector } = load(name);
      if (vector.kind === 'request' && vector.direction === 'client-to-daemon') expect(isMethodName(vector.method!), name).toBe(true);
    }
  });
});
