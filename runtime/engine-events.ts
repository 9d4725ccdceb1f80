// Which events an engine may append (Engine.events, never RUNTIME_EVENT_TYPES), checked where the
// runtime takes events from an engine: ctx.emit and Engine.interrupted.
import type { EventType } from '../protocol/index.js';
import { AstraError } from '../protocol/index.js';
import { ENGINE_EVENT_TYPES, type Engine } from './engine.js';

const ANY_ENGINE_EVENT: ReadonlySet<string> = new Set(ENGINE_EVENT_TYPES);

/** The event types an engine may append: those it declared that are not the runtime's own. */
export function engineEventTypes(engine: Engine | undefined): ReadonlySet<string> {
  if (!engine?.events) return ANY_ENGINE_EVENT;
  return new Set(engine.events.filter((t) => ANY_ENGINE_EVENT.has(t)));
}

/** Throws internal_error naming the engine and the type when `type` is not among `allowed`. */
export function checkEngineEvent(engineName: string, allowed: ReadonlySet<string>, type: EventType): void {
  if (allowed.has(type)) return;
  const why = ANY_ENGINE_EVENT.has(type)
    ? `it is not among the events the engine declared (Engine.events: ${[...allowed].join(', ') || 'none'})`
    : 'only the runtime appends it';
  throw new AstraError('internal_error', `The ${engineName} engine emitted a '${type}' event, which it may not: ${why}. Nothing was appended.`, { engine: engineName, type });
}
