// A CommandScreen holds output while its emulator is behind and drops, from a large held run, what
// can never be on the final screen nor in its scrollback (pty/unseen-output.ts). These
// tests hold it to "exactly": random streams fed in random chunks, with snapshots and resizes at
// random points, against @xterm/headless's own Terminal fed the same bytes between the same points
// in one write each (no holding, no skipping): the same text, scrollback, cursor, modes, serialised
// screen — and at the end every cell of both buffers.
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Terminal as XtermTerminal } from '@xterm/headless';
import { CommandScreen, type ScreenSnapshot } from '../../pty/screen.js';
import { unseenPart } from '../../pty/unseen-output.js';

const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');
const { SerializeAddon } = requireCjs('@xterm/addon-serialize') as typeof import('@xterm/addon-serialize');

interface Internals {
  coreService: { isCursorHidden: boolean };
  buffer: { scrollTop: number; scrollBottom: number };
}

/** What a snapshot shows, taken from a plain Terminal the way CommandScreen takes it. */
type Shown = Omit<ScreenSnapshot, 'screen'> & { screen: string };

function shownBy(t: XtermTerminal, ser: InstanceType<typeof SerializeAddon>, scrollbackLines: number): Shown {
  const a = t.buffer.active;
  const text: string[] = [];
  for (let y = 0; y < t.rows; y++) text.push(a.getLine(a.viewportY + y)?.translateToString(true) ?? '');
  const n = t.buffer.normal;
  const sb: string[] = [];
  for (let y = 0; y < n.baseY; y++) {
    const row = n.getLine(y)!;
    const s = row.translateToString(true);
    if (row.isWrapped && sb.length > 0) sb[sb.length - 1] += s;
    else sb.push(s);
  }
  const core = (t as unknown as { _core: Internals })._core;
  let extra = '';
  const { scrollTop: top, scrollBottom: bottom } = core.buffer;
  if (top !== 0 || bottom !== t.rows - 1) extra += `\x1b[${top + 1};${bottom + 1}r\x1b[${a.cursorY + 1};${a.cursorX + 1}H`;
  if (core.coreService.isCursorHidden) extra += '\x1b[?25l';
  const m = t.modes;
  return {
    cols: t.cols,
    rows: t.rows,
    screen: ser.serialize({ scrollback: 0 }) + extra,
    scrollback: sb.slice(-scrollbackLines),
    alternate: a.type === 'alternate',
    cursor: { x: a.cursorX, y: a.cursorY },
    cursorVisible: !core.coreService.isCursorHidden,
    modes: { mouseTracking: m.mouseTrackingMode, bracketedPaste: m.bracketedPasteMode, applicationCursorKeys: m.applicationCursorKeysMode, applicationKeypad: m.applicationKeypadMode },
    text,
  };
}

function shownIn(s: ScreenSnapshot): Shown {
  return { ...s, screen: s.screen.toString('utf8') };
}

/** Every cell of both buffers, the wrap flags, cursor, viewport and all modes. */
function everything(t: XtermTerminal): unknown {
  const dump = (b: XtermTerminal['buffer']['normal']) => {
    const lines: string[] = [];
    const cell = b.getNullCell();
    for (let y = 0; y < b.length; y++) {
      const line = b.getLine(y)!;
      let s = line.isWrapped ? 'W|' : ' |';
      for (let x = 0; x < t.cols; x++) {
        line.getCell(x, cell);
        s += `${cell.getChars()}/${cell.getWidth()}/${cell.getFgColorMode()}:${cell.getFgColor()}/${cell.getBgColorMode()}:${cell.getBgColor()}/${cell.isBold()}${cell.isInverse()}${cell.isUnderline()}|`;
      }
      lines.push(s);
    }
    return { lines, baseY: b.baseY, viewportY: b.viewportY, cursorX: b.cursorX, cursorY: b.cursorY };
  };
  return { normal: dump(t.buffer.normal), alternate: dump(t.buffer.alternate), active: t.buffer.active.type, modes: { ...t.modes }, cols: t.cols, rows: t.rows };
}

