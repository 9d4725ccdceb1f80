import { describe, it, expect } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { resolvePaths } from '../../discovery/index.js';
import { AstraError } from '../../protocol/index.js';

describe('resolvePaths', () => {
  it('puts everything under ASTRA_HOME when it is set, with short names', () => {
    const p = resolvePaths({ ASTRA_HOME: '/srv/h', XDG_RUNTIME_DIR: '/run/user/5', HOME: '/home/u' });
    expect(p).toEqual({
      home: '/srv/h',
      runtimeDir: '/srv/h/run',
      dataDir: '/srv/h/data',
      logDir: '/srv/h/logs',
      logFile: '/srv/h/logs/daemon.log',
      recordPath: '/srv/h/run/daemon.json',
      spawnLockPath: '/srv/h/run/spawn.lock',
      instanceLockPath: '/srv/h/run/instance.lock',
    });
  });

  it('refuses a relative ASTRA_HOME, naming it and the fix (each working directory would get its own daemon)', () => {
    let err: unknown;
    try {
      resolvePaths({ ASTRA_HOME: 'rel/home' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AstraError);
    expect((err as AstraError).reason).toBe('invalid_params');
    expect((err as AstraError).message).toContain('ASTRA_HOME must be an absolute path; got "rel/home"');
  });

  it('uses $XDG_RUNTIME_DIR/astra for the runtime dir and the XDG data and state dirs otherwise', () => {
    const p = resolvePaths({ XDG_RUNTIME_DIR: '/run/user/5', HOME: '/home/u' });
    expect(p.home).toBeUndefined();
    expect(p.runtimeDir).toBe('/run/user/5/astra');
    expect(p.recordPath).toBe('/run/user/5/astra/daemon.json');
    if (process.platform === 'linux') {
      expect(p.dataDir).toBe('/home/u/.local/share/astra');
      expect(p.logDir).toBe('/home/u/.local/state/astra');
      expect(p.logFile).toBe('/home/u/.local/state/astra/daemon.log');
      const xdg = resolvePaths({ XDG_RUNTIME_DIR: '/run/user/5', HOME: '/home/u', XDG_DATA_HOME: '/d', XDG_STATE_HOME: '/s' });
      expect([xdg.dataDir, xdg.logDir]).toEqual(['/d/astra', '/s/astra']);
    }
  });

  it('falls back to <tmpdir>/astra-<uid> without XDG_RUNTIME_DIR (or with a relative one)', () => {
    const expected = path.join(os.tmpdir(), `astra-${process.getuid?.()}`);
    expect(resolvePaths({ HOME: '/home/u' }).runtimeDir).toBe(expected);
    expect(resolvePaths({ HOME: '/home/u', XDG_RUNTIME_DIR: 'relative' }).runtimeDir).toBe(expected);
    expect(resolvePaths({ HOME: '/home/u', ASTRA_HOME: '' }).runtimeDir).toBe(expected);
  });

  it('reads the process environment by default', () => {
    const saved = process.env.ASTRA_HOME;
    process.env.ASTRA_HOME = '/from/process/env';
    try {
      expect(resolvePaths().runtimeDir).toBe('/from/process/env/run');
    } finally {
      if (saved === undefined) delete process.env.ASTRA_HOME;
      else process.env.ASTRA_HOME = saved;
    }
  });
});
