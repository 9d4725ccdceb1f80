// Keeping Astra's status line on the last row while a program runs in the rows above it: the
// terminal's scroll region is set to rows 1..rows-1 (the program's pseudo-terminal is given rows-1
// rows), so the program's scrolling never reaches the status row. `StatusRowGuard` watches the
// program's output on its way to the user's terminal: a program resetting the scroll region (CSI r)
// would give it the status row back, so such a reset is clamped to rows-1; a clear of the screen,
// a full reset or a switch of screens wipes the status row, so the guard says when to redraw it.
// Leaving (command end, detach, crash handler) resets the region and clears the status row.
import { fitWidth } from './width.js';

const ESC = '\x1b';

/** The rows the program gets, and the status row (1-based), for a terminal of cols × rows. */
export function statusLayout(cols: number, rows: number): { programCols: number; programRows: number; statusRow: number } {
  if (rows < 2) throw new Error(`a status line needs a terminal of at least 2 rows (got ${rows}); make the terminal taller`);
  return { programCols: cols, programRows: rows - 1, statusRow: rows };
}

/**
 * Bytes that make room for the status line: a newline and a step back up (so the last row is free
 * even when the cursor was on it), then the scroll region 1..rows-1 with the cursor kept in place.
 */
export function enterStatusLayout(rows: number): string {
  statusLayout(1, rows);
  return `\n${ESC}[1A${setRegion(rows)}`;
}

/** Sets the region again (after a resize, or when the guard reports the program reset the terminal). */
export function setRegion(rows: number): string {
  // DECSTBM homes the cursor: save and restore around it (DECSC/DECRC).
  return `${ESC}7${ESC}[1;${rows - 1}r${ESC}8`;
}

/**
 * Bytes that draw `text` (fitted to the width) on the status row without moving the program's
 * cursor. `sgr`: the line's colours (reverse video by default). DECSC saves the program's origin
 * mode and character set, so both are set to plain here (a program in origin mode would otherwise
 * have the status line drawn on its own last row, or in line-drawing characters) and come back with
 * DECRC.
 */
export function drawStatusLine(text: string, cols: number, rows: number, sgr = '7'): string {
  // Fitting to cols-1 keeps the last column free: writing there could wrap on some terminals.
  return `${ESC}7${ESC}[?6l${ESC}(B${ESC}[${rows};1H${ESC}[0;${sgr}m${fitWidth(text, cols - 1)}${ESC}[0m${ESC}[K${ESC}8`;
}

/** Bytes that give the whole screen back: region reset, status row cleared, cursor where it was. */
export function leaveStatusLayout(rows: number): string {
  return `${ESC}7${ESC}[r${ESC}[${rows};1H${ESC}[2K${ESC}8`;
}

export interface GuardedOutput {
  data: Buffer;
  /** The status row was wiped or the region reset: send setRegion() and drawStatusLine() after data. */
  redraw: boolean;
}

export class StatusRowGuard {
  private pending = '';

  constructor(private rows: number) {
    statusLayout(1, rows);
  }

  resize(rows: number): void {
    statusLayout(1, rows);
    this.rows = rows;
  }

  push(chunk: Uint8Array): GuardedOutput {
    // Plain text with nothing held: nothing to rewrite, and no string round trip.
    if (this.pending === '' && chunk.indexOf(0x1b) === -1) return { data: Buffer.from(chunk), redraw: false };
    // latin1 keeps every byte as one char, so UTF-8 passes through untouched.
    let s = this.pending + Buffer.from(chunk).toString('latin1');
    this.pending = '';
    let out = '';
    let redraw = false;
    let i = 0;
    while (i < s.length) {
      const esc = s.indexOf(ESC, i);
      if (esc < 0) {
        out += s.slice(i);
        break;
      }
      out += s.slice(i, esc);
      if (esc + 1 >= s.length) {
        this.pending = s.slice(esc);
        break;
      }
      if (s[esc + 1] === 'c') {
        out += ESC + 'c';
        redraw = true;
        i = esc + 2;
        continue;
      }
      if (s[esc + 1] !== '[') {
        out += ESC;
        i = esc + 1;
        continue;
      }
      let j = esc + 2;
      while (j < s.length && (s.charCodeAt(j) < 0x40 || s.charCodeAt(j) > 0x7e)) j++;
      if (j >= s.length) {
        if (s.length - esc > 64) {
          out += s.slice(esc); // not a sequence worth holding
          s = '';
        } else this.pending = s.slice(esc);
        break;
      }
      const params = s.slice(esc + 2, j);
      const final = s[j]!;
      out += this.rewrite(params, final, () => (redraw = true));
      i = j + 1;
    }
    return { data: Buffer.from(out, 'latin1'), redraw };
  }

  private rewrite(params: string, final: string, needRedraw: () => void): string {
    const seq = `${ESC}[${params}${final}`;
    const last = this.rows - 1;
    if (final === 'r' && /^[\d;]*$/.test(params)) {
      const [top, bottom] = params.split(';').map((p) => (p === '' ? undefined : Number(p)));
      const b = bottom === undefined || bottom === 0 || bottom > last ? last : bottom;
      const t = top === undefined || top === 0 ? 1 : Math.min(top, b);
      return `${ESC}[${t};${b}r`;
    }
    // Erase in display (any part may reach the status row) and screen switches wipe the status row.
    if (final === 'J') needRedraw();
    if ((final === 'h' || final === 'l') && /^\?/.test(params) && /(^|;)(47|1047|1049)(;|$)/.test(params.slice(1))) needRedraw();
    return seq;
  }
}
