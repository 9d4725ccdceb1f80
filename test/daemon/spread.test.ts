// The hub's spread of a streaming answer (daemon/subscriptions.ts, "Spread"): a session's later
// subscribers get an answer's intermediate message.delta events at their own offsets of 1..10 ms,
// never its first delta or anything else; order is kept. The hub is driven as the runtime drives it
// (the sink's onStored, event by event), with fake timers standing in for the clock, and each frame
// it hands a connection is decoded and timed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SubscriptionHub, spreadOffset } from '../../daemon/subscriptions.js';
import type { Peer } from '../../daemon/peer.js';
import { decode, packEventBody } from '../../ipc/index.js';
import { StoredEvent, type Runtime, type SubscriptionSink } from '../../runtime/index.js';

const SESSION = 'ses_spread';

interface Frame {
  at: number;
  seqs: number[];
}

/** A connection that records the frames the hub sends it: when, and the seqs they carry. */
function fakePeer(id: string, batchEvents = true) {
  const frames: Frame[] = [];
  const conn = {
    closed: false,
    queuedBytes: 0,
    progress: 0,
    sendParts(parts: readonly Uint8Array[]) {
      const msg = decode(Buffer.concat(parts)) as { method: string; params: { seq?: number; events?: { seq: number }[] } };
      const seqs = msg.method === 'session/events' ? msg.params.events!.map((e) => e.seq) : [msg.params.seq!];
      frames.push({ at: performance.now(), seqs });
    },
    drained: () => Promise.resolve(),
    notify() {},
  };
  const peer = { id, conn, batchEvents, mutedNotifications: new Set<string>(), notify() {} } as unknown as Peer;
  return { peer, frames };
}

/** A runtime whose subscriptions are sinks the test feeds, as a session feeds live events. */
function fakeRuntime() {
  const sinks: SubscriptionSink[] = [];
  const runtime = {
    async subscribe(_id: string, sinceSeq: number, sink: SubscriptionSink) {
      sinks.push(sink);
      return { headSeq: sinceSeq, phase: 'live', lastSeq: sinceSeq, unsubscribe() {} };
    },
  } as unknown as Runtime;
  let seq = 0;
  const publish = (type: string, data: Record<string, unknown>, live = true) => {
    seq++;
    const body = Buffer.from(packEventBody({ seq, ts: 1, type, data }) as Buffer);
    const event = live ? StoredEvent.live(SESSION, seq, body, 0, body.length, 1, type, data, undefined) : new StoredEvent(SESSION, seq, body, 0, body.length, undefined);
    for (const s of sinks) s.onStored!(event);
    return seq;
  };
  return { runtime, publish };
}

const delta = (text: string) => ({ turnId: 'turn_1', text });
const seqsUntil = (frames: Frame[], t: number) => frames.filter((f) => f.at <= t).flatMap((f) => f.seqs);

describe('the spread of a streaming answer over its subscribers', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const setUp = async (n: number, opts: { batchEvents?: boolean } = {}) => {
    const { runtime, publish } = fakeRuntime();
    // The hub's clock, injected: the fake performance.now that vi.advanceTimersByTimeAsync moves.
    const hub = new SubscriptionHub(runtime, { maxQueuedBytes: 64 * 1024 * 1024, maxSubscriptionsPerConnection: 16 }, { now: () => performance.now() });
    const peers = [];
    for (let i = 0; i < n; i++) {
      const p = fakePeer(`peer_${i}`, opts.batchEvents ?? true);
      await hub.subscribe(p.peer, SESSION, 0);
      peers.push(p);
    }
    return { publish, frames: peers.map((p) => p.frames) };
  };
  /** Lets this tick's microtasks (the hub's batch flush) run without moving the clock. */
  const settle = () => vi.advanceTimersByTimeAsync(0);

  it('gives the first subscriber offset 0 and the later ones 1..10 ms in turn', () => {
    expect([0, 1, 2, 9, 10, 11, 12, 20, 21].map(spreadOffset)).toEqual([0, 1, 2, 9, 10, 1, 2, 10, 1]);
  });

  it("holds an answer's later deltas for each subscriber's offset, sends the first and the end at once, and keeps the order", async () => {
    const { publish, frames } = await setUp(3);
    const started = publish('turn.started', { turnId: 'turn_1' });
    const first = publish('message.delta', delta('a'));
    await settle();
    for (const f of frames) expect(seqsUntil(f, 0)).toEqual([started, first]);

    await vi.advanceTimersByTimeAsync(10);
    const second = publish('message.delta', delta('b'));
    await settle();
    const t = performance.now();
    // The first subscriber at once; the second 1 ms later, the third 2 ms later.
    expect(seqsUntil(frames[0]!, t)).toEqual([started, first, second]);
    expect(seqsUntil(frames[1]!, t)).toEqual([started, first]);
    expect(seqsUntil(frames[2]!, t)).toEqual([started, first]);
    await vi.advanceTimersByTimeAsync(1);
    expect(seqsUntil(frames[1]!, t + 1)).toEqual([started, first, second]);
    expect(seqsUntil(frames[2]!, t + 1)).toEqual([started, first]);
    await vi.advanceTimersByTimeAsync(1);
    expect(seqsUntil(frames[2]!, t + 2)).toEqual([started, first, second]);

    // A delta held when the answer ends goes with the end, at once, in one frame, before it.
    await vi.advanceTimersByTimeAsync(8);
    const third = publish('message.delta', delta('c'));
    const completed = publish('message.completed', { turnId: 'turn_1', text: 'abc', finishReason: 'stop' });
    await settle();
    const end = performance.now();
    for (const f of frames) expect(seqsUntil(f, end)).toEqual([started, first, second, third, completed]);
    expect(frames[2]!.at(-1)).toEqual({ at: end, seqs: [third, completed] });
    // Nothing is sent twice once the timers would have fired.
    await vi.advanceTimersByTimeAsync(20);
    for (const f of frames) expect(f.flatMap((x) => x.seqs)).toEqual([started, first, second, third, completed]);
  });

  it('sends a delta after a quiet spell at once, and never holds a read-back delta or one for a connection without batches', async () => {
    const { publish, frames } = await setUp(2);
    publish('message.delta', delta('a'));
    await vi.advanceTimersByTimeAsync(60);
    const afterPause = publish('message.delta', delta('b'));
    await settle();
    expect(frames[1]!.at(-1)).toEqual({ at: performance.now(), seqs: [afterPause] });

    await vi.advanceTimersByTimeAsync(10);
    const readBack = publish('message.delta', delta('c'), false);
    await settle();
    expect(frames[1]!.at(-1)).toEqual({ at: performance.now(), seqs: [readBack] });

    const plain = await setUp(2, { batchEvents: false });
    plain.publish('message.delta', delta('a'));
    await vi.advanceTimersByTimeAsync(10);
    const next = plain.publish('message.delta', delta('b'));
    expect(plain.frames[1]!.at(-1)).toEqual({ at: performance.now(), seqs: [next] });
  });
});