// Pieces of a stream: plain text of every kind the skip lets through, and the controls it must not.
const PLAIN_PIECES = ['abc', 'hello world ', '\u6f22\u5b57', '\u{1F600}', 'e\u0301', 'caf\u00e9 \u00a9', '\t', 'x\b', 'w'.repeat(27), '50%\r60%\r', '\r', '\r\b\b', '12345678'];
const CONTROL_PIECES = [
  '\x1b[31m', '\x1b[0m', '\x1b[48;5;100m', '\x1b[1;7m', '\x1b[3;5H', '\x1b[2A', '\x1b[2J', '\x1b[K', '\x1b[2;4r', '\x1b[r',
  '\x1b[?1049h', '\x1b[?1049l', '\x1b(0', '\x1b(B', '\x0e', '\x0f', '\x1bH', '\x1b[3g', '\u009b32m', '\x1b[?45h', '\x1b[?45l',
  '\x1b[?7l', '\x1b[?7h', '\x1b[4h', '\x1b[4l', '\x1b[3b', '\x1b[?25l', '\x1b[?25h', '\x1bM', '\x1b7', '\x1b8',
  '\x1b[3', '\x1b]0;title\n', '\x07', '\x1b(', '\x1bP', '\x1b\\',
];
const RAW_PIECES = [Buffer.from([0xff]), Buffer.from([0xc0, 0x9b]), Buffer.from([0x9b]), Buffer.from([0xe2, 0x80]), Buffer.from([0xc2]), Buffer.from([0x7f]), Buffer.from([0x00])];

const piece = fc.oneof(
  // A line as a pseudo-terminal gives it ("\r\n"), or as a program wrote it ("\n": the column stays).
  { weight: 6, arbitrary: fc.tuple(fc.array(fc.constantFrom(...PLAIN_PIECES), { maxLength: 4 }), fc.constantFrom('\r\n', '\r\n', '\n')).map(([p, end]) => Buffer.from(p.join('') + end)) },
  // A flood of lines: numbers, or text some of which wraps, ended either way.
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.integer({ min: 5, max: 120 }), fc.constantFrom('\r\n', '\n'), fc.constantFrom('', 'line ', 'w'.repeat(15), '\u6f22\r\b'))
      .map(([k, end, text]) => Buffer.from(Array.from({ length: k }, (_, i) => `${text}${i + 1}${end}`).join(''))),
  },
  { weight: 1, arbitrary: fc.constant(Buffer.from('\n')) },
  { weight: 2, arbitrary: fc.constantFrom(...CONTROL_PIECES).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_PIECES) },
);

type Step = { kind: 'write'; size: number } | { kind: 'yield' } | { kind: 'snapshot'; withScrollback: boolean } | { kind: 'resize'; cols: number; rows: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 1, max: 400 }).map((size) => ({ kind: 'write' as const, size })) },
  { weight: 4, arbitrary: fc.constant({ kind: 'yield' as const }) },
  { weight: 2, arbitrary: fc.boolean().map((withScrollback) => ({ kind: 'snapshot' as const, withScrollback })) },
  { weight: 1, arbitrary: fc.record({ cols: fc.integer({ min: 8, max: 20 }), rows: fc.integer({ min: 2, max: 7 }) }).map((r) => ({ kind: 'resize' as const, ...r })) },
);

// The emulator logs each byte it cannot parse (DEL, NUL in the streams below) with console.error.
const consoleError = console.error;
beforeAll(() => {
  console.error = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('xterm.js: Parsing error')) return;
    consoleError(...args);
  };
});
afterAll(() => {
  console.error = consoleError;
});

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Feeds `stream` to a CommandScreen by `steps` (cycled until the stream is out) and to a plain
 * Terminal between the same points; compares every snapshot, then everything. Returns the bytes skipped.
 */
