// The package entry: `import { AstraClient } from 'astra'`. The protocol (types, method table,
// errors) comes along, so applications need one import. The embeddable daemon is 'astra/daemon'.
export * from './client/index.js';
export * from './protocol/index.js';
