// lease/: controller/observer leases (DESIGN.md §6). Pure logic, injected clock, no I/O.
export * from './lease-manager.js';
