// A terminal size, checked once where it enters: 1–1000 columns and rows. Its own file so that the
// screen worker (screen.ts) loads this and not the pseudo-terminal code.
import { AstraError } from '../protocol/errors.js';

export function checkTerminalSize(cols: number, rows: number): void {
  for (const [name, v] of [['cols', cols], ['rows', rows]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 1000) {
      throw new AstraError('invalid_params', `${name} must be an integer from 1 to 1000 (got ${String(v)}); send the terminal's real size`);
    }
  }
}
