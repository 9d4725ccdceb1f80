import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { isProcessAlive, probeSocket, removeStaleSocket } from '../../discovery/index.js';
import { killAndWait, spawnHelper, tempDir, waitForLine } from './helpers.js';

async function listening(socketPath: string): Promise<net.Server> {
  const server = net.createServer((s) => s.on('error', () => {}));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

/** A socket file whose server was SIGKILLed: it stays on disk and refuses connections. */
async function staleSocket(socketPath: string): Promise<void> {
  const child = spawnHelper('listen-child.mjs', [socketPath]);
  await waitForLine(child, 'ready');
  await killAndWait(child);
  expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
}

function connects(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('probeSocket', () => {
  it('says listening when a server accepts', async () => {
    const sock = path.join(tempDir(), 's.sock');
    await listening(sock);
    expect(await probeSocket(sock)).toBe('listening');
  });

  it('says refused for a socket file left behind by a killed server', async () => {
    const sock = path.join(tempDir(), 's.sock');
    await staleSocket(sock);
    expect(await probeSocket(sock)).toBe('refused');
  });

  it('says not_socket for a regular file and missing for nothing', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'file');
    fs.writeFileSync(file, 'data');
    expect(await probeSocket(file)).toBe('not_socket');
    expect(await probeSocket(path.join(dir, 'nothing'))).toBe('missing');
  });

});

describe('removeStaleSocket', () => {
  it('unlinks a socket file nobody serves, so a new server can listen there', async () => {
    const sock = path.join(tempDir(), 's.sock');
    await staleSocket(sock);
    expect(await removeStaleSocket(sock)).toBe(true);
    expect(fs.existsSync(sock)).toBe(false);
    await listening(sock);
    expect(await probeSocket(sock)).toBe('listening');
  });

  it('never removes a live socket, a regular file or a directory', async () => {
    const dir = tempDir();
    const sock = path.join(dir, 's.sock');
    await listening(sock);
    expect(await removeStaleSocket(sock)).toBe(false);
    expect(await connects(sock)).toBe(true);

    const file = path.join(dir, 'file');
    fs.writeFileSync(file, 'precious');
    expect(await removeStaleSocket(file)).toBe(false);
    expect(fs.readFileSync(file, 'utf8')).toBe('precious');

    const sub = path.join(dir, 'sub');
    fs.mkdirSync(sub);
    expect(await removeStaleSocket(sub)).toBe(false);
    expect(fs.statSync(sub).isDirectory()).toBe(true);

    expect(await removeStaleSocket(path.join(dir, 'nothing'))).toBe(false);
  });
});

describe('isProcessAlive', () => {
  it('is true for a running process and false once it was killed and reaped', async () => {
    expect(isProcessAlive(process.pid)).toBe(true);
    const child = spawnHelper('listen-child.mjs', [path.join(tempDir(), 'p.sock')]);
    await waitForLine(child, 'ready');
    const pid = child.pid as number;
    expect(isProcessAlive(pid)).toBe(true);
    await killAndWait(child);
    expect(isProcessAlive(pid)).toBe(false);
  });

  it('is false for pids that name process groups or nothing', () => {
    expect(isProcessAlive(0)).toBe(false);
    expect(isProcessAlive(-1)).toBe(false);
    expect(isProcessAlive(1.5)).toBe(false);
    expect(isProcessAlive(Number.NaN)).toBe(false);
  });
});
