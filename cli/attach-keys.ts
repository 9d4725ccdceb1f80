// The keys `astra attach` reads from a raw terminal: printable characters, or one of its own keys.

export type Key = 'enter' | 'backspace' | 'ctrl-c' | 'ctrl-d' | 'ctrl-t' | 'ctrl-u' | 'ctrl-l';

const CONTROL: Record<string, Key> = { '\x7f': 'backspace', '\b': 'backspace', '\x03': 'ctrl-c', '\x04': 'ctrl-d', '\x14': 'ctrl-t', '\x15': 'ctrl-u', '\x0c': 'ctrl-l' };

/** Splits terminal input into printable characters (length 1) and keys; escape sequences are dropped. */
export function decodeKeys(text: string): (Key | string)[] {
  const keys: (Key | string)[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\x1b') {
      // An escape sequence (arrows, function keys): skip it whole.
      const next = text[i + 1];
      if (next === '[' || next === 'O') {
        i += 2;
        while (i < text.length && !/[@-~]/.test(text[i]!)) i++;
      }
      continue;
    }
    if (ch === '\r' || ch === '\n') {
      // "\r\n" from a pasted line is one Enter.
      if (ch === '\r' && text[i + 1] === '\n') i++;
      keys.push('enter');
    } else if (CONTROL[ch]) keys.push(CONTROL[ch]);
    else if (ch.charCodeAt(0) >= 0x20) keys.push(ch);
  }
  return keys;
}
