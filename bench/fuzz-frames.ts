// Hostile input for a real daemon: seeded, reproducible frames with valid framing and bad payloads
// (random bytes, mutated and truncated messages, deep nesting, wrong types in envelopes and params,
// non-string map keys), sent by a raw peer that reads every answer. Used by test/ipc/fuzz.test.ts
// (a few thousand frames, asserting no internal_error) and bench/fuzz-memory.ts (100,000 frames,
// measuring what the daemon keeps).
import net from 'node:net';
import { Packr } from 'msgpackr';
import { FrameDecoder, decode, encodeFrame } from '../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION } from '../protocol/index.js';

/** mulberry32: small, fast and the same sequence for the same seed everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A packer that writes whatever it is given (Maps with any keys, bigints, NaN): the fuzzer's
// payloads are meant to break the rules Astra's own encoder keeps.
const rawPackr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });

const METHODS = [
  'ping', 'daemon/status', 'session/create', 'session/list', 'session/read', 'session/subscribe', 'session/unsubscribe',
  'session/rename', 'session/archive', 'session/unarchive', 'session/delete', 'lease/acquire', 'lease/release', 'turn/start', 'turn/cancel',
  'mutation/status', 'initialize', 'initialized', 'approval/request', 'nope/never',
];
const FIELDS = [
  'sessionId', 'sinceSeq', 'limit', 'cursor', 'includeArchived', 'epoch', 'title', 'cwd', 'engine', 'approvalPolicy',
  'onControllerLost', 'idempotencyKey', 'takeover', 'resumeToken', 'input', 'text', 'turnId', 'reason', 'restart',
  'protocolVersion', 'token', 'clientInfo', 'capabilities', 'traceparent', 'tracestate', '__proto__', 'constructor', 'prototype', '',
];

/** Valid params for each method (but never a real lease: a fuzzed turn must not run anything). */
function examples(sessionId: string): [string, Record<string, unknown>][] {
  return [
    ['ping', {}],
    ['daemon/status', {}],
    ['session/create', { title: 't', cwd: '/nonexistent-astra-fuzz', engine: 'shell', approvalPolicy: 'ask', onControllerLost: 'cancel', idempotencyKey: 'k1' }],
    ['session/list', { cursor: 'c', limit: 10, includeArchived: true }],
    ['session/read', { sessionId, sinceSeq: 0, limit: 10 }],
    ['session/subscribe', { sessionId, sinceSeq: 0 }],
    ['session/unsubscribe', { sessionId }],
    ['session/rename', { sessionId, epoch: 1, title: 'x' }],
    ['session/archive', { sessionId, epoch: 1 }],
    ['session/unarchive', { sessionId, epoch: 1 }],
    ['session/delete', { sessionId, epoch: 1 }],
    ['lease/acquire', { sessionId: 'ses_not_a_session', takeover: false, resumeToken: 'r' }],
    ['lease/release', { sessionId, epoch: 1 }],
    ['turn/start', { sessionId, epoch: 1, input: { text: 'true' }, idempotencyKey: 'k2' }],
    ['turn/cancel', { sessionId, epoch: 1, turnId: 't' }],
    ['mutation/status', { sessionId, idempotencyKey: 'k2' }],
    ['mutation/status', { idempotencyKey: 'k1' }],
    ['initialize', { protocolVersion: PROTOCOL_VERSION, token: 'x'.repeat(43), clientInfo: { name: 'n', version: 'v' } }],
  ];
}

export class FrameFuzzer {
  private readonly r: () => number;
  private nextId = 1;
  private readonly examples: [string, Record<string, unknown>][];

  /** `sessionId`: a real session, so reads and subscriptions reach past validation. */
  constructor(seed: number, private readonly sessionId: string) {
    this.r = prng(seed);
    this.examples = examples(sessionId);
  }

