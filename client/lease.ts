// A controller lease held by this client. The object stays current: after a reconnect the client
// reclaims the lease with its resume token and updates epoch and resumeToken here in place.

export interface LeaseState {
  sessionId: string;
  epoch: number;
  resumeToken: string;
  graceMs: number;
}

/** What an application persists to reclaim control after its own crash: pass it to acquireController. */
export interface PersistedLease {
  sessionId: string;
  epoch: number;
  resumeToken: string;
}

export interface LeaseOwner {
  releaseLease(lease: ControllerLease): Promise<void>;
}

export class ControllerLease {
  readonly sessionId: string;
  private state: LeaseState;
  private lostReason: string | undefined;
  /** @internal Set while release() is in flight, so its own lease/revoked is not reported as a loss. */
  releasing = false;

  constructor(
    state: LeaseState,
    private readonly owner: LeaseOwner,
  ) {
    this.sessionId = state.sessionId;
    this.state = { ...state };
  }

  /** The epoch writes carry; filled in automatically by the client. */
  get epoch(): number {
    return this.state.epoch;
  }

  /** Reclaims this lease within its grace period, from this or a new process. It changes on every grant: persist the latest. */
  get resumeToken(): string {
    return this.state.resumeToken;
  }

  get graceMs(): number {
    return this.state.graceMs;
  }

  /** Why the lease was lost (takeover, expired, released, or an error reason), or undefined while held. */
  get lost(): string | undefined {
    return this.lostReason;
  }

  get held(): boolean {
    return this.lostReason === undefined;
  }

  /** Gives up control (lease/release). */
  release(): Promise<void> {
    return this.owner.releaseLease(this);
  }

  toJSON(): PersistedLease {
    return { sessionId: this.sessionId, epoch: this.state.epoch, resumeToken: this.state.resumeToken };
  }

  /** @internal */
  update(state: LeaseState): void {
    this.state = { ...state };
    this.lostReason = undefined;
  }

  /** @internal */
  markLost(reason: string): void {
    this.lostReason ??= reason;
  }
}
