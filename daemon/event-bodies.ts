// The body an event goes out with to one subscription (subscriptions.ts): as stored, compact
// (textFromDeltas: text-from-deltas.ts), or without its experimental fields.
//
// The experimental event fields (protocol/capabilities.ts EXPERIMENTAL_EVENT_FIELDS) are left out for
// a connection that did not opt in (capabilities.experimentalApi): in what subscriptions deliver and
// in session/read. An event of another type is never decoded for this (its type is peeked); one that
// has such a field is encoded once without it, for every such subscriber (the last one kept).
import { EXPERIMENTAL_EVENT_FIELDS, type EventType, type SessionEvent } from '../protocol/index.js';
import { packEventBody } from '../ipc/index.js';
import type { StoredEvent } from '../runtime/index.js';
import { CompactCompletions } from './text-from-deltas.js';

export { countText } from './text-from-deltas.js';

/** One per hub: each kind of body made once per event for every subscriber that gets it. */
export class EventBodies {
  private readonly compact = new CompactCompletions();
  private readonly experimental = new ExperimentalFields();

  /**
   * The body (without its map header) `event` goes out with instead of its stored one; undefined
   * when the stored one goes (with its extra part). `deltaChars`: the subscription's textFromDeltas
   * counts; `experimentalApi`: its connection opted in.
   */
  tailFor(event: StoredEvent, deltaChars: Map<string, number> | undefined, experimentalApi: boolean): Buffer | undefined {
    return (deltaChars ? this.compact.tailFor(deltaChars, event) : undefined) ?? (experimentalApi ? undefined : this.experimental.tailFor(event));
  }
}

function fieldsOf(type: string): readonly string[] | undefined {
  return EXPERIMENTAL_EVENT_FIELDS[type as EventType];
}

function without(data: unknown, fields: readonly string[]): Record<string, unknown> | undefined {
  if (data === null || typeof data !== 'object' || !fields.some((f) => Object.prototype.hasOwnProperty.call(data, f))) return undefined;
  const out: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  for (const f of fields) delete out[f];
  return out;
}

/** The last event with experimental fields, encoded without them. */
export class ExperimentalFields {
  private of: StoredEvent | undefined;
  private tail: Buffer | undefined;

  /** The body of `event` without its experimental fields (without its map header); undefined when it has none. */
  tailFor(event: StoredEvent): Buffer | undefined {
    const fields = fieldsOf(event.type);
    if (!fields) return undefined;
    if (this.of !== event) {
      const data = without(event.event.data, fields);
      this.of = event;
      // packEventBody's result is a view into a buffer it reuses: copied, as it is kept.
      this.tail = data ? Buffer.from((packEventBody({ seq: event.seq, ts: event.event.ts, type: event.type, data }) as Buffer).subarray(1)) : undefined;
    }
    return this.tail;
  }
}

/** Events as a connection that did not opt in sees them (session/read). */
export function withoutExperimentalFields<E extends SessionEvent>(events: E[]): E[] {
  return events.map((e) => {
    const fields = fieldsOf(e.type);
    const data = fields ? without(e.data, fields) : undefined;
    return data ? ({ ...e, data } as E) : e;
  });
}
