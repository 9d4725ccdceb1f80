import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { guardTerminalDrain } from '../../pty/pty-drain.js';
import type { PtyProcess } from '../../pty/pty-process.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A stand-in for node-pty's internals where the terminal's other end is a plain file, so the test can
 * read the marker the guard writes there.
 */
function fakeTerminal() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drain-'));
  dirs.push(dir);
  const end = path.join(dir, 'pts');
  fs.writeFileSync(end, '');
  const closeListeners: (() => void)[] = [];
  const socket = { destroyed: false, destroyCalls: 0, destroy: () => {} };
  socket.destroy = () => {
    socket.destroyCalls++;
    socket.destroyed = true;
  };
  const proc = {
    _pty: end,
    _boundClose: false,
    _socket: socket,
    once(event: string, listener: () => void) {
      if (event === 'close') closeListeners.push(listener);
    },
  };
  /** What node-pty does when the program exits: bind the close and arm its 200 ms destroy. */
  const programExits = () => {
    proc._boundClose = true;
    (proc as unknown as { once(e: string, l: () => void): void }).once('close', () => {});
    socket.destroy(); // the timer firing early, as under load
  };
  return { proc: proc as unknown as PtyProcess, socket, programExits, marker: () => fs.readFileSync(end) };
}

describe.runIf(process.platform === 'linux')('the terminal drain guard', () => {
  it('holds the close until the marker written at exit is read, and cuts it from the output', async () => {
    const t = fakeTerminal();
    const guard = guardTerminalDrain(t.proc);
    expect(guard.filter(Buffer.from('before exit ')).toString()).toBe('before exit ');
    t.programExits();
    expect(t.socket.destroyed).toBe(false);
    const marker = t.marker();
    expect(marker.length).toBeGreaterThan(10);
    // The rest of the program's output, then the marker, split at every byte.
    const tail = Buffer.concat([Buffer.from('last bytes 世界'), marker, Buffer.from('late')]);
    let out = '';
    for (let i = 0; i < tail.length; i++) out += guard.filter(tail.subarray(i, i + 1)).toString('latin1');
    expect(Buffer.from(out, 'latin1').toString()).toBe('last bytes 世界');
    await new Promise((r) => setImmediate(r));
    expect(t.socket.destroyCalls).toBe(1);
  });

  it('passes a partial marker lookalike that turns out to be output', () => {
    const t = fakeTerminal();
    const guard = guardTerminalDrain(t.proc);
    t.programExits();
    const marker = t.marker();
    const lookalike = Buffer.concat([marker.subarray(0, 8), Buffer.from('X')]);
    const out = Buffer.concat([guard.filter(lookalike.subarray(0, 8)), guard.filter(lookalike.subarray(8))]);
    expect(out.equals(lookalike)).toBe(true);
    guard.close();
  });
});
