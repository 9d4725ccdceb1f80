import { describe, it, expect, onTestFinished } from 'vitest';
import type net from 'node:net';
import { Connection, DirectReads, FrameDecoder, arrayHeader, decode, encode, packEventBody, sessionWire, type ConnectionOptions } from '../../ipc/index.js';
import { AstraError, LIMITS, type WireError } from '../../protocol/index.js';
import { Packr } from 'msgpackr';
import { socketPair, waitFor } from './helpers.js';

const SERVER_OPTS: ConnectionOptions = { maxIncomingBytes: LIMITS.maxRequestBytes, maxOutgoingBytes: LIMITS.maxFrameBytes, label: 'daemon side' };
const CLIENT_OPTS: ConnectionOptions = { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, label: 'client side' };

/** Fails the test if anything escapes to the event loop while it runs. */
function watchEventLoop(): unknown[] {
  const escaped: unknown[] = [];
  const onError = (e: unknown) => escaped.push(e);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  onTestFinished(() => {
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
  });
  return escaped;
}

async function connectedPair(serverOpts = SERVER_OPTS, clientOpts = CLIENT_OPTS) {
  const pair = await socketPair();
  onTestFinished(() => pair.close());
  const server = new Connection(pair.server, serverOpts);
  const client = new Connection(pair.client, clientOpts);
  return { server, client, pair };
}

/** A raw peer: writes bytes as it likes and reads back decoded frames. */
async function rawPeer(serverOpts = SERVER_OPTS) {
  const pair = await socketPair();
  onTestFinished(() => pair.close());
  const server = new Connection(pair.server, serverOpts);
  const received: unknown[] = [];
  const decoder = new FrameDecoder({ maxPayloadBytes: LIMITS.maxFrameBytes, onFrame: (p) => received.push(decode(p)), onError: () => {} });
  pair.client.on('data', (c: Buffer) => decoder.push(c));
  let closed = false;
  pair.client.on('close', () => (closed = true));
  const writeFrame = (payload: Buffer | number[]) => {
    const body = Buffer.from(payload);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    pair.client.write(Buffer.concat([header, body]));
  };
  return { server, raw: pair.client, socket: pair.server, received, writeFrame, isClosed: () => closed };
}

type ErrorReply = { id: unknown; error: WireError };