async function compare(stream: Buffer, steps: Step[], o: { cols: number; rows: number; scrollback: number; skipAtLeast: number }): Promise<number> {
  const screen = new CommandScreen({ cols: o.cols, rows: o.rows, scrollbackLines: o.scrollback, skipAtLeast: o.skipAtLeast });
  const ref = new Terminal({ cols: o.cols, rows: o.rows, scrollback: o.scrollback, allowProposedApi: true });
  const ser = new SerializeAddon();
  ref.loadAddon(ser);
  const pairs: Promise<[Shown, Shown]>[] = [];
  let unsent = 0; // stream bytes written to the screen and not yet to the reference
  let at = 0;
  const toReference = () => {
    if (unsent === 0) return;
    ref.write(stream.subarray(at - unsent, at));
    unsent = 0;
  };
  const snapshotBoth = (withScrollback: boolean) => {
    toReference();
    const theirs = new Promise<Shown>((resolve) => ref.write('', () => resolve(shownBy(ref, ser, o.scrollback))));
    const scrollbackOf = (s: Shown) => (withScrollback ? s.scrollback : []);
    pairs.push(Promise.all([screen.snapshot(withScrollback).then(shownIn), theirs.then((s) => ({ ...s, scrollback: scrollbackOf(s) }))]));
  };
  try {
    const plan: Step[] = steps.some((s) => s.kind === 'write') ? steps : [...steps, { kind: 'write', size: stream.length }];
    for (let i = 0; at < stream.length; i++) {
      const s = plan[i % plan.length]!;
      if (s.kind === 'write') {
        const chunk = stream.subarray(at, at + s.size);
        screen.write(chunk);
        at += chunk.length;
        unsent += chunk.length;
      } else if (s.kind === 'yield') await turn();
      else if (s.kind === 'snapshot') snapshotBoth(s.withScrollback);
      else {
        toReference();
        screen.resize(s.cols, s.rows);
        ref.write('', () => ref.resize(s.cols, s.rows));
      }
    }
    snapshotBoth(true);
    for (const [mine, theirs] of await Promise.all(pairs)) expect(mine).toEqual(theirs);
    await screen.drained(1);
    expect(screen.pendingBytes).toBe(0);
    await new Promise<void>((resolve) => ref.write('', resolve));
    const term = (screen as unknown as { term: XtermTerminal }).term;
    expect(everything(term)).toEqual(everything(ref));
    return screen.skippedBytes;
  } finally {
    screen.dispose();
    ref.dispose();
  }
}

/** `n` lines of seq's output, as a pseudo-terminal gives them. */
function seq(n: number, from = 1): Buffer {
  const lines: string[] = [];
  for (let i = from; i < from + n; i++) lines.push(`${i}\r\n`);
  return Buffer.from(lines.join(''));
}

