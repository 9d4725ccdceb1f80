// The faster line copy (pty/xterm-line-copy.ts) changes nothing a screen shows: the same
// bytes — scrolling far past a full scrollback, combining characters, wide characters, extended
// underline attributes, soft-wrapped lines, a clear — give the same screen, serialised screen and
// scrollback as the package's own emulator in a process where the copy was never installed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { CommandScreen } from '../../pty/screen.js';
import { useFastLineCopy } from '../../pty/xterm-line-copy.js';

const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');

function stream(): Buffer {
  const parts: string[] = [];
  for (let i = 1; i <= 3000; i++) {
    let line = `line ${i}`;
    if (i % 7 === 0) line += ' cafe\u0301 e\u0301\u0302'; // combining characters
    if (i % 11 === 0) line += ' \u4e16\u754c'; // wide characters
    if (i % 13 === 0) line += ' \x1b[4:3m\x1b[58;5;196mcurly\x1b[59m\x1b[24m'; // extended attributes
    if (i % 17 === 0) line += ' ' + 'w'.repeat(170); // soft-wraps at 80 columns
    if (i === 1500) line += '\x1b[2J\x1b[H';
    parts.push(line + '\r\n');
  }
  parts.push('the end \u0301x');
  return Buffer.from(parts.join(''));
}

/** What the package's own emulator (no copy installed: a fresh process) shows after `file`'s bytes. */
function reference(file: string, cols: number, rows: number, scrollback: number): { text: string[]; screen: string; scrollback: string[] } {
  const script = `
    const { Terminal } = require('@xterm/headless');
    const { SerializeAddon } = require('@xterm/addon-serialize');
    const t = new Terminal({ cols: ${cols}, rows: ${rows}, scrollback: ${scrollback}, allowProposedApi: true });
    const ser = new SerializeAddon();
    t.loadAddon(ser);
    t.write(require('fs').readFileSync(${JSON.stringify(file)}), () => {
      const a = t.buffer.active, n = t.buffer.normal;
      const text = [];
      for (let y = 0; y < t.rows; y++) text.push(a.getLine(a.viewportY + y)?.translateToString(true) ?? '');
      const sb = [];
      for (let y = 0; y < n.baseY; y++) {
        const row = n.getLine(y);
        if (!row) continue;
        const s = row.translateToString(true);
        if (row.isWrapped && sb.length > 0) sb[sb.length - 1] += s; else sb.push(s);
      }
      process.stdout.write(JSON.stringify({ text, screen: ser.serialize({ scrollback: 0 }), scrollback: sb }));
    });
  `;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`the reference emulator failed (status ${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as { text: string[]; screen: string; scrollback: string[] };
}

describe('the faster line copy of the screen emulator', () => {
  it('is in place for the installed @xterm/headless', () => {
    const t = new Terminal({ cols: 10, rows: 2, allowProposedApi: true });
    try {
      expect(useFastLineCopy(t), 'the package\'s BufferLine.copyFrom is not the one the copy was written against: check xterm-line-copy.ts against the new version').toBe(true);
    } finally {
      t.dispose();
    }
  });

  it('leaves the screen, its serialisation and the scrollback exactly as the package\'s own copy does', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'astra-line-copy-'));
    try {
      const file = path.join(dir, 'stream.bin');
      const bytes = stream();
      fs.writeFileSync(file, bytes);
      const want = reference(file, 80, 24, 200);
      const screen = new CommandScreen({ cols: 80, rows: 24, scrollbackLines: 200 });
      try {
        // In pieces, as output arrives.
        for (let i = 0; i < bytes.length; i += 4095) screen.write(bytes.subarray(i, i + 4095));
        const snap = await screen.snapshot();
        expect(snap.text).toEqual(want.text);
        expect(snap.screen.toString('utf8')).toBe(want.screen);
        expect(snap.scrollback).toEqual(want.scrollback.slice(-200));
        expect(want.text.join('\n')).toContain('the end');
        expect(want.scrollback.join('\n')).toMatch(/cafe\u0301/);
      } finally {
        screen.dispose();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
