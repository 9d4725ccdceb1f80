// Durations on the command line: plain milliseconds, or a number with ms/s/m/h.
import { AstraError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new AstraError('invalid_params', `${what} takes milliseconds or a duration like 500ms, 30s, 10m, 1h; got "${text}"`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']!);
}
