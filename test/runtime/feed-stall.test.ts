// A subscriber's feed stops holding events in the catch-up cache once its reader has taken nothing
// for a while (runtime/feed/subscription-feed.ts, waitForCapacity): a stopped reader, not a daemon that was
// merely busy. Fake timers stand in for the 200 ms, so each case is exact on any machine.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoredEvent, silentLogger } from '../../runtime/index.js';
import { SubscriptionFeed, type FeedSource, type SubscriptionSink } from '../../runtime/feed/subscription-feed.js';

const ev = (seq: number) => StoredEvent.live('s1', seq, Buffer.alloc(8), 0, 8, 0, 'session.updated', { title: `t${seq}` }, undefined);
const turn = () => new Promise((r) => setImmediate(r));

/** Starts a feed whose reader never takes its first backlog, and lets the 200 ms pass: it is stalled. */
async function stallFirstBacklog(feed: { start(): void; readonly state: string }): Promise<void> {
  feed.start();
  await turn();
  await turn();
  vi.advanceTimersByTime(200);
  await turn();
  expect(feed.state).toBe('stalled');
}

function setUp(waitForCapacity: SubscriptionSink['waitForCapacity']) {
  const published: StoredEvent[] = [ev(1)];
  let trims = 0;
  /** Trims made because the feed was declared stalled. */
  let stallTrims = 0;
  let feedRef: SubscriptionFeed | undefined;
  const source: FeedSource = {
    id: 's1',
    logger: silentLogger,
    get publishedSeq() {
      return published.length;
    },
    isClosed: false,
    readPublished: async (after) => published.filter((e) => e.seq > after),
    captureScreen: async () => undefined,
    trimTail: () => {
      trims++;
      if (feedRef?.stalled) stallTrims++;
    },
    drop: () => {},
  };
  let refuse = false;
  const feed = new SubscriptionFeed(source, { onEvent: () => !refuse, waitForCapacity }, 0);
  feedRef = feed;
  return {
    feed,
    trims: () => trims,
    stallTrims: () => stallTrims,
    /** Publishes an event the sink refuses: the feed pauses and waits for capacity. */
    refuseNext: () => {
      refuse = true;
      published.push(ev(published.length + 1));
      feed.offer(published.at(-1)!);
    },
  };
}

describe('the catch-up stall of a feed', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is not declared when the capacity was already on its way when the 200 ms passed (a busy event loop)', async () => {
    // Capacity comes on the next turn of the event loop; the 200 ms pass before that turn (a daemon
    // busy for longer than that, as on a loaded machine).
    const f = setUp(() => {
      const p = new Promise<void>((r) => setImmediate(r));
      queueMicrotask(() => vi.advanceTimersByTime(200));
      return p;
    });
    f.feed.start();
    for (let i = 0; i < 50 && f.feed.phase !== 'live'; i++) await turn();
    f.refuseNext();
    for (let i = 0; i < 20; i++) await turn();
    expect(f.feed.stalled).toBe(false);
    expect(f.stallTrims()).toBe(0);
    f.feed.close();
  });

  it('is declared for a reader that takes nothing (stopped): the cache is trimmed and it holds nothing', async () => {
    const f = setUp(() => new Promise(() => {}));
    f.feed.start();
    for (let i = 0; i < 50 && f.feed.phase !== 'live'; i++) await turn();
    f.refuseNext();
    await turn();
    expect(f.feed.stalled).toBe(false);
    const before = f.trims();
    vi.advanceTimersByTime(200);
    await turn();
    expect(f.feed.stalled).toBe(true);
    expect(f.trims()).toBe(before + 1);
    expect(f.stallTrims()).toBe(1);
    expect(f.feed.neededSeq).toBe(Infinity);
    f.feed.close();
  });

  it('in its first backlog stays replaying, as its handle says, and goes on replaying once the reader takes more', async () => {
    let give: () => void = () => {};
    const f = setUp(() => new Promise<void>((r) => (give = r)));
    await stallFirstBacklog(f.feed);
    expect(f.feed.phase).toBe('replaying');
    give();
    for (let i = 0; i < 50 && f.feed.phase !== 'live'; i++) await turn();
    expect(f.feed.state).toBe('live');
    f.feed.close();
  });

  it('goes back to where it stalled once the reader takes more: paused stays paused, and its handle says so throughout', async () => {
    let hang = false;
    let give: () => void = () => {};
    const f = setUp(() => (hang ? new Promise<void>((r) => (give = r)) : Promise.resolve()));
    f.feed.start();
    for (let i = 0; i < 50 && f.feed.phase !== 'live'; i++) await turn();
    expect(f.feed.state).toBe('live');
    hang = true;
    f.refuseNext();
    await turn();
    vi.advanceTimersByTime(200);
    await turn();
    expect(f.feed.state).toBe('stalled');
    expect(f.feed.phase).toBe('paused');
    give();
    await turn();
    expect(f.feed.state).not.toBe('stalled');
    f.feed.close();
    expect(f.feed.state).toBe('closed');
    expect(f.feed.neededSeq).toBe(Infinity);
  });

  it('a close while stalled stays closed when the wait ends', async () => {
    let give: () => void = () => {};
    const f = setUp(() => new Promise<void>((r) => (give = r)));
    await stallFirstBacklog(f.feed);
    f.feed.close();
    give();
    await turn();
    expect(f.feed.state).toBe('closed');
    expect(f.feed.closed).toBe(true);
  });
});
