// The socket writer's bounds (ipc/frame-writer.ts), the same at both ends of a daemon connection:
// in the daemon, in every client, in the web gateway's clients.
import { boundTable } from './bound.js';

const KiB = 1024;

export const WIRE_BOUNDS = boundTable('WIRE_BOUNDS', {
  socketHighMark: {
    value: 256 * KiB,
    unit: 'bytes',
    reason: "A socket's write high-water mark (Node's writable highWaterMark): above Node's 16 KiB default, which halves streaming throughput.",
  },
  socketInFlight: {
    value: 256 * KiB,
    unit: 'bytes',
    reason: "At most this much is handed to the socket at a time: Node passes all it holds to the kernel as one writev that completes at once, so in slices a waiter for the level hears of progress while data is still in flight.",
  },
  batch: {
    value: 64 * KiB,
    unit: 'bytes',
    reason: 'Frames queued in one tick are copied into batches of this size and written once (one write per tick, not per frame).',
  },
  firstBatch: {
    value: 4 * KiB,
    unit: 'bytes',
    reason: "A connection's first batch: most connections (a refused one, a CLI call, an idle observer) never send 4 KiB, and a 64 KiB batch each was 47 MB for 744 refused connection attempts at once.",
  },
  zeroCopyPart: {
    value: 16 * KiB,
    unit: 'bytes',
    reason: 'A frame part at least this big is queued by reference instead of copied into the batch (a large output event is never copied).',
  },
});
