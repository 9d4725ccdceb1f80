// AstraClient opts in to session/events and hands each event to the app exactly once, in order.
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { testHome } from './helpers.js';

describe('batched delivery in the client', () => {
  it('delivers every event of a 50,000-event stream exactly once, in order, to a callback and to a slow for-await loop at the same time', async () => {
    const t = testHome();
    const fast = await t.client();
    const slow = await t.client({ clientName: 'slow' });
    const { session } = await fast.session.create({ engine: 'synthetic', approvalPolicy: 'auto' });
    const seen: number[] = [];
    let completed!: () => void;
    const fastDone = new Promise<void>((resolve) => (completed = resolve));
    await fast.subscribe(session.id, {
      onEvent: (e: SessionEvent) => {
        seen.push(e.seq);
        if (e.type === 'turn.completed') completed();
      },
    });
    const slowSub = await slow.subscribe(session.id);
    await fast.acquireController(session.id);
    await fast.turn.start({ sessionId: session.id, input: { text: 'count=50000 size=200' } });
    const slowSeen: number[] = [];
    for await (const e of slowSub) {
      slowSeen.push(e.seq);
      // A reader that yields to the event loop now and then falls behind: the daemon batches,
      // pauses it and feeds it from the session's log.
      if (slowSeen.length % 5000 === 0) await new Promise((r) => setTimeout(r, 20));
      if (e.type === 'turn.completed') break;
    }
    await fastDone;
    const head = seen.at(-1)!;
    expect(head).toBeGreaterThan(50_000);
    expect(seen).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect(slowSeen).toEqual(seen);
  });
});
