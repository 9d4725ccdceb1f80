// durable/: atomic, fsynced file writes, and directory creation that always ends. A leaf folder: it imports nothing of Astra's.
export { writeFileAtomic, fsyncDir, fsyncDirAsync, type AtomicWriteOptions } from './atomic-write.js';
export { makeDirs, MakeDirsError } from './make-dirs.js';
