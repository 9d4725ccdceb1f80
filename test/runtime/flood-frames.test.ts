// The flood detector of a screen subscriber's feed (runtime/feed/subscription-feed.ts): more than 128 KiB
// of a running command's output within 50 ms turns the output into frames of the command's screen,
// one per frame time while the output keeps coming that fast, and back to output once it slows. The
// feed's clock is injected and its timers are fake, so each case is exact on any machine.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoredEvent, silentLogger } from '../../runtime/index.js';
import { SubscriptionFeed, type FeedSource } from '../../runtime/feed/subscription-feed.js';

const KiB = 1024;
/** The feed's frame time (FRAME_MS). */
const FRAME_MS = 33;

const ev = (seq: number, type: string, bytes = 8) => StoredEvent.live('s1', seq, Buffer.alloc(bytes), 0, bytes, 0, type, { turnId: 't' }, undefined);

/** Runs the immediates and promises the feed's replay waits on (real setImmediate: only timers are fake). */
async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never: ${what}`);
}

function setUp() {
  let clock = 1_000_000;
  let running = true;
  const published: StoredEvent[] = [ev(1, 'turn.started'), ev(2, 'command.started')];
  const source: FeedSource = {
    id: 's1',
    logger: silentLogger,
    get publishedSeq() {
      return published.length;
    },
    isClosed: false,
    readPublished: async (after) => published.filter((e) => e.seq > after),
    // The screen stands for the output published so far.
    captureScreen: async () => {
      const atSeq = published.filter((e) => e.type === 'command.output').at(-1)?.seq ?? 2;
      return { turnId: 't', fromSeq: 2, atSeq, cols: 80, rows: 24, data: Buffer.from(`S${atSeq}`), scrollback: '', alternate: false };
    },
    screenRunning: () => running,
    trimTail: () => {},
    drop: () => {},
  };
  const order: string[] = [];
  const feed = new SubscriptionFeed(
    source,
    { onEvent: (e) => void order.push(`${e.type}#${e.seq}`), onScreen: (s) => void order.push(`screen@${s.atSeq}`) },
    0,
    { screen: true, now: () => clock },
  );
  /** Publishes an event now, as the session does: into the journal's view, then offered to the feed. */
  const publish = (type: string, bytes = 8) => {
    const e = ev(published.length + 1, type, bytes);
    published.push(e);
    feed.offer(e);
    return e.seq;
  };
  return {
    feed,
    order,
    publish,
    advance: (ms: number) => (clock += ms),
    stop: () => (running = false),
  };
}

describe('the flood detector of a screen subscriber', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('delivers output that comes slower than the flood rate, every byte, however much of it', async () => {
    const f = setUp();
    f.feed.start();
    await until('live', () => f.feed.phase === 'live');
    const seqs: number[] = [];
    // 1 MiB in all, but 64 KiB per 60 ms: never 128 KiB within 50 ms.
    for (let i = 0; i < 16; i++) {
      seqs.push(f.publish('command.output', 64 * KiB));
      f.advance(60);
      expect(f.feed.phase).toBe('live');
    }
    expect(f.order).toEqual(['turn.started#1', 'command.started#2', 'screen@2', ...seqs.map((s) => `command.output#${s}`)]);
    f.feed.close();
  });

  it('turns a flood into frames of the screen while it lasts, then delivers output again, each event once and in order', async () => {
    const f = setUp();
    f.feed.start();
    await until('live', () => f.feed.phase === 'live');
    // 192 KiB within one millisecond: the third chunk crosses 128 KiB, and the feed waits for a frame.
    for (let i = 0; i < 3; i++) f.publish('command.output', 64 * KiB);
    expect(f.feed.phase).toBe('paused');
    // Still flooding during the frame's time: this is left out, the next screen stands for it.
    for (let i = 0; i < 3; i++) f.publish('command.output', 64 * KiB);
    f.advance(FRAME_MS);
    await vi.advanceTimersByTimeAsync(FRAME_MS);
    await until('the first frame', () => f.order.includes('screen@8'));
    // The frame left out more than a flood's worth, so another frame follows; meanwhile the output slows.
    expect(f.feed.phase).toBe('paused');
    f.publish('command.output', 1 * KiB);
    f.advance(FRAME_MS);
    await vi.advanceTimersByTimeAsync(FRAME_MS);
    await until('live again', () => f.feed.phase === 'live');
    // Output at a reading pace is delivered again, and the command's end.
    f.advance(100);
    f.publish('command.output', 1 * KiB);
    f.publish('command.completed');
    expect(f.order).toEqual([
      'turn.started#1',
      'command.started#2',
      'screen@2',
      'command.output#3',
      'command.output#4',
      'command.output#5',
      'screen@8',
      'screen@9',
      'command.output#10',
      'command.completed#11',
    ]);
    expect(f.feed.lastSeq).toBe(11);
    f.feed.close();
  });

  it('counts the flood within its window: the same bytes spread over more than 50 ms are no flood', async () => {
    const f = setUp();
    f.feed.start();
    await until('live', () => f.feed.phase === 'live');
    f.publish('command.output', 100 * KiB);
    f.advance(51);
    // 100 + 100 KiB, but the first is outside the window that the second starts.
    f.publish('command.output', 100 * KiB);
    expect(f.feed.phase).toBe('live');
    // 100 + 100 KiB within the window: a flood.
    f.advance(10);
    f.publish('command.output', 100 * KiB);
    expect(f.feed.phase).toBe('paused');
    // The command ends while waiting for the frame: its last screen goes at once, then the end.
    f.stop();
    f.publish('command.completed');
    await until('live', () => f.feed.phase === 'live');
    expect(f.order.slice(2)).toEqual(['screen@2', 'command.output#3', 'command.output#4', 'command.output#5', 'command.completed#6']);
    f.feed.close();
  });
});