describe('Connection', () => {
  it('with direct reads, frames lent from the reused read buffer leave nothing behind that the next read overwrites: bin values of fast-path batches and of msgpackr frames survive', async () => {
    const reads = new DirectReads();
    const pair = await socketPair(reads.onread);
    onTestFinished(() => pair.close());
    const server = new Connection(pair.server, SERVER_OPTS);
    const client = new Connection(pair.client, { ...CLIENT_OPTS, extensionScan: 'onError', directReads: reads });
    const got: Array<{ method: string; params: unknown }> = [];
    client.onNotification((method, params) => got.push({ method, params }));
    const wire = sessionWire('ses_1');
    const ROUNDS = 40;
    for (let i = 0; i < ROUNDS; i++) {
      // One round at a time, so each read begins at a frame (what lending needs) and the next overwrites the buffer.
      // A batch of output the fast path decodes (its bin copied), a lone message.delta, and a frame msgpackr decodes (from a copy).
      const body = packEventBody({ seq: i, ts: 1, type: 'command.output', data: { turnId: 't', stream: 'stdout', data: Buffer.alloc(100 + i, i & 0xff) } }) as Buffer;
      server.sendParts([wire.batchHead, arrayHeader(1), wire.eventHead, Buffer.from(body.subarray(1))]);
      const delta = packEventBody({ seq: i, ts: 1, type: 'message.delta', data: { turnId: 't', text: `text ${i} `.repeat(50) } }) as Buffer;
      server.sendParts([wire.single, Buffer.from(delta.subarray(1))]);
      server.notify('other', { n: i, bin: Buffer.alloc(50, (i + 1) & 0xff) });
      await waitFor(`round ${i}'s notifications at the client`, () => got.length === 3 * (i + 1), 10_000);
    }
    for (let i = 0; i < ROUNDS; i++) {
      const batch = got[3 * i]!.params as { events: Array<{ data: { data: Buffer } }> };
      expect(Buffer.isBuffer(batch.events[0]!.data.data)).toBe(true);
      expect(batch.events[0]!.data.data.equals(Buffer.alloc(100 + i, i & 0xff))).toBe(true);
      expect((got[3 * i + 1]!.params as { data: { text: string } }).data.text).toBe(`text ${i} `.repeat(50));
      expect((got[3 * i + 2]!.params as { bin: Buffer }).bin.equals(Buffer.alloc(50, (i + 1) & 0xff))).toBe(true);
    }
  });

  it('correlates responses with requests and passes params, trace and ids to the handler', async () => {
    const { server, client } = await connectedPair();
    const seen: unknown[] = [];
    server.onRequest((method, params, ctx) => {
      seen.push({ method, ctx });
      return { echo: params, method };
    });
    const results = await Promise.all([
      client.request('a', { n: 1 }),
      client.request('b', { n: 2 }, { trace: { traceparent: '00-abc-def-01' } }),
      client.request('c'),
    ]);
    expect(results).toEqual([
      { echo: { n: 1 }, method: 'a' },
      { echo: { n: 2 }, method: 'b' },
      { echo: null, method: 'c' },
    ]);
    expect(seen).toEqual([
      { method: 'a', ctx: { id: 1 } },
      { method: 'b', ctx: { id: 2, trace: { traceparent: '00-abc-def-01', tracestate: undefined } } },
      { method: 'c', ctx: { id: 3 } },
    ]);
    expect(client.pendingRequests).toBe(0);
  });

  it('lets either side make requests (server requests use the same correlation)', async () => {
    const { server, client } = await connectedPair();
    client.onRequest((method, params) => ({ decision: method === 'approval/request' ? 'approve' : 'deny', params }));
    await expect(server.request('approval/request', { approvalId: 'a1' })).resolves.toEqual({ decision: 'approve', params: { approvalId: 'a1' } });
  });

  it('turns a thrown AstraError into that error for the peer and any other throw into a generic internal_error', async () => {
    const escaped = watchEventLoop();
    const handlerErrors: unknown[] = [];
    const { client } = await connectedPair({ ...SERVER_OPTS, onHandlerError: (e) => handlerErrors.push(e) }).then(async (p) => {
      p.server.onRequest(async (method) => {
        if (method === 'typed') throw new AstraError('not_found', 'no session s-9', { sessionId: 's-9' });
        if (method === 'sync') throw new Error('secret stack detail');
        await Promise.resolve();
        throw new TypeError('async secret');
      });
      return p;
    });
    const typed = await client.request('typed').catch((e: unknown) => e);
    expect(typed).toBeInstanceOf(AstraError);
    expect(typed).toMatchObject({ reason: 'not_found', code: -33020, message: 'no session s-9', data: { sessionId: 's-9' } });
    for (const m of ['sync', 'async']) {
      const e = (await client.request(m).catch((x: unknown) => x)) as AstraError;
      expect(e.reason).toBe('internal_error');
      expect(e.message).not.toMatch(/secret/);
      expect(JSON.stringify(e.data)).not.toMatch(/secret|stack/);
    }
    expect(handlerErrors).toHaveLength(2);
    expect(escaped).toEqual([]);
  });

  it('delivers notifications in order and keeps going when a notification handler throws', async () => {
    const { server, client } = await connectedPair();
    const got: unknown[] = [];
    client.onNotification(() => {
      throw new Error('handler bug');
    });
    client.onNotification((method, params) => got.push([method, params]));
    for (let i = 0; i < 50; i++) server.notify('session/event', { i });
    server.notify('daemon/shuttingDown');
    await waitFor('51 notifications', () => got.length === 51);
    expect(got[0]).toEqual(['session/event', { i: 0 }]);
    expect(got[49]).toEqual(['session/event', { i: 49 }]);
    expect(got[50]).toEqual(['daemon/shuttingDown', undefined]);
  });

  it('oversized_request_is_rejected_before_send_without_closing_the_connection', async () => {
    const { server, client } = await connectedPair();
    let requestsSeen = 0;
    server.onRequest((_m, params) => {
      requestsSeen++;
      return params;
    });
    const big = { text: 'x'.repeat(LIMITS.maxRequestBytes) };
    const e = (await client.request('turn/start', big).catch((x: unknown) => x)) as AstraError;
    expect(e).toBeInstanceOf(AstraError);
    expect(e.reason).toBe('frame_too_large');
    expect(e.data).toMatchObject({ limit: LIMITS.maxRequestBytes });
    expect(client.pendingRequests).toBe(0);
    expect(() => client.notify('big', big)).toThrow(AstraError);
    expect(client.closed).toBe(false);
    await expect(client.request('ping', { ok: true })).resolves.toEqual({ ok: true });
    expect(requestsSeen).toBe(1);
  });

  it('answers a result too large for its direction with frame_too_large instead of sending it', async () => {
    const { server, client } = await connectedPair({ ...SERVER_OPTS, maxOutgoingBytes: 1000 });
    server.onRequest(() => ({ blob: 'y'.repeat(5000) }));
    const e = (await client.request('session/read').catch((x: unknown) => x)) as AstraError;
    expect(e.reason).toBe('frame_too_large');
    expect(server.closed).toBe(false);
  });

  it('times out a request that gets no answer and ignores the late answer', async () => {
    const { server, client } = await connectedPair();
    let release: (() => void) | undefined;
    server.onRequest(() => new Promise((resolve) => (release = () => resolve('late'))));
    const started = Date.now();
    const e = (await client.request('slow', {}, { timeoutMs: 100 }).catch((x: unknown) => x)) as AstraError;
    expect(e.reason).toBe('request_timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(client.pendingRequests).toBe(0);
    release!();
    server.onRequest(() => 'fresh');
    await expect(client.request('again')).resolves.toBe('fresh');
  });

  it('rejects an aborted request at once', async () => {
    const { server, client } = await connectedPair();
    server.onRequest(() => new Promise(() => {}));
    const ac = new AbortController();
    const p = client.request('hang', {}, { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toMatchObject({ reason: 'request_cancelled', code: -33015 });
    expect(client.pendingRequests).toBe(0);
  });

  it('rejects pending requests with connection_closed when either side closes, and reports the close once', async () => {
    const { server, client } = await connectedPair();
    server.onRequest(() => new Promise(() => {}));
    const pending = Array.from({ length: 20 }, (_, i) => client.request('hang', { i }).catch((e: unknown) => e));
    await waitFor('nothing', () => true);
    const closes: (AstraError | undefined)[] = [];
    client.onClose((e) => closes.push(e));
    server.close();
    const errors = (await Promise.all(pending)) as AstraError[];
    for (const e of errors) expect(e.reason).toBe('connection_closed');
    await waitFor('the client onClose', () => closes.length === 1);
    expect(client.closed).toBe(true);
    await expect(client.request('after')).rejects.toMatchObject({ reason: 'connection_closed' });
    expect(closes).toHaveLength(1);
  });

  it('close() flushes what is queued before ending the socket', async () => {
    const { server, client } = await connectedPair();
    const got: number[] = [];
    client.onNotification((_m, p) => got.push((p as { i: number }).i));
    for (let i = 0; i < 1000; i++) server.notify('n', { i, pad: 'p'.repeat(100) });
    server.close();
    await new Promise<void>((resolve) => client.onClose(() => resolve()));
    expect(got).toHaveLength(1000);
  });

  it('tracks queued bytes and fires onDrain after the socket buffer fills and empties', async () => {
    const { server, client, pair } = await connectedPair();
    pair.client.pause(); // the client does not read, so the server's buffer fills
    let drained = 0;
    server.onDrain(() => drained++);
    const chunk = { data: Buffer.alloc(32 * 1024, 1) };
    for (let i = 0; i < 64; i++) server.notify('n', chunk);
    expect(server.queuedBytes).toBeGreaterThan(2 * 1024 * 1024);
    await waitFor('the batch to reach the socket', () => server.queuedBytes > 0 && server.queuedBytes < 3 * 1024 * 1024);
    let received = 0;
    client.onNotification(() => received++);
    pair.client.resume();
    await waitFor('all 64 frames and a drain event', () => received === 64 && drained > 0);
    expect(server.queuedBytes).toBe(0);
  });
});

describe('Connection with a hostile peer', () => {
  it('answers bytes that are not MessagePack with parse_error (id nil) and keeps the connection', async () => {
    // (an extension type is well-formed MessagePack but not part of the protocol: invalid_request)
    const escaped = watchEventLoop();
    const { server, received, writeFrame, isClosed } = await rawPeer();
    server.onRequest(() => 'ok');
    writeFrame([0xc1]); // never-used byte
    writeFrame([0x92, 0x01]); // truncated array
    writeFrame([0xa5, 0x41]); // truncated string
    writeFrame([0xd4, 0x01, 0x05]); // unknown extension type 1
    writeFrame([0x01, 0x02]); // trailing bytes
    writeFrame(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    writeFrame(encode({ id: 7, method: 'ping', params: {} }));
    await waitFor('7 replies', () => received.length === 7);
    const replies = received as ErrorReply[];
    expect(replies[3]!.error.data!.reason).toBe('invalid_request'); // the extension type
    for (const r of [...replies.slice(0, 3), ...replies.slice(4, 6)]) {
      expect(r.id).toBeNull();
      expect(r.error.code).toBe(-32700);
      expect(r.error.data!.reason).toBe('parse_error');
    }
    expect(replies[6]).toEqual({ id: 7, result: 'ok' });
    expect(isClosed()).toBe(false);
    expect(server.closed).toBe(false);
    expect(escaped).toEqual([]);
  });

  it('rejects msgpackr extension types (Date, RegExp, Set, Error) and records as invalid_request', async () => {
    const { server, received, writeFrame } = await rawPeer();
    server.onRequest(() => 'ok');
    const fancy = new Packr({ moreTypes: true, structuredClone: true } as ConstructorParameters<typeof Packr>[0]);
    writeFrame(fancy.pack({ id: 1, method: 'm', params: { when: new Date(0) } }));
    writeFrame(fancy.pack({ id: 2, method: 'm', params: { re: /x/g } }));
    writeFrame(fancy.pack({ id: 3, method: 'm', params: { set: new Set([1]) } }));
    writeFrame(fancy.pack({ id: 4, method: 'm', params: { err: new Error('e') } }));
    writeFrame(new Packr({ useRecords: true }).pack({ id: 5, method: 'm', params: {} }));
    writeFrame(encode({ id: 6, method: 'm', params: {} }));
    await waitFor('6 replies', () => received.length === 6);
    const replies = received as (ErrorReply | { id: number; result: unknown })[];
    const last = replies.pop();
    expect(last).toEqual({ id: 6, result: 'ok' });
    for (const r of replies) {
      expect('error' in r).toBe(true);
      expect((r as ErrorReply).id).toBeNull();
      expect((r as ErrorReply).error.data!.reason).toBe('invalid_request');
      expect((r as ErrorReply).error.message).toMatch(/extension type/);
    }
  });

  it('rejects prototype keys at any depth with forbidden_key, echoing the id', async () => {
    const { server, received, writeFrame } = await rawPeer();
    let handled = 0;
    server.onRequest(() => handled++);
    const protoKey = (name: string) => Buffer.concat([Buffer.from([0xa0 | name.length]), Buffer.from(name)]);
    // {id: 1, method: "m", params: {"__proto__": {polluted: true}}} written by hand: JS object
    // literals cannot carry an own __proto__ key.
    const raw = (id: number, wrap: (inner: Buffer) => Buffer, name: string) =>
      Buffer.concat([Buffer.from([0x83, 0xa2, 0x69, 0x64, id, 0xa6]), Buffer.from('method'), Buffer.from([0xa1, 0x6d, 0xa6]), Buffer.from('params'), wrap(Buffer.concat([Buffer.from([0x81]), protoKey(name), Buffer.from([0xc3])]))]);
    const top = (inner: Buffer) => inner;
    const deep = (inner: Buffer) => Buffer.concat([Buffer.from([0x81, 0xa1, 0x61, 0x91, 0x81, 0xa1, 0x62]), inner]);
    const cases = [
      [1, top, '__proto__'],
      [2, top, '__proto_'],
      [3, top, 'constructor'],
      [4, top, 'prototype'],
      [5, deep, '__proto__'],
      [6, deep, 'constructor'],
    ] as const;
    for (const [id, wrap, name] of cases) writeFrame(raw(id, wrap, name));
    await waitFor('one reply per case', () => received.length === cases.length);
    const replies = received as ErrorReply[];
    replies.forEach((r, i) => {
      expect(r.id).toBe(cases[i]![0]);
      expect(r.error.code).toBe(-32600);
      expect(r.error.data!.reason).toBe('forbidden_key');
    });
    expect(handled).toBe(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects wrong shapes with invalid_request and keeps serving', async () => {
    const { server, received, writeFrame } = await rawPeer();
    server.onRequest(() => 'ok');
    const bad = [
      [1, 2, 3],
      'just a string',
      42,
      null,
      { id: 1 },
      { id: 2, method: 5 },
      { id: 3, method: '' },
      { id: 4, method: 'm', params: [1, 2] },
      { id: { nested: true }, method: 'm' },
      { id: 1.5, result: 1 },
      { id: 8, method: 'm', trace: 'not a map' },
    ];
    for (const b of bad) writeFrame(encode(b));
    writeFrame(encode({ id: 99, method: 'm' }));
    await waitFor('one reply per message', () => received.length === bad.length + 1);
    const replies = received as ErrorReply[];
    for (const r of replies.slice(0, bad.length)) expect(r.error.data!.reason).toBe('invalid_request');
    expect(replies[4]!.id).toBe(1);
    expect(replies[8]!.id).toBeNull();
    expect(replies[bad.length]).toEqual({ id: 99, result: 'ok' });
  });

  it('does not answer an invalid error message with another error', async () => {
    const errors: unknown[] = [];
    const { received, writeFrame, server } = await rawPeer({ ...SERVER_OPTS, onHandlerError: (e) => errors.push(e) });
    server.onRequest(() => 'ok');
    writeFrame(encode({ id: 1, error: 'not a map' }));
    writeFrame(encode({ id: 2, method: 'm' }));
    await waitFor('the reply to the request', () => received.length === 1);
    expect(received).toEqual([{ id: 2, result: 'ok' }]);
    expect(errors).toHaveLength(1);
  });

  for (const [direction, limit] of [
    ['client→daemon', LIMITS.maxRequestBytes],
    ['daemon→client', LIMITS.maxFrameBytes],
  ] as const) {
    it(`answers an incoming ${direction} header over ${limit} bytes with one frame_too_large and closes`, async () => {
      const escaped = watchEventLoop();
      const opts: ConnectionOptions = { ...SERVER_OPTS, maxIncomingBytes: limit };
      const { server, raw, received, isClosed } = await rawPeer(opts);
      let closeReason: AstraError | undefined;
      server.onClose((e) => (closeReason = e));
      const header = Buffer.alloc(4);
      header.writeUInt32BE(0xffff_fff0, 0);
      raw.write(Buffer.concat([header, Buffer.alloc(100)]));
      await waitFor('the connection to close', () => isClosed());
      // Nothing of the announced size is allocated: frame.test.ts checks the decoder's allocations.
      expect(received).toHaveLength(1);
      const reply = received[0] as ErrorReply;
      expect(reply.id).toBeNull();
      expect(reply.error.code).toBe(-33005);
      expect(reply.error.data).toMatchObject({ reason: 'frame_too_large', size: 0xffff_fff0, limit });
      await waitFor('onClose', () => closeReason !== undefined);
      expect(closeReason!.reason).toBe('frame_too_large');
      expect(escaped).toEqual([]);
    });
  }

  it('closes with frame_timeout when a frame stalls half way', async () => {
    const { server, raw, received, isClosed } = await rawPeer({ ...SERVER_OPTS, frameDeadlineMs: 150 });
    let closeReason: AstraError | undefined;
    server.onClose((e) => (closeReason = e));
    raw.write(Buffer.from([0, 0, 0, 50, 0x81]));
    await waitFor('the connection to close', () => isClosed());
    expect((received[0] as ErrorReply).error.data!.reason).toBe('frame_timeout');
    expect(closeReason!.reason).toBe('frame_timeout');
  });

  it('survives the peer resetting the connection mid-request', async () => {
    const escaped = watchEventLoop();
    const { server, client, pair } = await connectedPair();
    server.onRequest(() => new Promise(() => {}));
    const p = client.request('hang').catch((e: unknown) => e);
    await waitFor('tick', () => true);
    pair.server.destroy();
    expect(((await p) as AstraError).reason).toBe('connection_closed');
    expect(escaped).toEqual([]);
  });
});

describe('Connection outbound queue', () => {
  /** A frame of [i, <64 KiB bin>] sent as parts: the bin goes to the socket by reference. */
  function sendBig(server: Connection, i: number, fill: number): void {
    const bin = Buffer.alloc(64 * 1024, fill);
    const head = Buffer.from([0x92, i, 0xc6, 0, 0, 0, 0]);
    head.writeUInt32BE(bin.length, 3);
    server.sendParts([head, bin]);
  }

  it('hands a backlog to the socket in slices: queuedBytes falls step by step, and drained hears each step', async () => {
    const { server, raw, socket, received } = await rawPeer();
    raw.pause();
    for (let i = 0; i < 64; i++) sendBig(server, i, i);
    await new Promise((r) => setImmediate(r));
    // 4 MiB queued; the socket is handed at most a slice of it (256 KiB, plus the frame that
    // crossed it) — handed over all at once, the whole backlog would go in one writev and drop to 0
    // in one step. How much the kernel took meanwhile depends on its buffers, not asserted.
    const slice = 256 * 1024 + 64 * 1024 + 16;
    expect(socket.writableLength).toBeLessThanOrEqual(slice);
    expect(server.queuedBytes).toBeGreaterThan(socket.writableLength);
    const steps: number[] = [];
    raw.resume();
    for (let q = server.queuedBytes; q > 0; ) {
      await server.drained(q);
      expect(socket.writableLength).toBeLessThanOrEqual(slice);
      expect(server.queuedBytes).toBeLessThan(q);
      q = server.queuedBytes;
      steps.push(q);
    }
    // How many steps a waiter hears depends on how fast the reader drains; each was progress, down to 0.
    expect(steps.at(-1)).toBe(0);
    await waitFor('all 64 frames', () => received.length === 64);
    received.forEach((m, i) => {
      const [n, bin] = m as [number, Uint8Array];
      expect(n).toBe(i);
      expect(bin.length).toBe(64 * 1024);
      expect(bin[0]).toBe(i);
      expect(bin[bin.length - 1]).toBe(i);
    });
  });

  it('close() still sends everything queued, in order, before ending', async () => {
    const { server, raw, received, isClosed } = await rawPeer();
    raw.pause();
    for (let i = 0; i < 40; i++) sendBig(server, i, 255 - i);
    server.close();
    raw.resume();
    await waitFor('the socket to end', () => isClosed());
    expect(received.map((m) => (m as [number])[0])).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(received.every((m, i) => (m as [number, Uint8Array])[1][100] === 255 - i)).toBe(true);
  });
});

// Keep the type import used for the raw socket helpers.
export type { net };

describe('FrameWriter through Connection', () => {
  it('sends any mix of part sizes, whole frames and notifications byte for byte and in order, across batch boundaries', async () => {
    const { server, raw } = await rawPeer();
    // Collect raw payloads: each frame is [seq, bin] whose bin is split into parts of random sizes.
    const payloads: Buffer[] = [];
    const decoder = new FrameDecoder({ maxPayloadBytes: LIMITS.maxFrameBytes, onFrame: (p) => payloads.push(Buffer.from(p)), onError: () => {} });
    raw.removeAllListeners('data');
    raw.on('data', (c: Buffer) => decoder.push(c));
    let seed = 7;
    const rand = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
    const expected: unknown[] = [];
    for (let i = 0; i < 400; i++) {
      const kind = rand(4);
      if (kind === 0) {
        server.notify('n', { i });
        expected.push({ method: 'n', params: { i } });
        continue;
      }
      // Sizes from a few bytes to past the 64 KiB batch, so parts land copied, by reference and split.
      const size = rand(5) === 0 ? 16 * 1024 + rand(80 * 1024) : rand(3000);
      const bin = Buffer.alloc(size);
      for (let b = 0; b < size; b += 97) bin[b] = (i + b) & 0xff;
      const head = Buffer.from([0x92, 0xcd, i >> 8, i & 0xff, 0xc6, 0, 0, 0, 0]);
      head.writeUInt32BE(size, 5);
      const parts: Buffer[] = [head];
      for (let at = 0; at < size; ) {
        const n = Math.min(size - at, 1 + rand(kind === 1 ? 40_000 : 500));
        parts.push(bin.subarray(at, at + n));
        at += n;
      }
      server.sendParts(parts);
      expected.push([i, bin]);
      if (rand(10) === 0) await new Promise((r) => setImmediate(r));
    }
    await waitFor('every frame', () => payloads.length === expected.length);
    // Compared frame by frame, the bins with Buffer.equals: vitest's deep equality walks 5 MB of
    // bins byte by byte (a minute on a loaded machine).
    payloads.forEach((p, i) => {
      const got = decode(p);
      const want = expected[i];
      if (!Array.isArray(want)) return void expect(got, `frame ${i}`).toEqual(want);
      const [n, bin] = got as [number, Uint8Array];
      expect(n, `frame ${i}`).toBe(want[0]);
      expect(Buffer.from(bin.buffer, bin.byteOffset, bin.length).equals(want[1] as Buffer), `frame ${i}: its bin, byte for byte`).toBe(true);
    });
  });
});
