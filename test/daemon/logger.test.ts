// The daemon's log never throws: a line the file cannot take is dropped and counted (issue 20).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, droppedLogLines, silentLogger } from '../../daemon/index.js';

const linux = process.platform === 'linux' && fs.existsSync('/dev/full');
if (!linux) process.stderr.write('skipped: the log-drop test writes to /dev/full (Linux only)\n');

describe('the daemon log', () => {
  it.skipIf(!linux)('drops and counts the lines a full device refuses, and never throws', () => {
    const log = createLogger('/dev/full', 'info');
    expect(() => {
      log.info('one');
      log.error({ err: new Error('two') }, 'two');
      log.fatal('three');
    }).not.toThrow();
    expect(droppedLogLines(log)).toBe(3);
  });

  it('writes lines as JSON to its file and counts nothing dropped when all were written', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'alog-'));
    try {
      const file = path.join(dir, 'logs', 'daemon.log');
      const log = createLogger(file, 'info');
      log.info({ token: 'secret-token', sessionId: 's1' }, 'hello');
      const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(lines).toEqual([expect.objectContaining({ msg: 'hello', sessionId: 's1', token: '[redacted]', level: 30 })]);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(droppedLogLines(log)).toBe(0);
      expect(droppedLogLines(silentLogger())).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
