// Which part of a run of held terminal output can never be seen: not on the final screen, not in its
// scrollback. CommandScreen (screen.ts) holds output while its emulator is behind and, when it feeds
// the held bytes, drops the part found here (and writes one '\r' in its place), when the emulator's
// own state allows it (screen.ts checks that). This file looks only at the bytes.
//
// Why the screen is then byte-for-byte the same, given what screen.ts checks about the emulator (its
// parser in the ground state, no UTF-8 C1 pending, the scroll region the whole screen, reverse
// wraparound off):
// - The held bytes are H; q is H's first '\n', and H[0..q] is plain (the set below), so after it the
//   parser is still in the ground state and the UTF-8 decoder holds nothing (an ASCII byte ends any
//   sequence in @xterm/headless's decoder). Both emulators — the one fed H whole and ours — parse
//   H[0..q] alike.
// - Plain bytes are printable ASCII, UTF-8 lead and continuation bytes except 0xC2 (U+0080–U+009F are
//   the C1 controls to xterm: C2 9B is CSI), and '\r' '\n' '\t' '\b'. The decoder rejects overlong
//   forms, so such bytes decode to printing characters (≥ U+00A0) or those four controls, nothing
//   else. None of them changes a mode, the colours (SGR), the charsets, the tab stops, the margins or
//   the saved cursor: the skipped part H[q+1..p) changes only the cells, the cursor, and which lines
//   scrolled away.
// - p follows "\r\n" (the byte before the '\r' ASCII, so no UTF-8 sequence is open). There the fed
//   emulator has its cursor at column 0 and, '\n' being a control, no character to join to or repeat
//   (xterm resets both on any control); ours gets '\r' after H[q]='\n': the same, except for the
//   cursor's row and the cells.
// - The kept part starts with a plain run holding at least scrollback + 2 × rows + 1 line feeds.
//   In a plain run the cursor's column evolves the same in both (it depends on the characters and
//   the wrap mode, not on the cells), and its row only goes down: within rows − 1 line feeds both
//   cursors are on the bottom row, from then on every line feed scrolls a blank line in (the same
//   blank, the colours being the same) in both, and the same characters land on the same rows. After
//   scrollback + rows more scrolls every line of the buffer (scrollback and screen) is one that
//   scrolled in during that common part: both buffers are line for line the same, cursor and all,
//   and so is everything after. (In the alternate buffer, which has no scrollback, rows scrolls
//   suffice; the normal buffer is untouched by plain bytes.) Reverse wraparound (DECSET 45) is
//   excluded because there a backspace at column 0 climbs back up soft-wrapped rows, and the count
//   above would not bound where the cursor is.

/** 1 for the bytes a skipped (or kept) plain run may hold. */
const PLAIN = new Uint8Array(256);
for (let b = 0x20; b <= 0x7e; b++) PLAIN[b] = 1;
for (let b = 0x80; b <= 0xff; b++) PLAIN[b] = b === 0xc2 ? 0 : 1;
for (const b of [0x08, 0x09, 0x0a, 0x0d]) PLAIN[b] = 1;

const LF = 0x0a;
const CR = 0x0d;

export interface UnseenPart {
  /** Start of the part to drop: just after H's first '\n'. */
  from: number;
  /** End of it (exclusive): just after a "\r\n"; the emulator gets '\r' + H[to..]. */
  to: number;
}

/**
 * The part of `h` that cannot be seen once `keptLineFeeds` line feeds of plain output follow it
 * (screen.ts passes scrollback + 2 × rows + 1), or undefined when there is none.
 */
export function unseenPart(h: Uint8Array, keptLineFeeds: number): UnseenPart | undefined {
  const n = h.length;
  const q = h.indexOf(LF);
  if (q < 0) return undefined;
  for (let i = 0; i < q; i++) if (PLAIN[h[i]!] === 0) return undefined;
  // The plain run after q: [q + 1, end).
  let end = q + 1;
  while (end < n && PLAIN[h[end]!] === 1) end++;
  // f: the keptLineFeeds-th '\n' from the run's end; the kept part must start at or before it.
  let f = end;
  for (let count = 0; count < keptLineFeeds; count++) {
    f = f > q + 1 ? h.lastIndexOf(LF, f - 1) : -1;
    if (f <= q) return undefined;
  }
  // The last "\r\n" before f whose '\r' follows an ASCII byte, inside the run.
  for (let g = f - 1; g >= q + 3; g--) {
    g = h.lastIndexOf(LF, g);
    if (g < q + 3) return undefined;
    if (h[g - 1] === CR && h[g - 2]! < 0x80) return { from: q + 1, to: g + 1 };
  }
  return undefined;
}
