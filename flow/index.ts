// flow/: the level primitive and the bounds of flow control, one table per process. Imports nothing.
export { Level, MarkError, marks, type Marks } from './level.js';
export { BoundError, boundTable, type Bound, type BoundUnit } from './bound.js';
export { WIRE_BOUNDS } from './wire-bounds.js';
export { DAEMON_BOUNDS } from './daemon-bounds.js';
export { CLIENT_BOUNDS } from './client-bounds.js';
export { GATEWAY_BOUNDS } from './gateway-bounds.js';
