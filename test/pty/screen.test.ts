import { afterEach, describe, expect, it } from 'vitest';
import os from 'node:os';
import { CommandScreen } from '../../pty/screen.js';
import { startPtyCommand } from '../../pty/pty-command.js';

const screens: CommandScreen[] = [];
function screen(cols = 40, rows = 10, scrollbackLines?: number): CommandScreen {
  const s = new CommandScreen({ cols, rows, ...(scrollbackLines ? { scrollbackLines } : {}) });
  screens.push(s);
  return s;
}
afterEach(() => {
  for (const s of screens.splice(0)) s.dispose();
});

/** Writes a snapshot's bytes into a fresh emulator and returns what that one shows. */
async function replayed(snap: Awaited<ReturnType<CommandScreen['snapshot']>>): Promise<string[]> {
  const fresh = screen(snap.cols, snap.rows);
  fresh.write(snap.screen);
  return (await fresh.snapshot()).text;
}

describe('the screen of a running command', () => {
  it('ends a carriage-return progress bar as one line', async () => {
    const s = screen();
    for (let p = 0; p <= 100; p += 10) s.write(Buffer.from(`\rDownloading ${p}%`));
    s.write(Buffer.from('\r\ndone\r\n'));
    const snap = await s.snapshot();
    expect(snap.text.slice(0, 3)).toEqual(['Downloading 100%', 'done', '']);
    expect(await replayed(snap)).toEqual(snap.text);
  });

  it('keeps a partial line and its continuation on one line', async () => {
    const s = screen();
    s.write(Buffer.from('Downloading... '));
    s.write(Buffer.from('done\r\n'));
    expect((await s.snapshot()).text[0]).toBe('Downloading... done');
  });

  it("shows a full-screen program's last frame, not a scroll of its history", async () => {
    const s = screen(30, 6);
    s.write(Buffer.from('$ top\r\n'));
    s.write(Buffer.from('\x1b[?1049h')); // alternate screen
    for (let frame = 1; frame <= 50; frame++) {
      s.write(Buffer.from(`\x1b[H\x1b[2Jframe ${frame}\r\nload ${frame * 2}`));
    }
    const snap = await s.snapshot();
    expect(snap.alternate).toBe(true);
    expect(snap.text[0]).toBe('frame 50');
    expect(snap.text[1]).toBe('load 100');
    expect(snap.text.join('\n')).not.toContain('frame 49');
    expect(snap.scrollback).toEqual([]);
    const fresh = await replayed(snap);
    expect(fresh.slice(0, 2)).toEqual(['frame 50', 'load 100']);
    // Leaving the alternate screen brings back what was there before.
    s.write(Buffer.from('\x1b[?1049l'));
    expect((await s.snapshot()).text[0]).toBe('$ top');
  });

  it('lays out CJK and emoji by their terminal width', async () => {
    const s = screen(10, 4);
    s.write(Buffer.from('中文字👍ab'));
    const snap = await s.snapshot();
    // 3 wide characters (6 columns) + a wide emoji (2) + 2 = 10 columns: exactly one row, cursor at the end.
    expect(snap.text[0]).toBe('中文字👍ab');
    expect(snap.text[1]).toBe('');
    s.write(Buffer.from('中'));
    const after = await s.snapshot();
    expect(after.text[1]).toBe('中');
    expect(after.cursor).toEqual({ x: 2, y: 1 });
  });

  it('keeps a bounded scrollback of the lines that left the screen', async () => {
    const s = screen(20, 5, 100);
    for (let i = 1; i <= 500; i++) s.write(Buffer.from(`line ${i}\r\n`));
    const snap = await s.snapshot();
    expect(snap.scrollback.length).toBe(100);
    expect(snap.scrollback[99]).toBe('line 496');
    expect(snap.text[0]).toBe('line 497');
  });

  it('joins a long line wrapped on screen back into one scrollback line', async () => {
    const s = screen(10, 3);
    s.write(Buffer.from('x'.repeat(25) + '\r\n' + 'a\r\nb\r\nc\r\n'));
    // 3 rows of x, then a, b, c and the cursor's empty row on a 3-row screen: x and a scrolled off.
    expect((await s.snapshot()).scrollback).toEqual(['x'.repeat(25), 'a']);
  });

  it('reports the modes a program set', async () => {
    const s = screen();
    s.write(Buffer.from('\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?1h'));
    const snap = await s.snapshot();
    expect(snap.modes).toEqual({ mouseTracking: 'drag', bracketedPaste: true, applicationCursorKeys: true, applicationKeypad: false });
  });

  it("carries a full-screen program's scroll region and hidden cursor to a fresh terminal", async () => {
    const s = screen(20, 8);
    s.write(Buffer.from('\x1b[?1049h\x1b[?25l\x1b[2;6r\x1b[4;3Hmid'));
    const snap = await s.snapshot();
    expect(snap.cursorVisible).toBe(false);
    const fresh = screen(20, 8);
    fresh.write(snap.screen);
    const a = await fresh.snapshot();
    expect(a.cursorVisible).toBe(false);
    expect(a.cursor).toEqual(snap.cursor);
    // Lines written at the region's bottom scroll rows 2..6 only: row 1 and rows 7..8 stay as they were.
    for (const t of [s, fresh]) t.write(Buffer.from('\x1b[6;1H' + 'x\r\n'.repeat(10) + 'end'));
    expect((await fresh.snapshot()).text).toEqual((await s.snapshot()).text);
  });

  it('follows a resize', async () => {
    const s = screen(40, 10);
    s.resize(100, 30);
    const snap = await s.snapshot();
    expect([snap.cols, snap.rows, snap.text.length]).toEqual([100, 30, 30]);
  });

  it('shows what a real program in a pseudo-terminal drew', async () => {
    const s = screen(80, 24);
    const cmd = startPtyCommand({
      command: `printf 'Downloading... '; sleep 0.1; printf '\\r%s\\n' 'Downloaded 100%'; printf '世界\\n'`,
      cwd: os.tmpdir(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
      cols: 80,
      rows: 24,
      onOutput(data) {
        s.write(data);
        return true;
      },
      drained: () => Promise.resolve(),
    });
    expect((await cmd.done).exitCode).toBe(0);
    expect((await s.snapshot()).text.slice(0, 3)).toEqual(['Downloaded 100%', '世界', '']);
  });
});
