// discovery/: paths, private-dir checks, the discovery record, tokens, locks, liveness probes (docs/operations.md).
export * from './paths.js';
export * from './private-dir.js';
export * from './record.js';
export * from './token.js';
export * from './liveness.js';
export * from './locks.js';
export * from './version.js';
export * from './log-format.js';
export * from './restart-marker.js';
