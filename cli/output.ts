// Output helpers for the CLI: colours only on a terminal and never under NO_COLOR; exit codes.
import { AstraError } from '../protocol/index.js';
import { ASTRA_VERSION, paint, type Colour } from '../discovery/index.js';

export const CLI_VERSION = ASTRA_VERSION;

export const ExitCode = { ok: 0, error: 1, usage: 2, notRunning: 3 } as const;

export interface Output {
  stdout(line: string): void;
  stderr(line: string): void;
  color: boolean;
}

export function terminalOutput(env: NodeJS.ProcessEnv = process.env): Output {
  return {
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
    color: Boolean(process.stdout.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb',
  };
}

export { paint, type Colour } from '../discovery/index.js';

export function style(out: Output, colour: Colour, text: string): string {
  return paint(out.color, colour, text);
}

/**
 * Text from a session (a title, a client's name) made safe for one line of a table or status line:
 * escape sequences dropped, newlines, tabs and other control characters turned into spaces.
 */
export function cleanText(s: string): string {
  return (
    s
      // eslint-disable-next-line no-control-regex
      .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]?/g, '')
      // eslint-disable-next-line no-control-regex
      .replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029]+/g, ' ')
      .replace(/ {2,}/g, ' ')
      .trim()
  );
}

/** Milliseconds as the shortest exact duration the command line accepts back: 5000 → "5s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * A local time as `2026-12-01 14:05:09` (`HH:MM:SS` alone with `timeOnly`): the same in every
 * locale, and without Intl — the first toLocaleString() of a process loads ICU's locale data, about
 * 17 ms, which was a third of what `astra daemon status` costs over `node -e 0`.
 */
export function localTime(ms: number, timeOnly = false): string {
  const d = new Date(ms);
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return timeOnly ? time : `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${time}`;
}

/**
 * Wraps help prose to the terminal (at most 100 columns). A line like "  TERM   text" keeps its
 * columns: continuations line up under the text; other lines continue at their own indent.
 */
export function wrapText(text: string, width = Math.min(100, process.stdout.columns || 80)): string {
  return text
    .split('\n')
    .map((line) => {
      if (line.length <= width) return line;
      const m = /^(\s*\S+(?:\s\S+)*?\s{2,})(.*)$/.exec(line) ?? /^(\s*)(.*)$/.exec(line)!;
      const head = m[1]!;
      const hang = ' '.repeat(head.length);
      const out: string[] = [];
      let cur = head;
      let fresh = true;
      for (const w of m[2]!.split(/\s+/).filter(Boolean)) {
        if (!fresh && cur.length + 1 + w.length > width) {
          out.push(cur);
          cur = `${hang}${w}`;
        } else cur = fresh ? `${cur}${w}` : `${cur} ${w}`;
        fresh = false;
      }
      out.push(cur);
      return out.join('\n');
    })
    .join('\n');
}

/** Stops a command with a one-line error. */
export function fail(message: string): never {
  throw new AstraError('invalid_params', message);
}
