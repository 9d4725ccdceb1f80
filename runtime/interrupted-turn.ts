// A turn found running when its session loads: the daemon stopped while it ran. Its pending approvals
// are denied, its engine's leftovers appended (Engine.interrupted: e.g. the chat engine's answer to a
// tool call left without a result), its commands' process groups killed where they provably are
// still the same processes, and it ends 'interrupted'. Nothing is run again (DESIGN).
import type { EventData, EventType } from '../protocol/index.js';
import type { Engine, EngineEvent } from './engine.js';
import { checkEngineEvent, engineEventTypes } from './engine-events.js';
import type { RuntimeLogger } from './logger.js';
import { killOrphanGroup } from './orphans.js';
import type { SessionState } from './session-state.js';

/** What of a loaded session this needs: its state and its append (SessionHost). */
export interface LoadedSession {
  readonly id: string;
  readonly state: SessionState;
  append<T extends EventType>(type: T, data: EventData<T>): unknown;
}

export function endInterruptedTurn(host: LoadedSession, turnId: string, engine: Engine | undefined, logger: RuntimeLogger): void {
  const id = host.id;
  const engineName = host.state.meta.engine;
  logger.warn({ sessionId: id, turnId }, 'turn was running when the daemon stopped; marking it interrupted');
  for (const a of [...host.state.approvals.values()])
    host.append('approval.resolved', { turnId: a.turnId, approvalId: a.approvalId, decision: 'deny', reason: 'interrupted: the daemon restarted' });
  if (!engine) logger.warn({ sessionId: id, turnId, engine: engineName }, `the ${engineName} engine is not registered in this runtime: what its interrupted turn leaves is not appended`);
  else if (engine.interrupted) {
    const allowed = engineEventTypes(engine);
    let left: EngineEvent[];
    try {
      left = engine.interrupted({ turnId, history: host.state.history() });
    } catch (e) {
      logger.error({ sessionId: id, turnId, engine: engineName, err: (e as Error).message }, 'the engine failed to say what its interrupted turn leaves');
      left = [];
    }
    for (const ev of left) {
      try {
        checkEngineEvent(engineName, allowed, ev.type);
      } catch (e) {
        logger.error({ sessionId: id, turnId, engine: engineName, type: ev.type, err: (e as Error).message }, 'an event the interrupted turn leaves is refused');
        continue;
      }
      host.append(ev.type, ev.data);
    }
  }
  for (const [pid, ts] of host.state.openCommands) {
    const outcome = killOrphanGroup(pid, ts);
    logger.warn({ sessionId: id, turnId, pid, outcome }, 'command of the interrupted turn: process group handled');
  }
  host.append('turn.completed', { turnId, status: 'interrupted', error: 'the daemon stopped while this turn was running' });
}
