// Is anyone there? Process and socket probes used before starting a daemon or cleaning up after one.

import fs from 'node:fs';
import net from 'node:net';
import { AstraError } from '../protocol/index.js';

export type SocketProbe = 'listening' | 'refused' | 'missing' | 'not_socket';

/** kill(pid, 0): ESRCH means gone, EPERM means alive but not ours. Pids are reused: confirm identity separately. */
export function isProcessAlive(pid: number): boolean {
  // 0 and negative pids address process groups: never "alive" as a daemon pid.
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    // A zombie (exited, not yet reaped by its parent or init) still answers kill(0): it is gone.
    return !isZombie(pid);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    throw e;
  }
}

function isZombie(pid: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself contain them.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}

/**
 * The caller checks the path length first (ipc/endpoint checkSocketPath): Node would truncate it.
 * Connects to `socketPath` to learn whether a server listens there. A connect that neither succeeds
 * nor fails within `timeoutMs` counts as 'listening' (a busy server's backlog), so that nothing
 * removes a socket someone may still be serving on.
 */
export async function probeSocket(socketPath: string, timeoutMs = 1000): Promise<SocketProbe> {
  return await new Promise<SocketProbe>((resolve, reject) => {
    const socket = net.connect({ path: socketPath });
    let settled = false;
    const finish = (result: SocketProbe | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const timer = setTimeout(() => finish('listening'), timeoutMs);
    socket.once('connect', () => finish('listening'));
    socket.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return finish('missing');
      if (e.code === 'ECONNREFUSED' || e.code === 'ENOTSOCK') return finish(classifyRefusal(socketPath));
      finish(
        new AstraError('internal_error', `Could not probe the socket ${socketPath}: ${e.code ?? e.message}. Check its permissions.`, {
          socketPath,
          code: e.code,
        }),
      );
    });
  });
}

// Connecting to a regular file is refused too: only a real socket file counts as a dead server's.
function classifyRefusal(socketPath: string): SocketProbe {
  try {
    return fs.lstatSync(socketPath).isSocket() ? 'refused' : 'not_socket';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw e;
  }
}

/** Unlinks `socketPath` only if it is a real socket file that refuses connections. Returns whether it did. */
export async function removeStaleSocket(socketPath: string, timeoutMs = 1000): Promise<boolean> {
  if ((await probeSocket(socketPath, timeoutMs)) !== 'refused') return false;
  try {
    if (!fs.lstatSync(socketPath).isSocket()) return false;
    fs.unlinkSync(socketPath);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}
