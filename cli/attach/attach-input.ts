// Keys of `astra attach` on their way in: the prefix key that gets Astra's own keys back while a
// program has the keyboard (`KeyRouter`, pure), and the controller's keys batched to the running
// command (`InputSender`: one command/input request in flight, each at most 64 KiB, in order).
//
// With the prefix key (Ctrl-] unless ASTRA_PREFIX_KEY or --prefix says otherwise) every byte the
// user types passes through untouched except the prefix: the key after it is Astra's —
//   c or Ctrl-C  cancel the turn       d or Ctrl-D  detach        t or Ctrl-T  take control
//   l or Ctrl-L  redraw                ? or h       show the keys  the prefix again: send it literally
// Anything else (Escape too) leaves prefix mode and is not sent.
import { AstraError, MAX_COMMAND_INPUT_BYTES } from '../../protocol/index.js';

export const DEFAULT_PREFIX_KEY = 'C-]';

export interface PrefixKey {
  /** The control byte the key sends. */
  byte: number;
  /** How the status line names it, e.g. "Ctrl-]". */
  name: string;
}

const SPECIAL: Record<string, number> = { ']': 0x1d, '\\': 0x1c, '^': 0x1e, _: 0x1f, '@': 0x00, ' ': 0x00, space: 0x00 };

/**
 * Reads a prefix key as people write it: `C-]`, `Ctrl-]`, `ctrl+a`, `^B`. Only control keys are
 * allowed (a printable prefix would make that character untypable); Escape, Enter, Tab, Backspace
 * and Ctrl-C/D/J/M/Z, which programs need as they are, are refused.
 */
export function parsePrefixKey(spec: string): PrefixKey {
  const m = /^(?:c|ctrl)[-+](.+)$/i.exec(spec.trim()) ?? /^\^(.)$/.exec(spec.trim());
  const bad = (why: string) =>
    new AstraError('invalid_params', `prefix key "${spec}" ${why}; write it as C-] (the default), C-a, C-b, C-\\ or ^]`, { field: 'prefix' });
  if (!m) throw bad('is not a control key');
  const k = m[1]!.toLowerCase();
  let byte: number;
  if (k.length === 1 && k >= 'a' && k <= 'z') byte = k.charCodeAt(0) - 0x60;
  else if (SPECIAL[k] !== undefined) byte = SPECIAL[k]!;
  else throw bad('is not a control key');
  // Ctrl-C, Ctrl-D, Tab (I), Enter (J, M), Backspace (H), Escape ([) and Ctrl-Z must reach programs.
  if ([0x03, 0x04, 0x08, 0x09, 0x0a, 0x0d, 0x1a, 0x1b].includes(byte)) throw bad('is a key programs need (Ctrl-C, Ctrl-D, Tab, Enter, Backspace, Ctrl-Z)');
  return { byte, name: prefixName(byte) };
}

function prefixName(byte: number): string {
  return byte === 0 ? 'Ctrl-Space' : `Ctrl-${String.fromCharCode(byte + 0x40)}`;
}

export type PrefixCommand = 'cancel' | 'detach' | 'take' | 'redraw' | 'help';

export type Routed =
  /** Bytes that are not Astra's: to the program (or the input line when no program runs). */
  | { type: 'data'; data: Buffer }
  /** The prefix was pressed: the next key is Astra's. */
  | { type: 'prefix' }
  | { type: 'command'; command: PrefixCommand }
  /** A key after the prefix that means nothing; named for the hint. */
  | { type: 'unknown'; key: string };

const AFTER_PREFIX: Record<string, PrefixCommand> = {
  c: 'cancel', '\x03': 'cancel', d: 'detach', '\x04': 'detach', t: 'take', '\x14': 'take',
  l: 'redraw', '\x0c': 'redraw', '?': 'help', h: 'help',
};

/** Splits the user's key bytes into data and Astra's keys; prefix mode carries over between chunks. */
export class KeyRouter {
  private armed = false;

  constructor(readonly prefix: PrefixKey) {}

  /** True between the prefix and the key after it. */
  get prefixArmed(): boolean {
    return this.armed;
  }

