// session/subscribe textFromDeltas, the hub's part (subscriptions.ts): per subscription, the
// characters of a turn's message.delta text it delivered live (countText), and a live
// message.completed whose text is exactly that, encoded once without its text for every such
// subscriber (CompactCompletions).
import { packEventBody } from '../ipc/index.js';
import type { StoredEvent } from '../runtime/index.js';

type TextEventData = { turnId?: unknown; text?: unknown; finishReason?: unknown };

/** The last message.completed encoded without its text, shared by the subscribers it goes to. */
export class CompactCompletions {
  private of: StoredEvent | undefined;
  private tail: Buffer | undefined;

  /**
   * The body of `event` without its text, when it is a message.completed whose whole text this
   * subscription delivered as deltas (`counts`); undefined otherwise. Changes no count.
   */
  tailFor(counts: Map<string, number>, event: StoredEvent): Buffer | undefined {
    if (!event.textStreamed || counts.size === 0) return undefined;
    const data = event.event.data as TextEventData;
    if (typeof data.turnId !== 'string' || typeof data.text !== 'string' || data.text === '' || counts.get(data.turnId) !== data.text.length) return undefined;
    if (this.of !== event) {
      const compactData: Record<string, unknown> = { turnId: data.turnId, text: '' };
      if (data.finishReason !== undefined) compactData.finishReason = data.finishReason;
      compactData.textFromDeltas = true;
      const body = packEventBody({ seq: event.seq, ts: event.event.ts, type: 'message.completed', data: compactData }) as Buffer;
      // packEventBody's result is a view into a buffer it reuses: copied, as it is kept.
      this.tail = Buffer.from(body.subarray(1));
      this.of = event;
    }
    return this.tail;
  }
}

/**
 * What an event just delivered to a textFromDeltas subscription does to its per-turn count of delta
 * text. Only live events are counted: one read back (a backlog, or a paused subscriber fed again)
 * is not decoded for this, and any message or turn event among them stops the counts (one turn runs
 * at a time), so that turn's messages come whole and the next live turn.started starts again.
 */
export function countText(counts: Map<string, number>, event: StoredEvent): void {
  const type = event.type;
  if (!event.isLive) {
    if (counts.size > 0 && (type === 'message.delta' || type === 'message.completed' || type === 'turn.started' || type === 'turn.completed')) counts.clear();
    return;
  }
  if (type === 'turn.started') {
    const turnId = (event.event.data as TextEventData).turnId;
    if (typeof turnId === 'string') counts.set(turnId, 0);
  } else if (counts.size === 0) return;
  else if (type === 'message.delta') {
    const data = event.event.data as TextEventData;
    const n = typeof data.turnId === 'string' ? counts.get(data.turnId) : undefined;
    if (n !== undefined && typeof data.text === 'string') counts.set(data.turnId as string, n + data.text.length);
  } else if (type === 'message.completed') {
    const turnId = (event.event.data as TextEventData).turnId;
    if (typeof turnId === 'string' && counts.has(turnId)) counts.set(turnId, 0);
  } else if (type === 'turn.completed') {
    const turnId = (event.event.data as TextEventData).turnId;
    if (typeof turnId === 'string') counts.delete(turnId);
  }
}
