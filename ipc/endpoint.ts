// Where the daemon listens: a Unix socket in the runtime directory, or a named pipe on Windows.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { AstraError } from '../protocol/index.js';

export const SOCKET_FILE_NAME = 'astra.sock';
/** macOS allows 103 bytes (Linux 107); Node silently truncates longer paths, so check ourselves. */
export const MAX_SOCKET_PATH_BYTES = 103;

export function socketPathFor(runtimeDir: string): string {
  return path.join(runtimeDir, SOCKET_FILE_NAME);
}

/** Throws socket_path_too_long, naming ASTRA_HOME as the fix, when the path does not fit. */
export function checkSocketPath(socketPath: string): void {
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES)
    throw new AstraError(
      'socket_path_too_long',
      `the socket path ${socketPath} is ${bytes} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of Unix sockets; set ASTRA_HOME to a shorter directory`,
      { path: socketPath, bytes, max: MAX_SOCKET_PATH_BYTES },
    );
}

/** A per-user pipe name; the hash keeps it short and free of path characters. */
export function pipeNameFor(key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 24);
  return `\\\\.\\pipe\\astra-${hash}`;
}

/** The endpoint to listen on or connect to for a runtime directory. */
export function endpointFor(runtimeDir: string, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return pipeNameFor(runtimeDir);
  const socketPath = socketPathFor(runtimeDir);
  checkSocketPath(socketPath);
  return socketPath;
}
