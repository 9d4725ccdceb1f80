// Shared helpers for ipc tests: real Unix socket pairs in a temp dir, and waiting with deadlines.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export { tempDir, waitFor } from '../helpers/processes.js';
import { tempDir } from '../helpers/processes.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A connected pair of real Unix sockets; close() tears both down and removes the temp dir. */
/** `onread`: the client socket reads into the buffers it chooses (ipc/direct-reads.ts), as the client library's does. */
export async function socketPair(onread?: net.OnReadOpts): Promise<{ client: net.Socket; server: net.Socket; close: () => Promise<void> }> {
  const dir = tempDir();
  const socketPath = path.join(dir, 's.sock');
  const listener = net.createServer();
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(socketPath, resolve);
  });
  const client = onread ? net.connect({ path: socketPath, onread }) : net.connect(socketPath);
  const server = await accepted;
  await new Promise<void>((resolve, reject) => {
    if (!client.connecting) resolve();
    client.once('connect', resolve);
    client.once('error', reject);
  });
  // Tests provoke resets on purpose; an unhandled 'error' would crash the worker.
  client.on('error', () => {});
  server.on('error', () => {});
  return {
    client,
    server,
    close: async () => {
      client.destroy();
      server.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Compiles the project to dist/ if the compiled ipc layer is missing (npm test builds first). */
export function ensureBuilt(): void {
  if (fs.existsSync(path.join(REPO_ROOT, 'dist', 'ipc', 'index.js'))) return;
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: REPO_ROOT, stdio: 'ignore', timeout: 180_000 });
  } catch {
    // tsc exits non-zero when other folders have errors but still emits; the check below decides.
  }
  if (!fs.existsSync(path.join(REPO_ROOT, 'dist', 'ipc', 'index.js')))
    throw new Error('dist/ipc/index.js is missing; run `npx tsc -p tsconfig.json` first');
}
