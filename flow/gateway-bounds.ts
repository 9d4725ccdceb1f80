// The web gateway's bounds of flow control (astra web), each with its reason; its daemon
// connections use wire-bounds.ts and client-bounds.ts.
import { boundTable } from './bound.js';

const KiB = 1024;
const MiB = 1024 * 1024;

export const GATEWAY_BOUNDS = boundTable('GATEWAY_BOUNDS', {
  feedTick: {
    value: 1 * MiB,
    unit: 'bytes',
    reason: "A session feed's frames of one tick past this size are handed to its streams at once.",
  },
  feedHighMark: {
    value: 1 * MiB,
    unit: 'bytes',
    reason: "Bytes waiting in one stream's socket at which a session's shared feed (several streams) is held: its subscription stops until every stream is below a quarter of this, so the session goes at the pace of its browsers.",
  },
  feedMaxHoldMs: {
    value: 1_000,
    unit: 'ms',
    reason: 'A stream still over the feed\'s low mark this long after the feed was held is left behind (it lags on its own) and the others go on.',
  },
  slab: {
    value: 256 * KiB,
    unit: 'bytes',
    reason: "A frame slab holds many ticks' frames; a handed-out chunk is never written over (the sockets may still hold it).",
  },
  maxSlab: {
    value: 8 * MiB,
    unit: 'bytes',
    reason: "Slabs double up to this while ticks outgrow them, so a busy session's tick is seldom copied.",
  },
  sseBuffered: {
    value: 4 * MiB,
    unit: 'bytes',
    reason: "Bytes waiting in a tab's HTTP socket at which its event stream lags (`lagged`; it resumes from the journal once the socket drains). A session's only stream lags here exactly as its own subscription would.",
  },
});
