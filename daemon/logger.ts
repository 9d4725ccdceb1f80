// The daemon's log: pino to a file, written synchronously so that no line is lost on a signal or a
// crash (docs/design-notes.md). The token is redacted by path and never put in a message string.
//
// Logging must never take the daemon down: a line the file cannot take (a full disk, an I/O error)
// is dropped and counted, never thrown — pino's own destination throws, and a throw from inside the
// fatal-error handler used to end the process (exit 7). Once writing works again, one line says how
// many were dropped; daemon/status shows the count.
import fs from 'node:fs';
import path from 'node:path';
import { ensureDir } from '../discovery/index.js';
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const WARN = 40;

export function logLevelFrom(env: NodeJS.ProcessEnv): string {
  const level = (env.ASTRA_LOG_LEVEL ?? 'info').toLowerCase();
  return LEVELS.has(level) ? level : 'info';
}

export interface LoggerOptions {
  /** Also given every line (pino's JSON, with its newline): the foreground daemon prints it on the terminal. */
  tee?: (line: string) => void;
}

/** A synchronous append-only destination that drops what it cannot write instead of throwing. */
class LogFile {
  dropped = 0;
  private reported = 0;
  /** The last write stopped mid-line: the next one starts on a new line. */
  private torn = false;

  constructor(
    private readonly fd: number,
    private readonly tee: ((line: string) => void) | undefined,
  ) {}

  write(line: string): void {
    if (this.dropped > this.reported && this.writeAll(this.droppedNotice())) this.reported = this.dropped;
    if (!this.writeAll(line)) this.dropped++;
    if (this.tee) {
      try {
        this.tee(line);
      } catch {
        // The terminal went away; the file still has the line.
      }
    }
  }

  private droppedNotice(): string {
    const missed = this.dropped - this.reported;
    return `${JSON.stringify({
      level: WARN,
      time: Date.now(),
      pid: process.pid,
      msg: `${missed} log line${missed === 1 ? '' : 's'} could not be written (is the disk full?) and ${missed === 1 ? 'was' : 'were'} dropped; logging again`,
      droppedLines: this.dropped,
    })}\n`;
  }

  private writeAll(text: string): boolean {
    let buf = Buffer.from(this.torn ? `\n${text}` : text);
    try {
      while (buf.length > 0) {
        const n = fs.writeSync(this.fd, buf);
        if (n < buf.length) this.torn = true;
        buf = buf.subarray(n);
      }
      this.torn = false;
      return true;
    } catch {
      return false;
    }
  }
}

const files = new WeakMap<Logger, LogFile>();

export function createLogger(logFile: string, level: string, opts: LoggerOptions = {}): Logger {
  ensureDir(path.dirname(logFile), "Astra's log directory");
  // The log holds command lines and paths: private, like everything else of the daemon's.
  const file = new LogFile(fs.openSync(logFile, 'a', 0o600), opts.tee);
  const logger = pino(
    {
      level,
      base: { pid: process.pid },
      redact: {
        paths: ['token', '*.token', '*.*.token', 'params.token', 'record.token', 'req.params.token'],
        censor: '[redacted]',
      },
    },
    file,
  );
  files.set(logger, file);
  return logger;
}

/** Lines this logger (made by createLogger) could not write; 0 for any other logger. */
export function droppedLogLines(logger: Logger): number {
  return files.get(logger)?.dropped ?? 0;
}

/** A logger that drops everything, for library users who embed the daemon without a log file. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
