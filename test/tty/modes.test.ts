import { describe, expect, it } from 'vitest';
import { CommandScreen } from '../../pty/screen.js';
import { MAX_SEQUENCE_BYTES, OutputFilter, restoreSequence } from '../../tty/modes.js';

const filter = (...chunks: string[]) => {
  const f = new OutputFilter();
  return chunks.map((c) => f.push(Buffer.from(c)).toString()).join('');
};

describe('restoring the user terminal', () => {
  it('turns off every mode a full-screen program left on', async () => {
    const term = new CommandScreen({ cols: 40, rows: 10 });
    // What vim with mouse support leaves behind when it is killed.
    term.write(Buffer.from('\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?1h\x1b=\x1b[?25l\x1b[2;5r'));
    const before = await term.snapshot();
    expect(before.alternate).toBe(true);
    expect(before.modes).toEqual({ mouseTracking: 'drag', bracketedPaste: true, applicationCursorKeys: true, applicationKeypad: true });
    term.write(Buffer.from(restoreSequence()));
    const after = await term.snapshot();
    expect(after.alternate).toBe(false);
    expect(after.modes).toEqual({ mouseTracking: 'none', bracketedPaste: false, applicationCursorKeys: false, applicationKeypad: false });
    // The scroll region is the whole screen again: 12 lines on 10 rows scroll the top two away.
    term.write(Buffer.from(Array.from({ length: 12 }, (_, i) => `r${i}`).join('\r\n')));
    expect((await term.snapshot()).text[0]).toBe('r2');
    term.dispose();
  });

  it('can stay on the alternate screen when asked', () => {
    expect(restoreSequence({ leaveAlternateScreen: false })).not.toContain('1049l');
    expect(restoreSequence()).toContain('\x1b[?1049l');
  });
});

describe('the output filter', () => {
  it('passes plain text, colours, cursor movement and screen modes unchanged', () => {
    const s = 'hello \x1b[1;31mred\x1b[0m\r\n\x1b[H\x1b[2J\x1b[?1049h\x1b[?1000h\x1b(B世界\x1b]8;;https://x.dev\x07link\x1b]8;;\x07';
    expect(filter(s)).toBe(s);
  });

  it('strips title changes ended by BEL or by ST', () => {
    expect(filter('a\x1b]0;evil title\x07b\x1b]2;other\x1b\\c\x1b]1;icon\x07d')).toBe('abcd');
  });

  it('strips a title change split across chunks, byte by byte', () => {
    const s = 'x\x1b]2;split title\x1b\\y';
    expect(filter(...s.split(''))).toBe('xy');
  });

  it('strips palette, colour, clipboard, cwd and notification sequences and window operations', () => {
    const s = 'a\x1b]4;1;rgb:ff/00/00\x07b\x1b]11;#000000\x07c\x1b]52;c;aGVsbG8=\x07d\x1b]7;file:///etc\x07e\x1b]777;notify;x;y\x07f\x1b[8;50;200tg\x1b[22;0th\x1b]104\x07i';
    expect(filter(s)).toBe('abcdefghi');
  });

  it('keeps other OSC, DCS and APC strings', () => {
    const s = '\x1b]133;A\x07\x1bP$qm\x1b\\\x1b_note\x1b\\';
    expect(filter(s)).toBe(s);
  });

  it('drops a runaway unterminated string and recovers after it ends', () => {
    const f = new OutputFilter();
    const big = '\x1b]2;' + 'x'.repeat(MAX_SEQUENCE_BYTES + 10);
    expect(f.push(Buffer.from(big)).length).toBe(0);
    expect(f.push(Buffer.from('\x07after')).toString()).toBe('after');
  });

  it('holds an incomplete sequence at a chunk end and forwards it when complete', () => {
    const f = new OutputFilter();
    expect(f.push(Buffer.from('ab\x1b[3')).toString()).toBe('ab');
    expect(f.push(Buffer.from('1mred')).toString()).toBe('\x1b[31mred');
  });

  it('gives the same bytes whatever the chunks: plain runs, sequences and strings cut anywhere', () => {
    const text = 'plain line\r\n\x1b[1;31mred\x1b[0m more plain \x1b]2;title\x07kept \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bPq#0\x1b\\ \u00e9\u4e16 tail';
    const want = filter(text);
    expect(want).toBe(filter(...text.split('')));
    expect(want).not.toContain('title');
    for (let cut = 1; cut < text.length; cut++) expect(filter(text.slice(0, cut), text.slice(cut))).toBe(want);
    // A chunk without ESC passes whole, and is the filter's own copy.
    const f = new OutputFilter();
    const input = Buffer.from('no escapes here');
    const out = f.push(input);
    input.fill(0x41);
    expect(out.toString()).toBe('no escapes here');
  });
});

