// Start-up arbitration (docs/design-notes.md, "Locks"): of daemons started at once, exactly one serves. The
// instance lock serializes start-ups; a live daemon keeps it fresh, a SIGKILLed one's goes stale
// within INSTANCE_LOCK.stale. The socket bind stays the final arbiter.
import { AstraError } from '../protocol/index.js';
import { checkSocketPath } from '../ipc/index.js';
import { acquireLock, ensureDir, ensurePrivateDir, probeSocket, removeStaleSocket, tryAcquireLock, type AstraPaths } from '../discovery/index.js';
import type { Logger } from './logger.js';

const INSTANCE_LOCK = {
  stale: 2_000,
  onCompromised: () => {
    // A long event-loop stall can make the lock look stale; the socket bind still arbitrates.
  },
};

/**
 * Takes the instance lock and clears a dead predecessor's socket. Resolves to the lock's release, or
 * undefined when another daemon is already serving (this one should exit quietly).
 */
export async function arbitrate(paths: AstraPaths, endpoint: string, log: Logger): Promise<(() => Promise<void>) | undefined> {
  ensurePrivateDir(paths.runtimeDir);
  ensureDir(paths.dataDir, "Astra's data directory");
  checkSocketPath(endpoint);
  let release = await tryAcquireLock(paths.instanceLockPath, INSTANCE_LOCK);
  if (!release) {
    if ((await probeSocket(endpoint)) === 'listening') {
      log.info('another daemon is already running; exiting');
      return undefined;
    }
    release = await acquireLock(paths.instanceLockPath, { ...INSTANCE_LOCK, timeoutMs: INSTANCE_LOCK.stale + 3_000 });
  }
  const probe = await probeSocket(endpoint);
  if (probe === 'listening') {
    log.info({ endpoint }, 'another daemon is already listening; exiting');
    await release();
    return undefined;
  }
  if (probe === 'refused') {
    await removeStaleSocket(endpoint);
    log.info({ endpoint }, 'removed a dead daemon\'s socket');
  } else if (probe === 'not_socket') {
    await release();
    throw new AstraError('unsafe_runtime_dir', `${endpoint} exists and is not a socket; remove it and start again`, { path: endpoint });
  }
  return release;
}
