// The documented example program runs as written against a real daemon.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readRecordFile, runNode } from '../helpers/processes.js';
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
    expect(r.stdout).toContain('hello from the example\n');
    expect(r.stdout).toMatch(/turn completed \(exit 0\)/);
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
      expect(r.stdout).toBe('hello\n');
    } finally {
      fs.rmSync(app, { recursive: true, force: true });
    }
  });
});
