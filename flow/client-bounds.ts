// An AstraClient's bounds of flow control, each with its reason (the socket writer's are in
// wire-bounds.ts).
import { boundTable } from './bound.js';

const MiB = 1024 * 1024;

export const CLIENT_BOUNDS = boundTable('CLIENT_BOUNDS', {
  subscriptionUnread: {
    value: 32 * MiB,
    unit: 'bytes',
    reason: "Bytes of events waiting for a subscription's `for await` loop at which the stream is held at the daemon (it goes on from lastSeq once the loop has taken three quarters of them): a slow loop costs re-reading, never unbounded memory. SubscribeOptions.maxQueuedBytes overrides it.",
  },
});
