// The raw screen of `astra attach` (cli/attach/attach-terminal.ts) on an emulated user terminal: what a
// program prints lands above the status line, cannot set the title, and leaves no mode behind.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RawScreen } from '../../cli/attach/attach-terminal.js';
import { ROOT, runNode } from '../helpers/processes.js';
import { CommandScreen } from '../../pty/screen.js';

const COLS = 40;
const ROWS = 10;
const terms: CommandScreen[] = [];
afterEach(() => {
  for (const t of terms.splice(0)) t.dispose();
});

function userTerminal(): { term: CommandScreen; raw: RawScreen; written: string[]; write(s: string | Buffer): void } {
  const term = new CommandScreen({ cols: COLS, rows: ROWS });
  terms.push(term);
  const written: string[] = [];
  const write = (s: string | Buffer) => {
    const b = typeof s === 'string' ? Buffer.from(s) : s;
    written.push(b.toString('latin1'));
    term.write(b);
  };
  write('$ astra attach\r\n❯ vim\r\n');
  const raw = new RawScreen(true);
  raw.setStatus(' you control │ running vim');
  write(raw.enter(COLS, ROWS));
  return { term, raw, written, write };
}

describe('RawScreen', () => {
  it('gives the program one row fewer, and keeps the status line on the last row while output scrolls', async () => {
    const u = userTerminal();
    expect(u.raw.programSize(COLS, ROWS)).toEqual({ cols: COLS, rows: ROWS - 1 });
    for (let i = 1; i <= 30; i++) u.write(u.raw.output(Buffer.from(`line ${i}\r\n`)));
    u.write(u.raw.output(Buffer.from('Downloading... ')));
    const snap = await u.term.snapshot();
    expect(snap.text[ROWS - 1]).toBe(' you control │ running vim');
    expect(snap.text[ROWS - 2]!.trimEnd()).toBe('Downloading...');
    expect(snap.text[ROWS - 3]).toBe('line 30');
    // The partial line is continued in place, a \r progress bar overwrites itself.
    u.write(u.raw.output(Buffer.from('done\r\n10%\r50%\r100%\r\n')));
    const after = await u.term.snapshot();
    expect(after.text.slice(ROWS - 4, ROWS - 1)).toEqual(['Downloading... done', '100%', '']);
  });

  it('strips title changes, even split across chunks, and passes colours', () => {
    const u = userTerminal();
    const out = [u.raw.output(Buffer.from('\x1b]0;EV')), u.raw.output(Buffer.from('IL\x07\x1b[31mred\x1b[0m\x1b]2;x\x1b\\'))].map((b) => b.toString('latin1')).join('');
    expect(out).toBe('\x1b[31mred\x1b[0m');
  });

  it('redraws the status line after the program clears the screen or switches to the alternate screen', async () => {
    const u = userTerminal();
    u.write(u.raw.output(Buffer.from('\x1b[?1049h\x1b[H\x1b[2Jvim screen')));
    const snap = await u.term.snapshot();
    expect(snap.alternate).toBe(true);
    expect(snap.text[0]).toBe('vim screen');
    expect(snap.text[ROWS - 1]).toBe(' you control │ running vim');
  });

  it('leaving resets the modes the program left on, leaves the alternate screen and keeps the cursor on a fresh line', async () => {
    const u = userTerminal();
    u.write(u.raw.output(Buffer.from('hello\r\n\x1b[?1049h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?1h\x1b=\x1b[?25l\x1b[5;20rfull screen')));
    const during = await u.term.snapshot();
    expect(during.modes).toMatchObject({ mouseTracking: 'drag', bracketedPaste: true, applicationCursorKeys: true });
    u.write(u.raw.leave());
    u.write('next line\r\n');
    const snap = await u.term.snapshot();
    expect(snap.alternate).toBe(false);
    expect(snap.modes).toEqual({ mouseTracking: 'none', bracketedPaste: false, applicationCursorKeys: false, applicationKeypad: false });
    expect(snap.cursorVisible).toBe(true);
    // Where the normal screen was: after "hello", the status row cleared.
    const text = snap.text.filter((l) => l !== '');
    expect(text.slice(-3)).toEqual(['❯ vim', 'hello', 'next line']);
    expect(snap.text[ROWS - 1]).toBe('');
    // The whole screen scrolls again: the region is reset.
    for (let i = 0; i < 20; i++) u.write(`x${i}\r\n`);
    expect((await u.term.snapshot()).text[ROWS - 2]).toBe('x19');
  });

  it('a program that ends inside a line gets a newline before what follows; one that ended its line, none', async () => {
    const u = userTerminal();
    u.write(u.raw.output(Buffer.from('no newline\x1b[0m')));
    u.write(u.raw.leave());
    u.write('after\r\n');
    const v = userTerminal();
    v.write(v.raw.output(Buffer.from('ended\r\n')));
    v.write(v.raw.leave());
    v.write('after\r\n');
    const a = (await u.term.snapshot()).text.filter((l) => l !== '');
    const b = (await v.term.snapshot()).text.filter((l) => l !== '');
    expect(a.slice(-2)).toEqual(['no newline', 'after']);
    expect(b.slice(-2)).toEqual(['ended', 'after']);
  });

  it('draws a snapshot of a command attached to mid-way: its scrollback, then its screen, the status line kept', async () => {
    const u = userTerminal();
    const program = new CommandScreen({ cols: COLS, rows: ROWS - 1 });
    terms.push(program);
    for (let i = 1; i <= 15; i++) program.write(Buffer.from(`out ${i}\r\n`));
    program.write(Buffer.from('>>> 1+1'));
    const s = await program.snapshot();
    u.write(u.raw.snapshot({ cols: s.cols, rows: s.rows, data: s.screen, scrollback: s.scrollback.join('\n'), alternate: s.alternate }));
    const snap = await u.term.snapshot();
    expect(snap.text.slice(0, ROWS - 1)).toEqual(s.text);
    expect(snap.text[ROWS - 1]).toBe(' you control │ running vim');
    expect(snap.scrollback.slice(-s.scrollback.length)).toEqual(s.scrollback);
    expect(snap.cursor).toEqual(s.cursor);
  });

  it('moves the region and the status line with a resize, and wipes the old status row', async () => {
    const u = userTerminal();
    u.term.resize(COLS, ROWS + 4);
    u.write(u.raw.resize(COLS, ROWS + 4));
    const snap = await u.term.snapshot();
    expect(snap.text[ROWS + 3]).toBe(' you control │ running vim');
    expect(snap.text.filter((l) => l.includes('running vim'))).toHaveLength(1);
  });

  it('without a terminal there is no region, no status line and nothing to restore', () => {
    const raw = new RawScreen(false);
    raw.setStatus('status');
    expect(raw.enter(80, 24)).toBe('');
    expect(raw.output(Buffer.from('\x1b]2;t\x07text')).toString()).toBe('text');
    expect(raw.emergencyBytes()).toBe('');
    expect(raw.leave()).toBe('\n');
  });
});

