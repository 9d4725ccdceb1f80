// The daemon's bounds of flow control, each with its reason: from a model or a PTY to a
// subscriber's socket (docs/architecture.md "Flow control" walks them in that order). The socket
// writer's own are in wire-bounds.ts.
import { boundTable } from './bound.js';

const KiB = 1024;
const MiB = 1024 * 1024;

export const DAEMON_BOUNDS = boundTable('DAEMON_BOUNDS', {
  // ---- a model's answer (engines/chat/) ----
  modelUnreadChars: {
    value: 1 * MiB,
    unit: 'chars',
    reason: "Characters of a model's response read from its socket and not yet taken by the turn, past which the socket is paused (model-http.ts): the model server is held instead of the daemon buffering its answer.",
  },
  // ---- a command in a pseudo-terminal (pty/) ----
  ptyReadAhead: {
    value: 8 * MiB,
    unit: 'bytes',
    reason: 'Output read ahead from the terminal while the journal is full, past which the terminal is paused (the program then blocks on its full terminal): a short stall of the journal does not stop the program.',
  },
  ptyStreamingChunk: {
    value: 2048,
    unit: 'bytes',
    reason: "A terminal read this large means the command is streaming: the next chunk then gathers reads for ptyGatherMs, so a flood is a few large events instead of one per read. Half a read: Linux's terminal hands out 4095 bytes a read at most.",
  },
  ptyGatherMs: {
    value: 1,
    unit: 'ms',
    reason: "How long a streaming command's reads are gathered into one event; interactive output (an echo, a prompt) is never delayed.",
  },
  screenHoldMs: {
    value: 16,
    unit: 'ms',
    reason: "Output shorter than the screen's skip size, waiting for the emulator's queue to empty, is fed whole after waiting this long for more (a longer run can skip more of what can never be seen).",
  },
  screenHighMark: {
    value: 4 * MiB,
    unit: 'bytes',
    reason: "Bytes not yet parsed by a running command's screen at which the engine is held (EngineContext.emit returns false, drained() waits for the level to drop below it).",
  },
  screenGiveUp: {
    value: 32 * MiB,
    unit: 'bytes',
    reason: "Bytes not yet parsed at which the screen is given up (subscribers get the output as events): the emulator itself drops data at 50 MB.",
  },
  // ---- a session's journal (runtime/event-log.ts, journal/) ----
  turnBacklog: {
    value: 16 * MiB,
    unit: 'bytes',
    reason: "A session's events appended and not yet in the journal file, at which the engine is held (EngineContext.emit returns false; drained() waits for the level to drop below it): memory stays bounded while the disk is slow.",
  },
  journalQueuedBehind: {
    value: 32 * MiB,
    unit: 'bytes',
    reason: 'Bytes queued behind a direct (O_DIRECT) write in flight past which flush() writes them synchronously instead of waiting for it.',
  },
  // ---- a subscriber's feed (runtime/feed/subscription-feed.ts) ----
  feedPageEvents: {
    value: 2000,
    unit: 'events',
    reason: "A replay page's events: a page is read while the subscriber's socket drains the last one.",
  },
  feedPageBytes: {
    value: 1 * MiB,
    unit: 'bytes',
    reason: "A replay page's bytes: a page is read while the subscriber's socket drains the last one.",
  },
  feedStallMs: {
    value: 200,
    unit: 'ms',
    reason: "A subscriber waiting for its socket this long (and a turn of the event loop) is stalled: it holds no events in the catch-up cache until it moves again.",
  },
  floodWindowMs: {
    value: 50,
    unit: 'ms',
    reason: "The flood detector's window: a screen subscriber fed more than floodBytes of a command's output within it gets frames instead of the output.",
  },
  floodBytes: {
    value: 128 * KiB,
    unit: 'bytes',
    reason: 'A flood, within floodWindowMs (about 2.5 MB/s): far above what anyone reads, far below `seq`, `cat` of a big file, a build.',
  },
  frameMs: {
    value: 33,
    unit: 'ms',
    reason: "While output floods, a screen subscriber gets the command's screen this often (as tmux redraws its clients at a bounded rate).",
  },
  // ---- the fan-out hub (daemon/subscriptions.ts, daemon/spread.ts) ----
  hubBatch: {
    value: 256 * KiB,
    unit: 'bytes',
    reason: "A session/events batch frame closes once its events reach this size (well under the frame limit).",
  },
  hubHighMark: {
    value: 1 * MiB,
    unit: 'bytes',
    reason: "Bytes queued on a subscriber's connection at which its feed is held (paused; it replays once the queue is below half of this). Well above what one busy tick queues, so a pause means the reader is really behind; capped at maxQueuedBytes, so a reader that stopped still fills the queue and is seen as a slow consumer.",
  },
  spreadMs: {
    value: 10,
    unit: 'ms',
    reason: "A session's later subscribers get a streaming answer's deltas 1..spreadMs ms late, in turn, so they are not all woken at once on a machine with fewer cores than subscribers.",
  },
  spreadQuietMs: {
    value: 50,
    unit: 'ms',
    reason: "A message.delta this long after the subscriber's previous one goes at once (the answer's first, or after a pause).",
  },
});
