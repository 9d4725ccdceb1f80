// Readable daemon log lines: pino's JSON turned into `time LEVEL message key=value ...`.
import fs from 'node:fs';
import { paint, type Colour } from './output.js';

const LEVELS: Record<number, [string, Colour]> = {
  10: ['TRACE', 'gray'],
  20: ['DEBUG', 'gray'],
  30: ['INFO', 'green'],
  40: ['WARN', 'yellow'],
  50: ['ERROR', 'red'],
  60: ['FATAL', 'red'],
};

export function formatLogLine(line: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line; // the daemon's own stderr (an early crash) is plain text
  }
  if (typeof entry !== 'object' || entry === null) return line;
  const { time, level, msg, pid, hostname, ...rest } = entry;
  void hostname;
  const [name, colour] = LEVELS[Number(level)] ?? ['LOG', 'gray'];
  const when = typeof time === 'number' ? new Date(time).toISOString() : '';
  const extras = Object.entries(rest)
    .map(([k, v]) => {
      if (k === 'err' && v && typeof v === 'object') {
        const err = v as { message?: string; stack?: string };
        return `err=${JSON.stringify(err.message ?? '')}${err.stack ? `\n${err.stack}` : ''}`;
      }
      return `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`;
    })
    .join(' ');
  return `${paint(color, 'dim', when)} ${paint(color, colour, name.padEnd(5))} ${paint(color, 'gray', `[${String(pid ?? '')}]`)} ${msg ?? ''}${extras ? ` ${paint(color, 'cyan', extras)}` : ''}`;
}

/** The last n lines of a file (reads at most the last few MiB). */
export function tailLines(file: string, n: number): string[] {
  if (n === 0) return [];
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return [];
  }
  try {
    const size = fs.fstatSync(fd).size;
    const want = Math.min(size, 4 * 1024 * 1024);
    const buf = Buffer.alloc(want);
    fs.readSync(fd, buf, 0, want, size - want);
    const lines = buf.toString('utf8').split('\n').filter((l) => l.length > 0);
    return lines.slice(-n);
  } finally {
    fs.closeSync(fd);
  }
}

/** Calls onLine for every line appended to the file, until the process is interrupted. */
export function followFile(file: string, onLine: (line: string) => void): Promise<never> {
  let offset = 0;
  try {
    offset = fs.statSync(file).size;
  } catch {
    offset = 0;
  }
  let partial = '';
  return new Promise<never>(() => {
    const poll = (): void => {
      let size = 0;
      try {
        size = fs.statSync(file).size;
      } catch {
        return;
      }
      if (size < offset) offset = 0; // truncated or replaced
      if (size === offset) return;
      const fd = fs.openSync(file, 'r');
      const buf = Buffer.alloc(size - offset);
      fs.readSync(fd, buf, 0, buf.length, offset);
      fs.closeSync(fd);
      offset = size;
      const text = partial + buf.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (l) onLine(l);
    };
    setInterval(poll, 200);
  });
}
