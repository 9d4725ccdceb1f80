// Makes sure the last bytes a program wrote to its terminal are read before the command ends.
//
// Measured here (Linux 6.18, @lydell/node-pty 1.1.0): when the program (the terminal's session leader)
// exits while its output is still buffered in the terminal, node's reader gets EOF early and the tail
// is lost (about 10 KB of `seq 1 200000` under load); and node-pty destroys the socket 200 ms after
// the exit in any case. So, on Linux, the daemon holds the terminal's other end open itself (then the
// program's exit does not close the terminal), and when node-pty learns of the exit it writes a marker
// into that end: the marker comes out behind every byte the program wrote, and once it is read (and
// cut from the output) the terminal is closed and the exit reported. Everything here leans on
// node-pty's internals (`_pty`, `_socket`, `once('close')` from its exit handler): the version is
// pinned and pty-command's tests fail if they change.
//
// The marker is written without blocking: when reading is paused (the consumer is behind — a full
// disk holds a session's output for as long as it lasts) the terminal's buffer may be full, and a
// blocking write would stop the daemon's event loop, and with it the very reads it waits for.
// What does not fit is written again a little later.
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { PtyProcess } from './pty-process.js';

interface NodePtyInternals {
  _pty?: string;
  _boundClose?: boolean;
  _socket?: { destroy(err?: Error): unknown; destroyed: boolean };
  once?: (event: string, listener: (...args: unknown[]) => void) => unknown;
}

/** If the marker never comes (reading stays paused, the terminal is wedged), close after this anyway. */
const MARKER_DEADLINE_MS = 10_000;
/** While the terminal's buffer has no room for the marker, it is tried again this often. */
const MARKER_RETRY_MS = 20;

export interface DrainGuard {
  /** Output bytes as read; returns the bytes to pass on (the marker and what follows it cut). */
  filter(data: Buffer): Buffer;
  /** Closes the held end (the command is over). */
  close(): void;
}

const passThrough: DrainGuard = { filter: (d) => d, close: () => {} };

export function guardTerminalDrain(proc: PtyProcess): DrainGuard {
  const internals = proc as unknown as NodePtyInternals;
  const socket = internals._socket;
  const once = internals.once;
  if (process.platform !== 'linux' || typeof internals._pty !== 'string' || !socket || typeof once !== 'function') return passThrough;
  let fd: number | undefined;
  try {
    fd = fs.openSync(internals._pty, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
  } catch {
    return passThrough;
  }
  // An APC string: were it ever shown, a terminal ignores it.
  const marker = Buffer.from(`\x1b_astra-drain-${crypto.randomBytes(8).toString('hex')}\x1b\\`);
  let state: 'running' | 'draining' | 'closed' = 'running';
  let carry = Buffer.alloc(0);
  let deadline: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  /** The part of the marker not yet written. */
  let unwritten = marker;
  const destroy = socket.destroy.bind(socket);
  const close = () => {
    if (deadline) clearTimeout(deadline);
    if (retry) clearTimeout(retry);
    retry = undefined;
    if (fd !== undefined) {
      try {
        fs.closeSync(fd);
      } catch {
        // Already closed.
      }
      fd = undefined;
    }
  };
  const finishDrain = () => {
    if (state === 'closed') return;
    state = 'closed';
    close();
    destroy();
  };
  const writeMarker = () => {
    retry = undefined;
    if (state !== 'draining' || fd === undefined) return;
    try {
      unwritten = unwritten.subarray(fs.writeSync(fd, unwritten));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return finishDrain();
    }
    if (unwritten.length > 0) retry = setTimeout(writeMarker, MARKER_RETRY_MS);
  };
  const startDrain = () => {
    if (state !== 'running' || fd === undefined) return;
    state = 'draining';
    deadline = setTimeout(finishDrain, MARKER_DEADLINE_MS);
    writeMarker();
  };
  // node-pty's own timer (200 ms after the exit) must not cut the drain short; should the exit hook
  // below ever miss, that timer still starts the drain.
  socket.destroy = (err?: Error) => {
    if (err || state === 'closed' || socket.destroyed) return destroy(err);
    startDrain();
    return socket;
  };
  internals.once = function (this: unknown, event: string, listener: (...args: unknown[]) => void) {
    const r = once.call(proc, event, listener);
    // node-pty's exit handler is the only caller of once('close') with _boundClose set.
    if (event === 'close' && internals._boundClose) startDrain();
    return r;
  };
  return {
    filter(data) {
      if (state !== 'draining') return state === 'closed' ? Buffer.alloc(0) : data;
      const all = carry.length ? Buffer.concat([carry, data]) : data;
      const at = all.indexOf(marker);
      if (at >= 0) {
        carry = Buffer.alloc(0);
        state = 'closed';
        close();
        setImmediate(() => destroy());
        return all.subarray(0, at);
      }
      // Hold back a tail that could be the start of a marker split across reads.
      let keep = 0;
      for (let n = Math.min(marker.length - 1, all.length); n > 0; n--) {
        if (all.subarray(all.length - n).equals(marker.subarray(0, n))) {
          keep = n;
          break;
        }
      }
      carry = Buffer.from(all.subarray(all.length - keep));
      return all.subarray(0, all.length - keep);
    },
    close,
  };
}
