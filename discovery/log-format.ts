// Readable daemon log lines: pino's JSON turned into `time LEVEL [pid] message key=value ...`. It
// lives here, below both, because the daemon (its --foreground terminal copy) and the CLI
// (`astra daemon logs`) print the same lines, and the daemon may not import cli/.

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90, bold: 1, dim: 2 } as const;
export type Colour = keyof typeof CODES;

/** `text` in an SGR colour when `on` (a terminal without NO_COLOR), else as it is. The CLI uses this one too. */
export function paint(on: boolean, colour: Colour, text: string): string {
  return on ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

const LEVELS: Record<number, [string, Colour]> = {
  10: ['TRACE', 'gray'],
  20: ['DEBUG', 'gray'],
  30: ['INFO', 'green'],
  40: ['WARN', 'yellow'],
  50: ['ERROR', 'red'],
  60: ['FATAL', 'red'],
};

/** pino's level number as a word (TRACE … FATAL; LOG for one it does not know). */
export function levelName(level: unknown): string {
  return LEVELS[Number(level)]?.[0] ?? 'LOG';
}

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