  /** Leaves prefix mode (the program ended, control moved): the next key is an ordinary one. */
  disarm(): void {
    this.armed = false;
  }

  feed(chunk: Uint8Array): Routed[] {
    const out: Routed[] = [];
    let from = 0;
    const flush = (to: number) => {
      if (to > from) out.push({ type: 'data', data: Buffer.from(chunk.subarray(from, to)) });
    };
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.armed) {
        this.armed = false;
        from = i + 1;
        if (b === this.prefix.byte) {
          out.push({ type: 'data', data: Buffer.from([b]) });
          continue;
        }
        // An escape sequence after the prefix (an arrow key) is one unknown key, not several.
        let end = i + 1;
        if (b === 0x1b && (chunk[i + 1] === 0x5b || chunk[i + 1] === 0x4f)) {
          end = i + 2;
          while (end < chunk.length && (chunk[end]! < 0x40 || chunk[end]! > 0x7e)) end++;
          end = Math.min(chunk.length, end + 1);
        }
        const key = Buffer.from(chunk.subarray(i, end)).toString('latin1');
        const command = AFTER_PREFIX[key.length === 1 ? key.toLowerCase() : key];
        out.push(command ? { type: 'command', command } : { type: 'unknown', key: keyName(key) });
        i = end - 1;
        from = end;
        continue;
      }
      if (b === this.prefix.byte) {
        flush(i);
        this.armed = true;
        out.push({ type: 'prefix' });
        from = i + 1;
      }
    }
    flush(chunk.length);
    return out;
  }
}

function keyName(key: string): string {
  if (key === '\x1b') return 'Escape';
  if (key.startsWith('\x1b')) return 'a function key';
  const c = key.charCodeAt(0);
  if (key.length === 1 && c < 0x20) return `Ctrl-${String.fromCharCode(c + 0x40)}`;
  if (c === 0x7f) return 'Backspace';
  return JSON.stringify(key);
}

export interface InputTarget {
  /** Sends one command/input request; resolves when the daemon has taken it. */
  send(turnId: string, data: Buffer): Promise<void>;
  /** A request was refused (the turn ended, control moved): the bytes of it are dropped. */
  refused(error: unknown): void;
}

/**
 * The controller's keys to the running command: bytes typed in one tick go as one request, a
 * request waits for the one before it (so keys arrive in order), and none is over the protocol's
 * limit. Bytes for a turn that has ended are dropped with the queue.
 */
export class InputSender {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private turnId: string | undefined;
  private inFlight = false;
  private scheduled = false;
  private idle: Promise<void> = Promise.resolve();
  private settle: (() => void) | undefined;

  constructor(private readonly target: InputTarget) {}

  /** Queues bytes for the turn's command; a different turn drops what was queued for the last. */
  write(turnId: string, data: Buffer): void {
    if (data.length === 0) return;
    if (this.turnId !== turnId) this.clear();
    this.turnId = turnId;
    this.queue.push(data);
    this.queuedBytes += data.length;
    if (!this.settle) this.idle = new Promise((r) => (this.settle = r));
    this.schedule();
  }

  /** Drops what is queued (the command ended). */
  clear(): void {
    this.queue = [];
    this.queuedBytes = 0;
  }

  /** Resolves once everything queued has been sent (or dropped). */
  whenIdle(): Promise<void> {
    return this.idle;
  }

  get pendingBytes(): number {
    return this.queuedBytes;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      while (this.queuedBytes > 0 && this.turnId !== undefined) {
        const turnId = this.turnId;
        const all = Buffer.concat(this.queue);
        const chunk = all.subarray(0, MAX_COMMAND_INPUT_BYTES);
        const rest = all.subarray(chunk.length);
        this.queue = rest.length ? [Buffer.from(rest)] : [];
        this.queuedBytes = rest.length;
        try {
          await this.target.send(turnId, Buffer.from(chunk));
        } catch (e) {
          if (this.turnId === turnId) this.clear();
          this.target.refused(e);
        }
      }
    } finally {
      this.inFlight = false;
      if (this.queuedBytes === 0) {
        const s = this.settle;
        this.settle = undefined;
        s?.();
      } else this.schedule();
    }
  }
}
