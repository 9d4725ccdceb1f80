// The SSE frame encoder's fast path for command.output gives exactly the bytes of the generic path,
// and anything it does not recognise exactly goes the generic way.
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { eventFrame, genericEventFrame, OutputTemplate } from '../../web/gateway/sse-frames.js';

const output = (data: Record<string, unknown>, over: Partial<SessionEvent> = {}): SessionEvent =>
  ({ sessionId: 'ses_01HXYZ', seq: 42, ts: 1764590000123, type: 'command.output', data, ...over }) as SessionEvent;

describe('SSE frames', () => {
  it('writes command.output by the template with the same bytes as JSON.stringify', () => {
    const all = new Uint8Array(256).map((_, i) => i);
    for (const e of [
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('hello\n') }),
      output({ turnId: 'turn_2', stream: 'stderr', data: all.subarray(3, 250) }),
      output({ turnId: 't', stream: 'stdout', data: new Uint8Array(0) }),
    ]) {
      const fast = eventFrame(e);
      expect(fast.ascii).toBe(true);
      expect(Buffer.byteLength(fast.text)).toBe(fast.text.length);
      expect(fast.text).toBe(genericEventFrame(e));
      const json = JSON.parse(fast.text.split('\ndata: ')[1]!);
      expect(Buffer.from(json.data.data, 'base64')).toEqual(Buffer.from((e.data as { data: Uint8Array }).data));
    }
  });

  it('takes the generic path for what the template does not cover: ids needing escapes, other fields or order, other events', () => {
    const cases: SessionEvent[] = [
      output({ turnId: 'turn "quoted"\n', stream: 'stdout', data: Buffer.from('x') }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x') }, { sessionId: 'ses_\u2028' }),
      output({ stream: 'stdout', turnId: 'turn_1', data: Buffer.from('x') }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x'), extra: true }),
      output({ turnId: 'turn_1', stream: 'stdout', data: 'text, not bytes' }),
      { sessionId: 'ses_1', seq: 1, ts: 1, type: 'message.delta', data: { turnId: 't', text: 'a "b"\n' } } as SessionEvent,
    ];
    for (const e of cases) {
      expect(eventFrame(e)).toEqual({ text: genericEventFrame(e), ascii: false });
      expect(() => JSON.parse(eventFrame(e).text.split('\ndata: ')[1]!)).not.toThrow();
    }
  });

  it('gives the same bytes as the generic path when ids change from one event to the next (the template keeps the last ones)', () => {
    const t = new OutputTemplate();
    const seq: SessionEvent[] = [
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('a') }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('b') }, { seq: 43 }),
      output({ turnId: 'turn_1', stream: 'stderr', data: Buffer.from('c') }, { seq: 44 }),
      output({ turnId: 'turn_2', stream: 'stderr', data: new Uint8Array([0, 255, 7]) }, { seq: 45 }),
      output({ turnId: 'turn_2', stream: 'stderr', data: Buffer.from('d') }, { seq: 46, sessionId: 'ses_other' }),
      output({ turnId: 'turn_2', stream: 'stderr', data: Buffer.from('e') }, { seq: 47, sessionId: 'ses "quoted"' }),
      output({ turnId: 'turn_2', stream: 'stdin', data: Buffer.from('f') }, { seq: 48, sessionId: 'ses_other' }),
      output({ turnId: 'turn_2', stream: 'stderr', data: Buffer.from('g') }, { seq: 49, sessionId: 'ses_other', ts: 1.5 }),
      output({ turnId: 'turn_2', stream: 'stderr', data: Buffer.from('h') }, { seq: 50, sessionId: 'ses_other' }),
    ];
    const ascii = seq.map((e) => {
      const f = eventFrame(e, t);
      expect(f.text).toBe(genericEventFrame(e));
      return f.ascii;
    });
    expect(ascii).toEqual([true, true, true, true, true, false, false, false, true]);
  });

  it('writes the same bytes straight into a buffer (size, then write): seqs and ts of any digit count, any byte length (base64 in place up to 1 KiB, by Node\'s encoder past it), ids and ts changing', () => {
    const t = new OutputTemplate();
    const buf = Buffer.alloc(8192, 0xee);
    const events: SessionEvent[] = [];
    for (const [seq, ts] of [[0, 0], [9, 9], [10, 1764590000123], [99, 1764590000123], [12345, 1764590000124], [2 ** 31 - 1, 2 ** 31], [2 ** 31, 2 ** 31 + 1], [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]] as const)
      for (const n of [0, 1, 2, 3, 4, 5, 200, 1023, 1024, 1025, 3000]) events.push(output({ turnId: `turn_${n % 2}`, stream: n % 3 ? 'stdout' : 'stderr', data: new Uint8Array(n).map((_, i) => (i * 37 + seq) & 255) }, { seq, ts, sessionId: `ses_${n % 4 === 0 ? 'a' : 'b'}` }));
    for (const e of events) {
      const size = t.size(e);
      expect(size).toBe(Buffer.byteLength(genericEventFrame(e)));
      buf.fill(0xee);
      const end = t.write(e, buf, 7);
      expect(end).toBe(7 + size);
      expect(buf.toString('latin1', 7, end)).toBe(genericEventFrame(e));
      expect(buf[end]).toBe(0xee);
    }
    // What the string template refuses, and seqs or ts it would not write by hand: -1 (the generic path).
    for (const e of [
      output({ turnId: 'turn "quoted"', stream: 'stdout', data: Buffer.from('x') }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x') }, { ts: 1.5 }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x') }, { ts: -1 }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x') }, { seq: -1 }),
      output({ turnId: 'turn_1', stream: 'stdout', data: Buffer.from('x') }, { seq: 2.5 }),
      { sessionId: 'ses_1', seq: 1, ts: 1, type: 'message.delta', data: { turnId: 't', text: 'a' } } as SessionEvent,
    ])
      expect(t.size(e)).toBe(-1);
  });
});
