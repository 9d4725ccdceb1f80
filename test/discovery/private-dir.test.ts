import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../../protocol/index.js';
import { ensureDir, ensurePrivateDir } from '../../discovery/index.js';
import { tempDir } from './helpers.js';

function refusal(dir: string): AstraError {
  try {
    ensurePrivateDir(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(AstraError);
    expect((e as AstraError).reason).toBe('unsafe_runtime_dir');
    expect((e as AstraError).data.dir).toBe(dir);
    return e as AstraError;
  }
  throw new Error(`ensurePrivateDir accepted ${dir}`);
}

describe('ensurePrivateDir', () => {
  it('creates the directory and its missing parents with mode 0700, even under a permissive umask', () => {
    const dir = path.join(tempDir(), 'a', 'b', 'run');
    const old = process.umask(0o000);
    try {
      ensurePrivateDir(dir);
    } finally {
      process.umask(old);
    }
    expect(fs.lstatSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.lstatSync(path.dirname(dir)).mode & 0o777).toBe(0o700);
  });

  it('accepts an existing private directory and leaves its contents alone', () => {
    const dir = path.join(tempDir(), 'run');
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'keep'), 'x');
    ensurePrivateDir(dir);
    expect(fs.readFileSync(path.join(dir, 'keep'), 'utf8')).toBe('x');
  });

  it('refuses a directory open to others and says to chmod 700', () => {
    const dir = path.join(tempDir(), 'run');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o755);
    const e = refusal(dir);
    expect(e.data.problem).toBe('open_permissions');
    expect(e.message).toContain('0755');
    expect(e.message).toContain(`chmod 700 ${dir}`);
    // Refused, not silently fixed.
    expect(fs.lstatSync(dir).mode & 0o777).toBe(0o755);
  });

  it('refuses a symlink, even to a private directory of ours, and says to remove it', () => {
    const root = tempDir();
    const real = path.join(root, 'real');
    fs.mkdirSync(real, { mode: 0o700 });
    const link = path.join(root, 'run');
    fs.symlinkSync(real, link);
    const e = refusal(link);
    expect(e.data.problem).toBe('symlink');
    expect(e.message).toContain('remove the symlink');
  });

  it('refuses a dangling symlink rather than following it', () => {
    const root = tempDir();
    const link = path.join(root, 'run');
    fs.symlinkSync(path.join(root, 'elsewhere'), link);
    expect(refusal(link).data.problem).toBe('symlink');
    expect(fs.existsSync(path.join(root, 'elsewhere'))).toBe(false);
  });

  it('refuses a regular file in the way', () => {
    const file = path.join(tempDir(), 'run');
    fs.writeFileSync(file, '');
    expect(refusal(file).data.problem).toBe('not_directory');
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a directory owned by another user and names the owner', () => {
    const dir = path.join(tempDir(), 'run');
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.chownSync(dir, 12345, 12345);
    const e = refusal(dir);
    expect(e.data.problem).toBe('wrong_owner');
    expect(e.message).toContain('uid 12345');
    expect(e.message).toContain('ASTRA_HOME');
  });

  it('reports a directory it cannot create with a typed error', () => {
    const file = path.join(tempDir(), 'file');
    fs.writeFileSync(file, '');
    expect(refusal(path.join(file, 'run')).data.problem).toBe('cannot_create');
  });

  it('names the file in the way when a parent of the directory is a file', () => {
    const file = path.join(tempDir(), 'home-file');
    fs.writeFileSync(file, '');
    const e = refusal(path.join(file, 'run'));
    expect(e.message).toContain(`${file} is a file, not a directory`);
    expect(e.message).not.toContain('ENOENT');
  });

  it('says "read-only file system" for a parent on one, not ENOENT', (ctx) => {
    const mnt = path.join(tempDir(), 'ro');
    fs.mkdirSync(mnt);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', mnt]).status === 0;
    if (!mounted) {
      process.stdout.write('skipped: mounting a read-only tmpfs needs root (CAP_SYS_ADMIN)\n');
      ctx.skip();
      return;
    }
    try {
      const e = refusal(path.join(mnt, 'home', 'run'));
      expect(e.message).toContain(`${mnt} is on a read-only file system (EROFS)`);
      expect(e.message).not.toContain('ENOENT');
    } finally {
      spawnSync('umount', [mnt]);
    }
  });
});

describe('ensureDir', () => {
  it('creates data and log dirs 0700 and accepts a symlinked one', () => {
    const root = tempDir();
    const dir = path.join(root, 'data');
    ensureDir(dir);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    const link = path.join(root, 'logs');
    fs.symlinkSync(dir, link);
    expect(() => ensureDir(link)).not.toThrow();
  });
});
