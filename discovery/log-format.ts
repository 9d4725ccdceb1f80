// Readable daemon log lines: pino's JSON turned into `time LEVEL [pid] message key=value ...`. It
// lives here, below both, because the daemon (its --foreground terminal copy) and the CLI
// (`astra daemon logs`) print the same lines, and the daemon may not import cli/.

const ANSI = { red: 31, green: 32, yellow: 33, cyan: 36, gray: 90, dim: 2 } as const;
type Ansi = keyof typeof ANSI;

function paint(on: boolean, colour: Ansi, text: string): string {
  return on ? `\x1b[${ANSI[colour]}m${text}\x1b[0m` : text;
}

const LEVELS: Record<number, [string, Ansi]> = {
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
  const { time, level, msg, pid, hostname: _hostname, ...rest } = entry;
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