  /** A method's valid params with one thing wrong: a field of another type, nil, missing or extra. */
  private wrongParams(): Record<string, unknown> {
    const [method, good] = this.pick(this.examples);
    const params: Record<string, unknown> = structuredClone(good);
    const keys = Object.keys(params);
    const key = keys.length > 0 && this.r() < 0.8 ? this.pick(keys) : this.pick(FIELDS.filter((f) => f !== '__proto__'));
    switch (this.int(4)) {
      case 0: params[key] = null; break;
      case 1: delete params[key]; break;
      case 2:
        if (typeof params[key] === 'object' && params[key] !== null) (params[key] as Record<string, unknown>)[this.pick(['text', 'name', 'version', 'pid'])] = this.value(2);
        else params[key] = this.value(2);
        break;
      default: params[key] = this.value(2);
    }
    return { id: this.r() < 0.1 ? this.value(1) : this.nextId++, method, params: this.r() < 0.05 ? this.value(2) : params };
  }

  private int(n: number): number {
    return Math.floor(this.r() * n);
  }
  private pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  private string(): string {
    switch (this.int(8)) {
      case 0: return '';
      case 1: return 'x'.repeat(129 + this.int(200));
      case 2: return this.pick(FIELDS);
      case 3: return this.sessionId;
      case 4: return String.fromCharCode(...Array.from({ length: 1 + this.int(6) }, () => this.int(0x10000)));
      case 5: return this.pick(METHODS);
      default: return `s${this.int(1e9).toString(36)}`;
    }
  }

  private number(): number | bigint {
    switch (this.int(10)) {
      case 0: return -this.int(1000);
      case 1: return Number.MAX_SAFE_INTEGER + this.int(3);
      case 2: return 2n ** 63n - BigInt(this.int(10));
      case 3: return -(2n ** 63n);
      case 4: return NaN;
      case 5: return this.pick([Infinity, -Infinity, -0, 1e300, 0.5]);
      case 6: return 2 ** 32 + this.int(10);
      default: return this.int(100);
    }
  }

  /** Any value, nested at most `depth` more levels. */
  value(depth: number): unknown {
    const k = this.int(depth > 0 ? 10 : 7);
    switch (k) {
      case 0: return null;
      case 1: return this.r() < 0.5;
      case 2: case 3: return this.number();
      case 4: return this.string();
      case 5: return Buffer.from(Array.from({ length: this.int(8) }, () => this.int(256)));
      case 6: return undefined;
      case 7: return Array.from({ length: this.int(4) }, () => this.value(depth - 1));
      default: {
        // A Map, so that '__proto__' is a key like any other (it would set an object's prototype).
        const o = new Map<string, unknown>();
        for (let i = this.int(4); i > 0; i--) o.set(this.pick(FIELDS), this.value(depth - 1));
        return o;
      }
    }
  }

  /** A request that would pass the envelope check, with plausible params. */
  template(): Record<string, unknown> {
    const method = this.pick(METHODS);
    const params = new Map<string, unknown>();
    for (let i = this.int(4); i > 0; i--) {
      const f = this.pick(FIELDS);
      params.set(f, f === 'sessionId' ? this.sessionId : this.value(1));
    }
    const msg: Record<string, unknown> = { id: this.nextId++, method };
    if (this.r() < 0.9) msg.params = params;
    if (this.r() < 0.1) msg.trace = { traceparent: this.string(), tracestate: this.value(1) };
    return msg;
  }

