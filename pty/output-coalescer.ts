// Output read in one turn of the event loop (1 ms while a command streams) goes out as one chunk (up to the chunk limit): a command
// writing fast gives few large chunks, a lone line still goes out at once. A consumer answering false
// is behind: chunks wait here (reading continues up to a read-ahead bound, then the source is paused)
// until it has drained. The same contract as the shell engine's pipes.
import { LIMITS } from '../protocol/index.js';
import { DAEMON_BOUNDS } from '../flow/index.js';

export type OutputStream = 'stdout' | 'stderr';

export interface CoalescerSink {
  onOutput(data: Buffer, stream: OutputStream): boolean;
  drained(): Promise<void>;
  readAheadBytes?: number;
}

/**
 * How far output is read ahead while the consumer is behind before the terminal is paused (the program
 * then blocks on its full terminal): a short stall of the journal does not stop the program.
 */
export const HELD_READ_AHEAD_BYTES = DAEMON_BOUNDS.ptyReadAhead.value;

/**
 * A chunk this large means the command is streaming (a pseudo-terminal gives at most 4 KiB a read, one
 * read per turn of the event loop): the next chunk then gathers reads for STREAMING_GATHER_MS, so a
 * flood is a few large events instead of one per read (each event is journaled, offered to every
 * subscriber and posted to the screen's worker). Interactive output (an echo, a prompt) stays one tick.
 * Half a read, not a whole one: Linux's terminal hands out 4095 bytes a read at most (its line
 * discipline keeps 4096 with one for itself), so a threshold of 4096 never saw `seq` streaming — 4,300
 * events for `seq 1 2000000` instead of ~450 (exported for the tests).
 */
export const STREAMING_BYTES = DAEMON_BOUNDS.ptyStreamingChunk.value;
export const STREAMING_GATHER_MS = DAEMON_BOUNDS.ptyGatherMs.value;

/** The one-tick coalescing and backpressure shared by both transports. */
export class OutputCoalescer {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private stream: OutputStream = 'stdout';
  private scheduled = false;
  /** Whole chunks waiting for the consumer to drain. */
  private ready: { data: Buffer; stream: OutputStream }[] = [];
  private readyBytes = 0;
  private held = false;
  private paused = false;
  /** The size of the last chunk flushed (see STREAMING_BYTES). */
  private lastChunkBytes = 0;

  constructor(
    private readonly opts: CoalescerSink,
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  push(chunk: Buffer, stream: OutputStream): void {
    if (stream !== this.stream || this.pendingBytes + chunk.length > LIMITS.maxOutputChunkBytes) this.cut();
    this.stream = stream;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (!this.scheduled) {
      this.scheduled = true;
      // setImmediate runs right after the poll phase that read it: no timer, no added latency —
      // unless the command is streaming, when a millisecond gathers a dozen reads into one chunk.
      if (this.lastChunkBytes >= STREAMING_BYTES) setTimeout(() => this.flush(), STREAMING_GATHER_MS);
      else setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    this.lastChunkBytes = this.pendingBytes;
    this.cut();
    this.deliver(false);
  }

  /** At the end every byte goes out, behind or not: a false answer asks to slow down, it drops nothing. */
  flushAll(): void {
    this.cut();
    this.deliver(true);
  }

  private cut(): void {
    if (this.pendingBytes === 0) return;
    const data = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.ready.push({ data, stream: this.stream });
    this.readyBytes += data.length;
    this.pending = [];
    this.pendingBytes = 0;
  }

  private deliver(all: boolean): void {
    while ((all || !this.held) && this.ready.length > 0) {
      const c = this.ready.shift()!;
      this.readyBytes -= c.data.length;
      if (this.opts.onOutput(c.data, c.stream) || this.held) continue;
      this.held = true;
      void this.opts.drained().then(() => {
        this.held = false;
        if (this.paused) {
          this.paused = false;
          this.resume();
        }
        this.deliver(false);
      });
    }
    if (this.held && !this.paused && this.readyBytes >= (this.opts.readAheadBytes ?? HELD_READ_AHEAD_BYTES)) {
      // The consumer is far behind: stop reading, so the program blocks on a full terminal or pipe.
      this.paused = true;
      this.pause();
    }
  }
}
