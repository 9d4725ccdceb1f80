// The documented example program runs as written against a real daemon.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readRecordFile, runCli, runNode } from '../helpers/processes.js';
import { testHome } from './helpers.js';

describe('examples/watch-session.mjs', () => {
  it('starts the daemon, approves and runs the command, prints its output and the completed turn, and exits 0', async () => {
    const t = testHome();
    const r = await runNode([path.join(ROOT, 'examples', 'watch-session.mjs'), 'echo hello from the example'], t.env, 30_000);
    const pid = readRecordFile(t.home)?.pid;
    if (pid) t.pids.push(pid);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('approve? echo hello from the example');
    expect(r.stdout).toContain('$ echo hello from the example');
    expect(r.stdout).toMatch(/hello from the example\r?\n/); // \r\n from a pseudo-terminal
    expect(r.stdout).toMatch(/turn completed \(exit 0\)/);
  });

  it('on an existing session named by an id prefix, waits for its own turn, not the first old one', async () => {
    const t = testHome();
    const made = await runCli(['new', '--approval', 'auto'], t.env);
    const id = made.stdout.trim();
    const pid = readRecordFile(t.home)?.pid;
    if (pid) t.pids.push(pid);
    expect((await runCli(['send', id, 'echo old turn', '--wait'], t.env)).stdout).toMatch(/^old turn\r?\n$/);

    const r = await runNode([path.join(ROOT, 'examples', 'watch-session.mjs'), 'echo new turn', id.slice(4, 22)], t.env, 30_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`session ${id}`);
    expect(r.stdout).not.toContain('old turn');
    expect(r.stdout).toMatch(/\$ echo new turn\nnew turn\r?\nturn completed \(exit 0\)/);
    // It gave control back: the session is free at once.
    const list = JSON.parse((await runCli(['sessions', '--json'], t.env)).stdout) as { controller: unknown }[];
    expect(list[0]!.controller).toBeNull();
  });

  it('an unknown session is one clear line and exit 1, not a stack trace', async () => {
    const t = testHome();
    const r = await runNode([path.join(ROOT, 'examples', 'watch-session.mjs'), 'true', 'nope'], t.env, 30_000);
    const pid = readRecordFile(t.home)?.pid;
    if (pid) t.pids.push(pid);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('watch-session: no session matches "nope" (astra sessions lists them)\n');
  });
});

describe("README's 'Use it from code'", () => {
  it('runs as written, importing the package by its name', async () => {
    const t = testHome();
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const block = /## Use it from code\s+```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the README has a js block under "Use it from code"').toBeDefined();
    // A tiny app folder where `import ... from 'astra'` resolves to this package.
    const app = fs.mkdtempSync(path.join(os.tmpdir(), 'astra-readme-'));
    try {
      fs.mkdirSync(path.join(app, 'node_modules'));
      fs.symlinkSync(ROOT, path.join(app, 'node_modules', 'astra'), 'dir');
      fs.writeFileSync(path.join(app, 'main.mjs'), block!);
      const r = await runNode([path.join(app, 'main.mjs')], t.env, 30_000);
      const pid = readRecordFile(t.home)?.pid;
      if (pid) t.pids.push(pid);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^hello\r?\n$/);
      // It let go of control: the session is not locked for the grace period.
      const list = JSON.parse((await runCli(['sessions', '--json'], t.env)).stdout) as { controller: unknown }[];
      expect(list[0]!.controller).toBeNull();
    } finally {
      fs.rmSync(app, { recursive: true, force: true });
    }
  });
});
