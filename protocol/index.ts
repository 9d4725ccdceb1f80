// protocol/: wire types, method table, error codes, limits and version. No I/O, imports nothing.
export * from './version.js';
export * from './duration.js';
export * from './errors.js';
export * from './schema.js';
export * from './types.js';
export * from './methods.js';
export * from './capabilities.js';
export * from './messages.js';
