// durable/: atomic, fsynced file writes. A leaf folder: it imports nothing of Astra's.
export { writeFileAtomic, fsyncDir, fsyncDirAsync, type AtomicWriteOptions } from './atomic-write.js';