describe('UserTerminal', () => {
  // A process with the built module: the hooks write the restore bytes on a crash and at exit.
  const script = (how: string) => [
    `const { UserTerminal } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'cli', 'attach', 'attach-terminal.js'))});`,
    `const t = new UserTerminal({ stdin: process.stdin, stdout: process.stdout }, { data() {}, end() {}, term() {}, hangup() {}, gone() {}, emergencyBytes: () => '<restore>' });`,
    `t.watch();`,
    how,
  ].join('\n');

  it('puts the terminal back when the process crashes, and says why', async () => {
    const r = await runNode(['--input-type=module', '-e', script(`setTimeout(() => { throw new Error('boom'); }, 0);`)], process.env);
    expect(r.stdout).toBe('<restore>');
    expect(r.stderr).toMatch(/^astra: attach failed: Error: boom/);
    expect(r.code).toBe(1);
  });

  it('puts the terminal back when the process exits, and not after stop()', async () => {
    const exited = await runNode(['--input-type=module', '-e', script(`process.exit(0);`)], process.env);
    expect(exited.stdout).toBe('<restore>');
    const stopped = await runNode(['--input-type=module', '-e', script(`t.stop(); process.exit(0);`)], process.env);
    expect(stopped.stdout).toBe('');
  });
});
