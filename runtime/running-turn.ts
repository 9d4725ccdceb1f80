// RunningTurn: the controls of the turn running now — its cancel, the failure the runtime stopped it
// for, the command terminal its engine attached. Made by SessionState when turn.started is folded and
// ended when turn.completed is; everything else on it is written through its methods only.
import type { CommandTerminal } from './engine.js';

export class RunningTurn {
  private state: 'running' | 'cancelling' = 'running';
  private done = false;
  private failed: string | undefined;
  private attached: CommandTerminal | undefined;
  /** Aborted on cancel; a turn replayed from the journal has no engine listening to it. */
  private readonly abort = new AbortController();

  constructor(readonly turnId: string) {}

  get status(): 'running' | 'cancelling' {
    return this.state;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** turn.completed was folded: the engine's later emits are ignored. */
  get ended(): boolean {
    return this.done;
  }

  /** Why the runtime stopped it (a full disk): it then ends 'failed' with this error. */
  get failure(): string | undefined {
    return this.failed;
  }

  /** The command running now, attached by the engine (EngineContext.attachTerminal). */
  get terminal(): CommandTerminal | undefined {
    return this.attached;
  }

  /** turn/cancel: the engine's signal fires once; a turn already cancelling stays so. */
  cancel(): void {
    if (this.state !== 'running') return;
    this.state = 'cancelling';
    this.abort.abort();
  }

  /** The runtime stops the turn (a full disk): it is cancelled and ends 'failed' with `why`. The first reason stays. */
  fail(why: string): void {
    if (this.failed !== undefined) return;
    this.failed = why;
    this.cancel();
  }

  /** Routes command/input and command/resize to `t` until the returned function is called. */
  attach(t: CommandTerminal): () => void {
    this.attached = t;
    return () => {
      if (this.attached === t) this.attached = undefined;
    };
  }

  /** Called by SessionState as turn.completed is folded. */
  end(): void {
    this.done = true;
  }
}
