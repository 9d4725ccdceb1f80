// The worker thread that parses command screens off the daemon's event loop (remote-screen.ts is its
// other side). It holds one CommandScreen per id and takes, in the order they were posted: open,
// write, resize, snapshot, dispose. Messages of one screen are handled in order, and a snapshot is
// taken in the emulator's write queue after the writes before it — so it shows exactly the bytes
// posted before it. It answers `parsed` (bytes done, for the daemon's backpressure; summed over a turn
// of its loop) and `snapshot`.
import { parentPort } from 'node:worker_threads';
import { CommandScreen } from './screen.js';

export type ToWorker =
  | { op: 'open'; id: number; cols: number; rows: number; scrollbackLines?: number }
  | { op: 'write'; id: number; data: Uint8Array }
  | { op: 'resize'; id: number; cols: number; rows: number }
  | { op: 'snapshot'; id: number; req: number; withScrollback: boolean }
  | { op: 'dispose'; id: number };

export type FromWorker =
  | { op: 'parsed'; id: number; bytes: number }
  | { op: 'snapshot'; id: number; req: number; snapshot?: Awaited<ReturnType<CommandScreen['snapshot']>>; error?: string };

const port = parentPort;
if (port) {
  const screens = new Map<number, CommandScreen>();
  // Parsed bytes are told once a turn of this thread's loop, per screen, not once per write: the
  // emulator parses many writes in one slice of time, and each message costs both threads.
  const parsed = new Map<number, number>();
  let telling = false;
  const tell = () => {
    telling = false;
    for (const [id, bytes] of parsed) port.postMessage({ op: 'parsed', id, bytes } satisfies FromWorker);
    parsed.clear();
  };
  const onParsed = (id: number, bytes: number) => {
    parsed.set(id, (parsed.get(id) ?? 0) + bytes);
    if (!telling) {
      telling = true;
      setImmediate(tell);
    }
  };
  port.on('message', (m: ToWorker) => {
    if (m.op === 'open') {
      try {
        screens.set(m.id, new CommandScreen({ cols: m.cols, rows: m.rows, ...(m.scrollbackLines ? { scrollbackLines: m.scrollbackLines } : {}), onParsed: (bytes) => onParsed(m.id, bytes) }));
      } catch {
        // A bad size: writes to it are dropped, and a snapshot answers an error.
      }
      return;
    }
    const screen = screens.get(m.id);
    switch (m.op) {
      case 'write':
        if (screen) screen.write(m.data);
        else port.postMessage({ op: 'parsed', id: m.id, bytes: m.data.length } satisfies FromWorker);
        return;
      case 'resize':
        screen?.resize(m.cols, m.rows);
        return;
      case 'snapshot':
        if (!screen) {
          port.postMessage({ op: 'snapshot', id: m.id, req: m.req, error: 'no such screen' } satisfies FromWorker);
          return;
        }
        screen.snapshot(m.withScrollback).then(
          (snapshot) => port.postMessage({ op: 'snapshot', id: m.id, req: m.req, snapshot } satisfies FromWorker),
          (e: Error) => port.postMessage({ op: 'snapshot', id: m.id, req: m.req, error: e.message } satisfies FromWorker),
        );
        return;
      case 'dispose':
        screen?.dispose();
        screens.delete(m.id);
        return;
    }
  });
}
