// Output helpers for the CLI: colours only on a terminal and never under NO_COLOR; exit codes.
import { AstraError } from '../protocol/index.js';
import { ASTRA_VERSION } from '../discovery/index.js';

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

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90, bold: 1, dim: 2 } as const;
export type Colour = keyof typeof CODES;

export function paint(on: boolean, colour: Colour, text: string): string {
  return on ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

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

/** Stops a command with a one-line error. */
export function fail(message: string): never {
  throw new AstraError('invalid_params', message);
}
