// The gateway's shared SSE frames (web/gateway/frames.ts): one encoding per event for every stream
// of a session, dropped once every stream has sent it, and bounded in size.
import { describe, expect, it } from 'vitest';
import { FrameCache, eventFrame } from '../../web/gateway/frames.js';
import type { SessionEvent } from '../../protocol/index.js';

function output(seq: number, sessionId = 'ses_a'): SessionEvent {
  return { sessionId, seq, ts: 1, type: 'command.output', data: { turnId: 'turn_1', stream: 'stdout', data: new TextEncoder().encode(`line ${seq}\n`) } } as unknown as SessionEvent;
}

describe('the shared frame cache', () => {
  it('encodes an event once for all the streams of its session, with command output as base64', () => {
    const cache = new FrameCache();
    const a = { lastSentSeq: 0 };
    const b = { lastSentSeq: 0 };
    cache.register('ses_a', a);
    cache.register('ses_a', b);
    const first = cache.frame(output(1));
    const again = cache.frame({ ...output(1), data: { turnId: 'turn_1', stream: 'stdout', data: new TextEncoder().encode('other\n') } } as unknown as SessionEvent);
    expect(again).toBe(first);
    expect(first).toBe(eventFrame(output(1)));
    const json = JSON.parse(first.split('\ndata: ')[1]!);
    expect(json.data).toMatchObject({ encoding: 'base64', data: Buffer.from('line 1\n').toString('base64') });
    expect(first.startsWith('id: 1\nevent: command.output\n')).toBe(true);
  });

  it('drops a frame once every stream of the session has sent it, and everything when the last stream goes', () => {
    const cache = new FrameCache();
    const a = { lastSentSeq: 0 };
    const b = { lastSentSeq: 0 };
    cache.register('ses_a', a);
    cache.register('ses_a', b);
    for (let seq = 1; seq <= 10; seq++) cache.frame(output(seq));
    a.lastSentSeq = 10;
    b.lastSentSeq = 4;
    cache.passed('ses_a');
    expect(cache.size.frames).toBe(6);
    b.lastSentSeq = 10;
    cache.passed('ses_a');
    expect(cache.size).toEqual({ frames: 0, chars: 0 });
    cache.frame(output(11));
    cache.unregister('ses_a', a);
    cache.unregister('ses_a', b);
    expect(cache.size).toEqual({ frames: 0, chars: 0 });
  });

  it('stays within its bound when a stream never catches up, and keeps serving correct frames', () => {
    const one = eventFrame(output(1)).length;
    const cache = new FrameCache(one * 20);
    const stuck = { lastSentSeq: 0 };
    cache.register('ses_a', stuck);
    cache.register('ses_a', { lastSentSeq: 0 });
    for (let seq = 1; seq <= 1000; seq++) expect(cache.frame(output(seq))).toBe(eventFrame(output(seq)));
    expect(cache.size.chars).toBeLessThanOrEqual(one * 21);
  });
});
