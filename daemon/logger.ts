// The daemon's log: pino to a file, written synchronously so that no line is lost on a signal or a
// crash (NOTES.md). The token is redacted by path and never put in a message string.
import fs from 'node:fs';
import path from 'node:path';
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export function logLevelFrom(env: NodeJS.ProcessEnv): string {
  const level = (env.ASTRA_LOG_LEVEL ?? 'info').toLowerCase();
  return LEVELS.has(level) ? level : 'info';
}

export function createLogger(logFile: string, level: string): Logger {
  fs.mkdirSync(path.dirname(logFile), { recursive: true, mode: 0o700 });
  // The log holds command lines and paths: private, like everything else of the daemon's.
  fs.closeSync(fs.openSync(logFile, 'a', 0o600));
  const destination = pino.destination({ dest: logFile, sync: true, mkdir: true });
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: {
        paths: ['token', '*.token', '*.*.token', 'params.token', 'record.token', 'req.params.token'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** A logger that drops everything, for library users who embed the daemon without a log file. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