describe('skipping output that cannot be seen', () => {
  it('leaves every screen exactly as the emulator fed every byte shows it (random streams, chunks, snapshots, resizes)', async () => {
    let skippedRuns = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { minLength: 1, maxLength: 60 }),
        fc.array(step, { maxLength: 40 }),
        fc.record({ cols: fc.integer({ min: 8, max: 20 }), rows: fc.integer({ min: 2, max: 7 }), scrollback: fc.integer({ min: 0, max: 12 }), skipAtLeast: fc.integer({ min: 1, max: 600 }) }),
        async (pieces, steps, o) => {
          if ((await compare(Buffer.concat(pieces), steps, o)) > 0) skippedRuns++;
        },
      ),
      { numRuns: 300 },
    );
    // The property says nothing if nothing was ever skipped.
    expect(skippedRuns).toBeGreaterThan(30);
  });

  it('skips most of a plain flood, and the screen and scrollback are the same', async () => {
    const stream = Buffer.concat([Buffer.from('\x1b[32mgreen\x1b[0m\r\n'), seq(20_000), Buffer.from('END\r\n$ ')]);
    const skipped = await compare(stream, [{ kind: 'write', size: 4095 }], { cols: 20, rows: 5, scrollback: 10, skipAtLeast: 1024 });
    expect(skipped, 'too little was skipped: are the emulator internals CommandScreen.skipState reads still in this @xterm/headless?').toBeGreaterThan(stream.length / 2);
  });

  it('skips nothing while a scroll region is set, nor inside an unfinished escape sequence or C1 control', async () => {
    const region = Buffer.concat([Buffer.from('\x1b[1;4r'), seq(5_000)]);
    expect(await compare(region, [{ kind: 'write', size: 4095 }], { cols: 20, rows: 5, scrollback: 10, skipAtLeast: 1024 })).toBe(0);
    // A CSI left open across a line feed takes the digits that follow as its parameters.
    // Its first write parses while the rest is held: the held run starts inside the CSI ('x' ends it).
    const openCsi = Buffer.concat([seq(10), Buffer.from('\x1b[3'), Buffer.from('1\r\nx\r\n'), seq(5_000, 11), Buffer.from('E')]);
    const steps: Step[] = [{ kind: 'write', size: seq(10).length + 3 }, { kind: 'write', size: openCsi.length }];
    expect(await compare(openCsi, steps, { cols: 20, rows: 5, scrollback: 10, skipAtLeast: 1024 })).toBe(0);
    // Nor when the held run starts with the second byte of a C1 control (C2 9B: CSI) the emulator holds the first of.
    const halfC1 = Buffer.concat([seq(10), Buffer.from([0xc2, 0x9b]), Buffer.from('1\r\nx\r\n'), seq(5_000, 11), Buffer.from('E')]);
    const cutC1: Step[] = [{ kind: 'write', size: seq(10).length + 1 }, { kind: 'write', size: halfC1.length }];
    expect(await compare(halfC1, cutC1, { cols: 20, rows: 5, scrollback: 10, skipAtLeast: 1024 })).toBe(0);
  });

  it('writes straight through with nothing pending, and holds while the emulator is behind', async () => {
    const screen = new CommandScreen({ cols: 20, rows: 5, skipAtLeast: 1024 });
    try {
      screen.write(Buffer.from('a'));
      const held = (screen as unknown as { held: unknown[] }).held;
      expect(held.length).toBe(0);
      screen.write(Buffer.from('b'));
      expect(held.length).toBe(1);
      expect(screen.pendingBytes).toBe(2);
      expect((await screen.snapshot()).text[0]).toBe('ab');
      expect(screen.pendingBytes).toBe(0);
    } finally {
      screen.dispose();
    }
  });

  it('feeds a short held run after a short wait without a snapshot, and a snapshot at once', async () => {
    const screen = new CommandScreen({ cols: 20, rows: 5, skipAtLeast: 1 << 20 });
    try {
      screen.write(Buffer.from('a'));
      screen.write(Buffer.from('b'));
      // Nothing asks: the held 'b' still goes in (up to 16 ms after 'a' was parsed).
      await screen.drained(1);
      expect(screen.pendingBytes).toBe(0);
      // A snapshot behind held bytes does not wait: it is taken before any 16 ms wait ends (the
      // emulator's own timers are 0 ms).
      const real = globalThis.setTimeout;
      let waitEnded = false;
      globalThis.setTimeout = ((fn: () => void, ms?: number) =>
        real(() => {
          if (ms) waitEnded = true;
          fn();
        }, ms)) as typeof setTimeout;
      try {
        screen.write(Buffer.from('c'));
        screen.write(Buffer.from('d'));
        expect((await screen.snapshot()).text[0]).toBe('abcd');
        expect(waitEnded).toBe(false);
      } finally {
        globalThis.setTimeout = real;
      }
    } finally {
      screen.dispose();
    }
  });
});

describe('the unseen part of held output', () => {
  it('is cut after the first line and before enough kept line feeds, at a "\\r\\n"', () => {
    const h = seq(100);
    const cut = unseenPart(h, 10)!;
    expect(h.subarray(0, cut.from).toString()).toBe('1\r\n');
    expect(h.subarray(cut.to).toString()).toBe(seq(10, 91).toString());
  });

  it('is none with too few line feeds, an escape, a C1 control (C2 9B) or DEL in it', () => {
    expect(unseenPart(seq(10), 10)).toBeUndefined();
    for (const bad of ['\x1b[m', '\u009b', '\x7f', '\x0e']) {
      // The part before the bad byte is too short to keep 10 line feeds; nothing after it may go.
      expect(unseenPart(Buffer.concat([seq(5), Buffer.from(bad), seq(30)]), 10)).toBeUndefined();
    }
    expect(unseenPart(Buffer.concat([Buffer.from('\x1b[m'), seq(50)]), 10)).toBeUndefined();
  });
});
