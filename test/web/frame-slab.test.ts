// The shared feed's frame bytes (web/gateway/frame-slab.ts): a tick's frames are one chunk with the
// very bytes of each event's frame, a stream joining mid-chunk gets exactly the frames after its
// seq, and a handed-out chunk is never written over by later ticks (sockets may still hold it).
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { FrameSlab } from '../../web/gateway/frame-slab.js';
import { eventFrame } from '../../web/gateway/sse-frames.js';

const output = (seq: number, bytes: number): SessionEvent =>
  ({ sessionId: 'ses_1', seq, ts: 1764590000000 + seq, type: 'command.output', data: { turnId: 'turn_1', stream: 'stdout', data: Buffer.alloc(bytes, seq % 251) } }) as SessionEvent;
const message = (seq: number): SessionEvent =>
  ({ sessionId: 'ses_1', seq, ts: 1764590000000 + seq, type: 'message.delta', data: { turnId: 'turn_1', text: `é ${seq} "quoted" ✓` } }) as SessionEvent;

const bytesOf = (events: SessionEvent[]): Buffer => Buffer.from(events.map((e) => eventFrame(e).text).join(''), 'utf8');

describe('the shared feed\'s frame slab', () => {
  it('hands out each tick as one chunk of the events\' frames, and the rest after any seq of it', () => {
    const slab = new FrameSlab(10);
    expect(slab.take()).toBeUndefined();
    const tick = [output(11, 200), message(12), output(13, 0), output(15, 1000)]; // seq 14 was not delivered (an unknown type)
    for (const e of tick) slab.append(e);
    const chunk = slab.take()!;
    expect(chunk.afterSeq).toBe(10);
    expect(chunk.lastSeq).toBe(15);
    expect(chunk.bytes.equals(bytesOf(tick))).toBe(true);
    expect(chunk.from(10).equals(bytesOf(tick))).toBe(true);
    expect(chunk.from(11).equals(bytesOf(tick.slice(1)))).toBe(true);
    expect(chunk.from(12).equals(bytesOf(tick.slice(2)))).toBe(true);
    expect(chunk.from(13).equals(bytesOf(tick.slice(3)))).toBe(true);
    expect(chunk.from(14).equals(bytesOf(tick.slice(3)))).toBe(true);
    expect(chunk.from(15).length).toBe(0);
    expect(slab.takenSeq).toBe(15);
    expect(slab.take()).toBeUndefined();
  });

  it('keeps handed-out chunks intact across ticks and slabs, and a tick in one chunk when it outgrows its slab', () => {
    const slab = new FrameSlab(0);
    const kept: Array<{ bytes: Buffer; want: Buffer }> = [];
    let seq = 0;
    // Ticks of growing size, past the 256 KiB slab several times; the last tick alone is larger than a slab.
    for (const [events, size] of [[10, 100], [500, 300], [50, 4000], [2000, 200], [120, 60000]] as const) {
      const tick = Array.from({ length: events }, () => output(++seq, size));
      for (const e of tick) slab.append(e);
      const chunk = slab.take()!;
      expect(chunk.afterSeq).toBe(seq - events);
      kept.push({ bytes: chunk.bytes, want: bytesOf(tick) });
    }
    for (const k of kept) expect(k.bytes.equals(k.want)).toBe(true);
  });
});
