// lease/: controller/observer leases (docs/protocol.md §6, leases; docs/client.md). Pure logic, injected clock, no I/O.
export * from './lease-manager.js';
