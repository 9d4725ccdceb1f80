// A command screen on the worker thread (the built package: the worker runs compiled JS) shows
// exactly what one on this thread shows after the same writes, resizes in stream order, reports
// parsed bytes for backpressure, and refuses snapshots once disposed.
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt } from '../runtime/helpers.js';
import { CommandScreen } from '../../pty/screen.js';

type RemoteModule = typeof import('../../pty/remote-screen.js');
let remote: RemoteModule;
let root: string;

beforeAll(async () => {
  root = ensureBuilt();
  remote = (await import(`${root}/dist/pty/remote-screen.js`)) as RemoteModule;
}, 120_000);

describe('a screen on the worker thread', () => {
  it('shows exactly what a screen on this thread shows after the same bytes, resize included', async () => {
    const s = remote.openScreen({ cols: 40, rows: 8 });
    const local = new CommandScreen({ cols: 40, rows: 8 });
    try {
      expect(s).toBeInstanceOf(remote.RemoteScreen);
      const chunks: Buffer[] = [];
      for (let i = 1; i <= 300; i++) chunks.push(Buffer.from(`\x1b[H\x1b[2J\x1b[1mframe\x1b[0m ${i}\r\nline two ${i}`));
      chunks.push(Buffer.from('\r\n'));
      for (let i = 1; i <= 50; i++) chunks.push(Buffer.from(`scroll ${i}\r\n`));
      for (const c of chunks.slice(0, 200)) {
        s.write(c);
        local.write(c);
      }
      s.resize(60, 10);
      local.resize(60, 10);
      for (const c of chunks.slice(200)) {
        s.write(c);
        local.write(c);
      }
      // Asked for now, it shows these writes and not the one after it.
      const snap = s.snapshot();
      const want = local.snapshot();
      s.write(Buffer.from('LATER'));
      const [a, b] = await Promise.all([snap, want]);
      expect(a.text).toEqual(b.text);
      expect(a.text.join('\n')).not.toContain('LATER');
      expect([a.cols, a.rows]).toEqual([60, 10]);
      expect(a.scrollback).toEqual(b.scrollback);
      expect(Buffer.isBuffer(a.screen)).toBe(true);
      expect(a.screen.equals(b.screen)).toBe(true);
      await s.drained(1);
      expect(s.pendingBytes).toBe(0);
    } finally {
      s.dispose();
      local.dispose();
    }
  });

  it('refuses a snapshot once disposed, and settles one asked for before', async () => {
    const s = remote.openScreen({ cols: 20, rows: 5 });
    s.write(Buffer.from('x'.repeat(100_000)));
    const pending = s.snapshot().then(
      () => 'taken',
      () => 'refused',
    );
    s.dispose();
    expect(['taken', 'refused']).toContain(await pending);
    await expect(s.snapshot()).rejects.toThrow(/disposed/);
    expect(s.broken).toBe(false);
  });

  it('starts ahead of the first screen (warm), keeps no process alive while it has none, then serves one', async () => {
    // A process of its own (the shared worker is per process): it warms the worker and must then end
    // by itself, the idle thread unref'd.
    const script = `
      const r = await import(${JSON.stringify(`${root}/dist/pty/remote-screen.js`)});
      if (!r.warmScreenWorker()) throw new Error('the worker did not start');
      process.stdout.write('warmed');
    `;
    // A file, not -e: a worker inherits the process's node flags, and --input-type is refused in a worker.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'astra-warm-'));
    const file = path.join(dir, 'warm.mjs');
    fs.writeFileSync(file, script);
    const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the process with a warmed screen worker did not end within 20 s (stdout ${JSON.stringify(out)}, stderr ${err})`));
      }, 20_000);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toBe('warmed');
    // Here, warmed again (running already), it serves a screen.
    expect(remote.warmScreenWorker()).toBe(true);
    const s = remote.openScreen({ cols: 20, rows: 5 });
    try {
      s.write(Buffer.from('warm ok'));
      expect((await s.snapshot()).text[0]).toBe('warm ok');
    } finally {
      s.dispose();
    }
  }, 30_000);
});
