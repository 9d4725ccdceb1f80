// The client's side of session/subscribe textFromDeltas, on the Subscription alone (what the daemon
// sends is covered end to end in test/daemon/text-from-deltas.test.ts): the text of a message.completed
// sent without it is rebuilt from the deltas the app was handed, per turn and per message; one that
// stands for deltas this subscription never delivered ends the stream with a typed error.
import { describe, expect, it } from 'vitest';
import { Subscription, type SubscriptionOwner } from '../../client/subscription.js';
import type { AstraError, SessionEvent } from '../../protocol/index.js';

const owner: SubscriptionOwner = { unsubscribe: async () => undefined, hold: () => undefined, resume: () => undefined };
const sid = 'ses_0123456789abcdef';
let seq = 0;
const ev = (type: string, data: Record<string, unknown>): SessionEvent => ({ sessionId: sid, seq: ++seq, ts: 1767225600000 + seq, type, data }) as SessionEvent;

function subscription(sinceSeq = 0) {
  const got: SessionEvent[] = [];
  let error: AstraError | undefined;
  const sub = new Subscription(sid, owner, { sinceSeq, onEvent: (e) => void got.push(e), onEnd: (e) => (error = e) });
  return { sub, got, error: () => error };
}

describe('a subscription rebuilding message.completed text from its deltas', () => {
  it('gives each message of a turn its own deltas\' text, and passes whole ones through', () => {
    seq = 0;
    const { sub, got, error } = subscription();
    const events = [
      ev('turn.started', { turnId: 't1', input: { text: 'hi' } }),
      ev('message.delta', { turnId: 't1', text: 'Let me ' }),
      ev('message.delta', { turnId: 't1', text: 'look.' }),
      ev('message.completed', { turnId: 't1', text: '', finishReason: 'tool_calls', textFromDeltas: true }),
      ev('tool.result', { turnId: 't1', callId: 'c1', status: 'succeeded', exitCode: 0, output: 'a\n' }),
      ev('message.delta', { turnId: 't1', text: 'One file.' }),
      ev('message.completed', { turnId: 't1', text: '', finishReason: 'stop', textFromDeltas: true }),
      ev('message.completed', { turnId: 't1', text: 'whole', finishReason: 'stop' }),
      ev('turn.completed', { turnId: 't1', status: 'completed' }),
    ];
    for (const e of events) sub.deliver(e);
    expect(error()).toBeUndefined();
    const completed = got.filter((e) => e.type === 'message.completed').map((e) => e.data);
    expect(completed).toEqual([
      { turnId: 't1', text: 'Let me look.', finishReason: 'tool_calls' },
      { turnId: 't1', text: 'One file.', finishReason: 'stop' },
      { turnId: 't1', text: 'whole', finishReason: 'stop' },
    ]);
    // Everything else is handed over as it came, in order.
    expect(got.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    expect(got.filter((e) => e.type !== 'message.completed')).toEqual(events.filter((e) => e.type !== 'message.completed'));
  });

  it('ends the stream with internal_error when the daemon leaves out a text whose deltas this subscription never had', () => {
    seq = 10;
    const { sub, got, error } = subscription(10);
    // Joined mid-turn: no turn.started, so no deltas are kept for it.
    sub.deliver(ev('message.delta', { turnId: 't2', text: 'half' }));
    sub.deliver(ev('message.completed', { turnId: 't2', text: '', finishReason: 'stop', textFromDeltas: true }));
    sub.deliver(ev('turn.completed', { turnId: 't2', status: 'completed' }));
    expect(got.map((e) => e.type)).toEqual(['message.delta']);
    expect(error()?.reason).toBe('internal_error');
    expect(error()?.message).toMatch(/without its text/);
  });
});
