import { describe, expect, it } from 'vitest';
import { LineEditor } from '../../../cli/view/line-editor.js';
import { displayWidth } from '../../../cli/view/width.js';
import { CommandScreen } from '../../../pty/screen.js';

const LEFT = '\x1b[D';
const RIGHT = '\x1b[C';
const UP = '\x1b[A';
const DOWN = '\x1b[B';

function typed(...keys: string[]): LineEditor {
  const e = new LineEditor();
  for (const k of keys) e.feed(k);
  return e;
}

describe('the input line', () => {
  it('inserts at the cursor and moves with arrows, Home/End and Ctrl-A/E', () => {
    expect(typed('helo', LEFT, 'l').value).toBe('hello');
    const e = typed('world', '\x01', 'hello ', '\x05', '!');
    expect(e.value).toBe('hello world!');
    expect(typed('bc', '\x1b[H', 'a', '\x1b[F', 'd').value).toBe('abcd');
    expect(typed('ac', '\x1bOD', 'b', '\x1bOC', '\x1bOC', 'd').value).toBe('abcd');
  });

  it('deletes whole graphemes with Backspace and Delete', () => {
    expect(typed('a👨‍👩‍👧', '\x7f').value).toBe('a');
    expect(typed('x👍🏽y', LEFT, '\x7f').value).toBe('xy');
    expect(typed('e\u0301z', '\x01', '\x1b[3~').value).toBe('z');
    expect(typed('中文', '\x7f').value).toBe('中');
  });

  it('moves over an emoji as one character', () => {
    const e = typed('a👨‍👩‍👧b', LEFT, LEFT);
    expect(e.cursorIndex).toBe(1);
    e.feed('X');
    expect(e.value).toBe('aX👨‍👩‍👧b');
  });

  it('kills with Ctrl-W, Ctrl-K and Ctrl-U', () => {
    expect(typed('git commit  ', '\x17').value).toBe('git ');
    expect(typed('one two three', '\x1b[1;5D', '\x0b').value).toBe('one two ');
    expect(typed('one two three', '\x1b[1;5D', '\x15').value).toBe('three');
  });

  it('sends a line on Enter and keeps a history to walk with Up and Down', () => {
    const e = new LineEditor();
    expect(e.feed('ls\r')).toEqual([{ type: 'change' }, { type: 'submit', text: 'ls' }]);
    e.feed('pwd\r');
    e.feed('draft');
    e.feed(UP);
    expect(e.value).toBe('pwd');
    e.feed(UP);
    expect(e.value).toBe('ls');
    expect(e.feed(UP)).toEqual([]); // nothing older
    e.feed(DOWN);
    e.feed(DOWN);
    expect(e.value).toBe('draft');
    e.feed('\x15ls\r');
    expect(e.sentLines).toEqual(['ls', 'pwd', 'ls']);
  });

  it('takes a bracketed paste with newlines as one input, even split across chunks', () => {
    const e = new LineEditor();
    const acts = [...e.feed('echo \x1b[20'), ...e.feed('0~line 1\r\nline 2\nline 3\x1b[2'), ...e.feed('01~ end')];
    expect(acts.some((a) => a.type === 'submit')).toBe(false);
    expect(e.value).toBe('echo line 1\nline 2\nline 3 end');
    expect(e.feed('\r')).toEqual([{ type: 'submit', text: 'echo line 1\nline 2\nline 3 end' }]);
  });

  it('puts back UTF-8 and escape sequences split between reads', () => {
    const e = new LineEditor();
    const bytes = Buffer.from('中');
    e.feed(bytes.subarray(0, 1));
    e.feed(bytes.subarray(1));
    e.feed('a\x1b');
    e.feed('[');
    e.feed('D');
    e.feed('b');
    expect(e.value).toBe('中ba');
  });

  it('hands back the keys it does not edit with', () => {
    const e = new LineEditor();
    expect(e.feed('\x03')).toEqual([{ type: 'key', key: 'ctrl-c' }]);
    expect(e.feed('\x1d')).toEqual([{ type: 'key', key: 'ctrl-]' }]);
    expect(e.feed('\x04')).toEqual([{ type: 'key', key: 'ctrl-d' }]);
    expect(e.feed('\t')).toEqual([{ type: 'key', key: 'tab' }]);
    expect(e.feed('\x1b')).toEqual([]);
    expect(e.flushEscape()).toEqual([{ type: 'key', key: 'escape' }]);
    expect(e.feed('\x1b[15~')).toEqual([{ type: 'key', key: '\x1b[15~' }]);
  });
});

describe('rendering the input line', () => {
  it('puts the cursor at the right column after CJK and emoji', () => {
    const e = typed('中文ab👍🏽', LEFT, LEFT);
    const r = e.render(40, '> ');
    expect(r.line).toBe('> 中文ab👍🏽');
    // 2 (prompt) + 4 (中文) + 1 (a) = 7
    expect(r.cursorColumn).toBe(7);
  });

  it('scrolls a line wider than the screen and keeps the cursor in view', () => {
    const e = typed('中'.repeat(30));
    const r = e.render(20, '> ');
    expect(displayWidth(r.line)).toBeLessThanOrEqual(19);
    expect(r.line.startsWith('> ‹')).toBe(true);
    expect(r.cursorColumn).toBe(displayWidth(r.line));
    e.feed('\x01');
    const home = e.render(20, '> ');
    expect(home.cursorColumn).toBe(2);
    expect(home.line.startsWith('> 中')).toBe(true);
    expect(displayWidth(home.line)).toBeLessThanOrEqual(19);
  });

  it('shows pasted newlines and control characters as symbols', () => {
    const e = typed('\x1b[200~a\nb\x1b[201~');
    expect(e.render(20).line).toBe('a↵b');
  });

  it('redraws over a longer previous line without leaving a stale copy, on a real terminal emulator', async () => {
    const term = new CommandScreen({ cols: 20, rows: 3 });
    const e = new LineEditor();
    for (const key of ['中', '文', '字', 'x', '\x7f', '\x7f', LEFT, 'a']) {
      e.feed(key);
      term.write(Buffer.from(e.render(20, '> ').sequence));
    }
    const snap = await term.snapshot();
    expect(snap.text[0]).toBe('> 中a文');
    expect(snap.cursor).toEqual({ x: 5, y: 0 });
    term.dispose();
  });
});
