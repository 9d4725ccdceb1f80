// The daemon log for `astra daemon logs`: its last lines and following it. The line formatter is
// shared with the daemon's --foreground output and lives in discovery/log-format.ts.
import fs from 'node:fs';

export { formatLogLine } from '../discovery/index.js';

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
