// The turns a connection started as its own (`turn/start {cancelOnDisconnect: true}`, which
// `astra send --wait` sets): when that connection drops, each of them still running once the lease
// grace has passed is cancelled, unless the session has a controller by then (who then decides).
// Only that connection's turns: another connection's, and turns started without the flag (the
// session's, owned by nobody), run on (docs/protocol.md, "Who owns a turn").
import type { LeaseManager } from '../lease/index.js';
import type { Runtime } from '../runtime/index.js';
import type { Logger } from './logger.js';

export interface TurnOwnersOptions {
  runtime: Runtime;
  leases: LeaseManager;
  graceMs: number;
  log: Logger;
}

export class TurnOwners {
  /** connectionId → turnId → sessionId of the running turns it owns. */
  private readonly byPeer = new Map<string, Map<string, string>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly onTurnEnded = (_sessionId: string, turnId: string): void => {
    for (const turns of this.byPeer.values()) turns.delete(turnId);
  };

  constructor(private readonly o: TurnOwnersOptions) {
    o.runtime.on('turnEnded', this.onTurnEnded);
  }

  own(connectionId: string, sessionId: string, turnId: string): void {
    let turns = this.byPeer.get(connectionId);
    if (!turns) this.byPeer.set(connectionId, (turns = new Map()));
    turns.set(turnId, sessionId);
  }

  /** The connection went: its turns are cancelled after the grace. */
  dropped(connectionId: string): void {
    const turns = this.byPeer.get(connectionId);
    this.byPeer.delete(connectionId);
    if (!turns || turns.size === 0) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.cancel(turns);
    }, this.o.graceMs);
    this.timers.add(timer);
  }

  private async cancel(turns: Map<string, string>): Promise<void> {
    for (const [turnId, sessionId] of turns) {
      if (this.o.leases.view(sessionId).state === 'held') continue;
      try {
        const session = await this.o.runtime.getSession(sessionId);
        if (session.runningTurnId !== turnId) continue;
        this.o.log.info({ sessionId, turnId }, 'cancelling a turn whose connection went (cancelOnDisconnect)');
        await this.o.runtime.cancelTurn(sessionId, turnId);
      } catch (e) {
        this.o.log.warn({ err: e, sessionId, turnId }, 'could not cancel the turn of a connection that went');
      }
    }
  }

  close(): void {
    this.o.runtime.off('turnEnded', this.onTurnEnded);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
