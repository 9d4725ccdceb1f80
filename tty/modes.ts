// The shared room `terminal/` (pure byte logic of terminals, imported by runtime/ and cli/; imports
// nothing). What a program's output may not do to the user's own terminal, and how to put that terminal back.
//
// `restoreSequence()` resets every mode a program can leave set (mouse tracking, alternate screen,
// bracketed paste, hidden cursor, application keypad and cursor keys, scroll region, ...): a client
// writes it when a command ends, on detach, and from its crash handler. `OutputFilter` strips from
// bytes forwarded to a user's terminal the sequences that change that terminal outside the program's
// screen: title changes (OSC 0/1/2 and the title stack), palette and colour changes, font, clipboard
// writes (OSC 52), desktop notifications, the working-directory report, and window operations (CSI t).
// The filter is stateful: a sequence split across chunks is held until it is complete. The journal
// keeps every byte; only what is forwarded is filtered.

const ESC = 0x1b;
const BEL = 0x07;

/** OSC numbers that act on the user's terminal rather than draw on the program's screen. */
const STRIPPED_OSC = new Set([0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 46, 50, 51, 52, 104, 105, 106, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 777, 1337]);

/** A string sequence (OSC, DCS, APC, PM, SOS) that has not ended within this many bytes is dropped. */
export const MAX_SEQUENCE_BYTES = 64 * 1024;

export interface RestoreOptions {
  /** Leave the alternate screen (default true); a client that drew its own alternate screen may skip it. */
  leaveAlternateScreen?: boolean;
}

/** The bytes that reset every terminal mode a program can leave behind. */
export function restoreSequence(opts: RestoreOptions = {}): string {
  return [
    opts.leaveAlternateScreen === false ? '' : '\x1b[?1049l\x1b[?1047l\x1b[?47l',
    // Mouse tracking in every encoding, and focus reports.
    '\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l\x1b[?1004l',
    '\x1b[?2004l', // bracketed paste
    '\x1b[?1l\x1b>', // application cursor keys, application keypad
    '\x1b[r', // scroll region: whole screen
    '\x1b[?6l\x1b[?7h\x1b[4l', // origin mode off, autowrap on, insert mode off
    '\x1b[0m\x1b[0 q\x1b[?25h', // colours and attributes, cursor shape, cursor visible
  ].join('');
}

type State = 'ground' | 'esc' | 'csi' | 'osc' | 'string' | 'stringEsc' | 'oscEsc';

export class OutputFilter {
  private state: State = 'ground';
  /** The sequence being read (held until we know whether it passes). */
  private seq: number[] = [];
  private dropping = false;

  /** Returns the bytes to forward; a sequence left incomplete at the end waits for the next chunk. */
  push(data: Uint8Array): Buffer {
    // Plain text (no ESC) in the ground state, the bulk of most output, passes as it is (a copy, as
    // below: the caller's buffer may be reused once this returns).
    if (this.state === 'ground' && data.indexOf(ESC) === -1) return Buffer.from(data);
    const out: Buffer[] = [];
    let from = 0; // start of the pending run of plain bytes
    for (let i = 0; i < data.length; i++) {
      if (this.state === 'ground') {
        // Straight to the next ESC: the bytes before it are plain.
        const at = data.indexOf(ESC, i);
        if (at === -1) break;
        i = at;
        if (i > from) out.push(Buffer.from(data.subarray(from, i)));
        this.state = 'esc';
        this.seq = [ESC];
        continue;
      }
      this.take(data[i]!, out);
      if ((this.state as State) === 'ground') from = i + 1;
    }
    if (this.state === 'ground' && from < data.length) out.push(Buffer.from(data.subarray(from)));
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  private take(b: number, out: Buffer[]): void {
    if (!this.dropping) this.seq.push(b);
    if (this.seq.length > MAX_SEQUENCE_BYTES) {
      // A runaway string is not screen content: drop it until it ends.
      this.dropping = true;
      this.seq = [];
    }
    switch (this.state) {
      case 'esc':
        if (b === 0x5b) this.state = 'csi'; // [
        else if (b === 0x5d) this.state = 'osc'; // ]
        else if (b === 0x50 || b === 0x5f || b === 0x5e || b === 0x58) this.state = 'string'; // P _ ^ X
        else if (b >= 0x20 && b <= 0x2f) return; // intermediate bytes (ESC ( B and the like)
        else this.end(out, true);
        return;
      case 'csi':
        // CSI … t: window operations (move, resize, iconify, title stack, reports) act on the window.
        if (b >= 0x40 && b <= 0x7e) this.end(out, b !== 0x74);
        else if (b === ESC) this.restartAtEsc(out);
        return;
      case 'osc':
        if (b === BEL) this.end(out, this.oscPasses());
        else if (b === ESC) this.state = 'oscEsc';
        return;
      case 'oscEsc':
        if (b === 0x5c) this.end(out, this.oscPasses());
        else this.state = 'osc';
        return;
      case 'string':
        if (b === ESC) this.state = 'stringEsc';
        return;
      case 'stringEsc':
        if (b === 0x5c) this.end(out, true);
        else this.state = 'string';
        return;
      default:
        return;
    }
  }

  /** A CSI interrupted by ESC: the broken sequence goes as it came, a new one starts. */
  private restartAtEsc(out: Buffer[]): void {
    this.seq.pop();
    this.end(out, true);
    this.state = 'esc';
    this.seq = [ESC];
  }

  private end(out: Buffer[], pass: boolean): void {
    if (pass && !this.dropping) out.push(Buffer.from(this.seq));
    this.seq = [];
    this.dropping = false;
    this.state = 'ground';
  }

  private oscPasses(): boolean {
    if (this.dropping) return false;
    let n = 0;
    let digits = 0;
    for (let i = 2; i < this.seq.length; i++) {
      const c = this.seq[i]!;
      if (c < 0x30 || c > 0x39) break;
      n = n * 10 + (c - 0x30);
      digits++;
    }
    return digits > 0 && !STRIPPED_OSC.has(n);
  }
}