  /** One payload (the frame header is added by the sender). */
  next(): { kind: string; payload: Buffer } {
    const k = this.int(100);
    if (k < 15) return { kind: 'garbage', payload: Buffer.from(Array.from({ length: this.int(48) }, () => this.int(256))) };
    if (k < 40) {
      const b = Buffer.from(rawPackr.pack(this.template()));
      for (let m = 1 + this.int(4); m > 0; m--) {
        const at = this.int(b.length);
        b[at] = this.r() < 0.5 ? this.int(256) : b[at]! ^ (1 << this.int(8));
      }
      return { kind: 'mutated', payload: b };
    }
    if (k < 55) {
      const b = Buffer.from(rawPackr.pack(this.template()));
      return { kind: 'truncated', payload: b.subarray(0, this.int(b.length)) };
    }
    if (k < 65) {
      // Nesting around the limit (64 levels, the envelope being the first), in params or as the payload.
      const levels = 50 + this.int(30);
      const bytes: number[] = [];
      for (let i = 0; i < levels; i++) bytes.push(...(this.r() < 0.5 ? [0x91] : [0x81, 0xa1, 0x78]));
      bytes.push(0xc0);
      const inner = Buffer.from(bytes);
      if (this.r() < 0.3) return { kind: 'deep', payload: inner };
      const head = Buffer.from(rawPackr.pack({ id: this.nextId++, method: this.pick(METHODS) }));
      // Turn the fixmap of 2 into a fixmap of 3 and append `params: <deep>`.
      head[0] = 0x83;
      return { kind: 'deep', payload: Buffer.concat([head, Buffer.from([0xa6, ...Buffer.from('params')]), inner]) };
    }
    if (k < 75) return { kind: 'params', payload: Buffer.from(rawPackr.pack(this.wrongParams())) };
    if (k < 85) {
      // Wrong types in the envelope or the params.
      const msg = this.template();
      const field = this.pick(['id', 'method', 'params', 'trace', 'result', 'error', 'params']);
      msg[field] = this.value(3);
      return { kind: 'types', payload: Buffer.from(rawPackr.pack(msg)) };
    }
    if (k < 92) {
      // Map keys that are not strings, somewhere in the message.
      const key = this.pick<unknown>([1, -1, 0, null, true, Buffer.from('ab'), 1.5, [1]]);
      const inner = new Map<unknown, unknown>([[key, this.value(1)]]);
      const msg = new Map<unknown, unknown>([
        ['id', this.nextId++],
        ['method', this.pick(METHODS)],
        ['params', this.r() < 0.5 ? inner : { sessionId: this.sessionId, x: inner }],
      ]);
      if (this.r() < 0.3) msg.set(key, 1);
      return { kind: 'keys', payload: Buffer.from(rawPackr.pack(msg)) };
    }
    // Extension types and 0xc1 spliced into a valid message.
    const b = Buffer.from(rawPackr.pack(this.template()));
    const at = this.int(b.length);
    const ext = this.pick([[0xc1], [0xd4, 0x00, 0x00], [0xd6, 0xff, 0, 0, 0, 1], [0xc7, 0x01, 0x05, 0x00]]);
    return { kind: 'ext', payload: Buffer.concat([b.subarray(0, at), Buffer.from(ext), b.subarray(at)]) };
  }
}

export interface Answer {
  id: unknown;
  reason?: string;
  message?: string;
  result?: unknown;
}

/** A raw, initialized connection to a daemon: writes payloads as frames, collects every answer. */
export class RawPeer {
  readonly answers: Answer[] = [];
  closed = false;
  /** The answer to `initialize` (an error such as `overloaded` when the daemon refused). */
  handshake: Answer | undefined;
  private readonly waiters = new Map<unknown, () => void>();
  private closeWaiters: (() => void)[] = [];

  private constructor(private readonly socket: net.Socket) {
    const decoder = new FrameDecoder({
      maxPayloadBytes: LIMITS.maxFrameBytes,
      onFrame: (p) => this.onFrame(p),
      onError: () => socket.destroy(),
    });
    socket.on('data', (c: Buffer) => decoder.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      for (const w of this.closeWaiters.splice(0)) w();
      for (const w of this.waiters.values()) w();
    });
  }

  static async open(endpoint: string, token: string, timeoutMs = 5_000): Promise<RawPeer> {
    const socket = net.createConnection({ path: endpoint });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const peer = new RawPeer(socket);
    const init = { protocolVersion: PROTOCOL_VERSION, token, clientInfo: { name: 'fuzz', version: '1' } };
    peer.handshake = await peer.call('init', 'initialize', init, timeoutMs);
    if (peer.handshake.reason === undefined) peer.send(encodeFrame({ method: 'initialized' }, LIMITS.maxRequestBytes));
    return peer;
  }

  private onFrame(payload: Buffer): void {
    const m = decode(payload) as Record<string, unknown>;
    if (!('id' in m) || m.method !== undefined) return; // notifications and server requests
    const err = m.error as { message?: string; data?: { reason?: string } } | undefined;
    this.answers.push({ id: m.id, reason: err?.data?.reason, message: err?.message, result: m.result });
    this.waiters.get(m.id)?.();
  }

  send(frame: Buffer): void {
    this.socket.write(frame);
  }

  sendPayload(payload: Buffer): void {
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32BE(payload.length, 0);
    this.socket.write(Buffer.concat([header, payload]));
  }

  /** Sends a request and waits for its answer (or the close), failing after `timeoutMs`. */
  call(id: string, method: string, params: unknown, timeoutMs = 5_000): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error(`the daemon closed the connection before ${method} (${id})`));
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new Error(`no answer to ${method} (${id}) within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(id, () => {
        clearTimeout(timer);
        this.waiters.delete(id);
        const a = [...this.answers].reverse().find((x) => x.id === id);
        if (a) resolve(a);
        else reject(new Error(`the daemon closed the connection before answering ${method} (${id})`));
      });
      this.send(encodeFrame({ id, method, params }, LIMITS.maxRequestBytes));
    });
  }

  destroy(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.closeWaiters.push(resolve);
      this.socket.destroy();
    });
  }
}

export interface FuzzReport {
  frames: number;
  byKind: Record<string, number>;
  reasons: Record<string, number>;
  /** One message per distinct error reason and first word pattern, to read what a peer is told. */
  messages: string[];
  reconnects: number;
  /** Frames answered internal_error, as hex, each found alone on a fresh connection. */
  internalErrors: { kind: string; hex: string; message: string | undefined }[];
}

export interface FuzzOptions {
  endpoint: string;
  token: string;
  sessionId: string;
  seed: number;
  maxFrames: number;
  maxMs: number;
  /** Frames sent before a ping waits for the daemon to catch up. */
  window?: number;
}

/**
 * Sends fuzzed frames in windows, each closed by a ping that must be answered; a window that got
 * an internal_error is replayed frame by frame to name the culprit. Reconnects when the daemon
 * closes the connection (a second `initialize` with a bad token, say).
 */
export async function fuzzDaemon(o: FuzzOptions): Promise<FuzzReport> {
  const fuzzer = new FrameFuzzer(o.seed, o.sessionId);
  const window = o.window ?? 64;
  const report: FuzzReport = { frames: 0, byKind: {}, reasons: {}, messages: [], reconnects: 0, internalErrors: [] };
  const until = Date.now() + o.maxMs;
  let peer = await RawPeer.open(o.endpoint, o.token);
  let pings = 0;
  const seen = new Set<string>();
  while (report.frames < o.maxFrames && Date.now() < until) {
    const sent: { kind: string; payload: Buffer }[] = [];
    for (let i = 0; i < window && report.frames < o.maxFrames; i++) {
      const f = fuzzer.next();
      sent.push(f);
      report.frames++;
      report.byKind[f.kind] = (report.byKind[f.kind] ?? 0) + 1;
      peer.sendPayload(f.payload);
    }
    const from = peer.answers.length;
    try {
      await peer.call(`ping-${pings++}`, 'ping', {});
    } catch (e) {
      if (!peer.closed) throw e;
    }
    const got = peer.answers.slice(from);
    for (const a of got) {
      if (!a.reason) continue;
      report.reasons[a.reason] = (report.reasons[a.reason] ?? 0) + 1;
      if (a.message !== undefined && report.messages.length < 2_000 && !seen.has(a.message)) {
        seen.add(a.message);
        report.messages.push(`${a.reason}: ${a.message}`);
      }
    }
    if (got.some((a) => a.reason === 'internal_error')) {
      await peer.destroy();
      for (const f of sent) {
        const alone = await RawPeer.open(o.endpoint, o.token);
        alone.sendPayload(f.payload);
        const before = alone.answers.length;
        await alone.call('after', 'ping', {}).catch(() => undefined);
        const bad = alone.answers.slice(before).find((a) => a.reason === 'internal_error');
        if (bad) report.internalErrors.push({ kind: f.kind, hex: f.payload.toString('hex'), message: bad.message });
        await alone.destroy();
      }
      peer = await RawPeer.open(o.endpoint, o.token);
      report.reconnects++;
    } else if (peer.closed) {
      peer = await RawPeer.open(o.endpoint, o.token);
      report.reconnects++;
    }
    // Long answers (daemon/status) and the journal: give the daemon's answers back to the pool.
    if (peer.answers.length > 10_000) peer.answers.splice(0);
  }
  await peer.destroy();
  return report;
}
