// The baseline: a bare Node Unix socket with Astra's framing (4-byte big-endian length + plain
// msgpackr), written as a well-written server writes (docs/design-notes.md, "Sockets and speed"): the
// frames of one event-loop turn copied into 64 KiB batches and handed to the socket as one corked
// write (one writev), the header written into msgpackr's reserved start space, a 256 KiB high-water
// mark, and a producer that stops at the high-water mark — counting what it has queued this turn —
// until the socket takes it, so the server encodes while the client decodes. No validation, no
// leases, no journal: the floor Astra is measured against.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Packr, Unpackr, RESERVE_START_SPACE } from 'msgpackr';
import { benchEvent } from '../lib.js';
import { connectSocket, requestPeerClient, type Peer, type PeerClient, type StreamParams } from './peer.js';

const HWM = 256 * 1024;
const BATCH = 64 * 1024;
/** The durable server's group commit: an fsync at most this long after a write, as Astra's journal (groupCommitMs). */
const GROUP_COMMIT_MS = 5;

const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

interface Msg {
  id?: number;
  method?: string;
  params?: unknown;
  result?: unknown;
}

export function packFrame(msg: unknown): Buffer {
  const f = packr.pack(msg, RESERVE_START_SPACE | 4);
  f.writeUInt32BE(f.length - 4, 0);
  return f;
}

/**
 * The durable bare server's journal: each turn's frames appended to a file with one write before they
 * go to the socket, and an fsync at most GROUP_COMMIT_MS after a write — what Astra's journal does for
 * a streamed event, without its record format (no checksum, no seq index, no in-memory tail).
 */
export class BareJournal {
  private readonly fd: number;
  private syncTimer: NodeJS.Timeout | undefined;
  private syncing = false;

  constructor(file: string) {
    this.fd = fs.openSync(file, 'a');
  }

  write(buffers: Buffer[]): void {
    fs.writevSync(this.fd, buffers);
    if (!this.syncTimer && !this.syncing)
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        this.syncing = true;
        fs.fsync(this.fd, () => (this.syncing = false));
      }, GROUP_COMMIT_MS);
  }
}

export class BareConn {
  /** Set on a durable server's streaming connection: what it sends is journaled first. */
  journal: BareJournal | undefined;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private batch = Buffer.allocUnsafeSlow(BATCH);
  private start = 0;
  private end = 0;
  /** Sealed batches and large frames of this turn, not yet handed to the socket. */
  private out: Buffer[] = [];
  /** Bytes of this turn's frames not yet handed to the socket (the open batch and `out`). */
  private unflushed = 0;
  private scheduled = false;
  private nextId = 1;
  private readonly pending = new Map<number, (r: unknown) => void>();
  onMessage: (m: Msg) => void = () => {};

  constructor(readonly socket: net.Socket) {
    (socket as unknown as { _writableState: { highWaterMark: number } })._writableState.highWaterMark = HWM;
    socket.on('data', (c: Buffer) => this.read(c));
    socket.on('error', () => {});
  }

  /** Bytes queued and not yet taken by the kernel: this turn's frames plus the socket's own buffer. */
  get queued(): number {
    return this.unflushed + this.socket.writableLength;
  }

  /** Sends an encoded frame: every frame sent in one turn goes to the socket in one write, at the turn's end. */
  sendFrame(f: Buffer): void {
    if (f.length > BATCH) {
      this.seal();
      this.out.push(f);
    } else {
      if (this.end + f.length > this.batch.length) {
        this.seal();
        this.batch = Buffer.allocUnsafeSlow(BATCH);
        this.start = this.end = 0;
      }
      f.copy(this.batch, this.end);
      this.end += f.length;
    }
    this.unflushed += f.length;
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  private seal(): void {
    if (this.end > this.start) this.out.push(this.batch.subarray(this.start, this.end));
    this.start = this.end;
  }

  /** The turn's frames to the socket: corked, so several buffers go to the kernel as one writev. */
  private flush(): void {
    this.scheduled = false;
    this.seal();
    const out = this.out;
    this.out = [];
    this.unflushed = 0;
    this.journal?.write(out);
    if (out.length === 1) this.socket.write(out[0]!);
    else {
      this.socket.cork();
      for (const b of out) this.socket.write(b);
      this.socket.uncork();
    }
  }

  send(msg: unknown): void {
    this.sendFrame(packFrame(msg));
  }

  request(method: string, params: unknown): Promise<unknown> {
    const id = this.nextId++;
    this.send({ id, method, params });
    return new Promise((resolve) => this.pending.set(id, resolve));
  }

  /** Ends the turn (its frames are written), then waits until this connection's queue is under the high-water mark. */
  async pace(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    while (this.queued >= HWM && !this.socket.destroyed) await new Promise((r) => this.socket.once('drain', r));
  }

  private read(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 4) return;
      let head = this.chunks[0]!;
      if (head.length < 4) {
        head = Buffer.concat(this.chunks);
        this.chunks = [head];
      }
      const n = head.readUInt32BE(0);
      if (this.buffered < 4 + n) return;
      let payload: Buffer;
      if (head.length >= 4 + n) {
        payload = head.subarray(4, 4 + n);
        if (head.length === 4 + n) this.chunks.shift();
        else this.chunks[0] = head.subarray(4 + n);
      } else {
        const all = Buffer.concat(this.chunks);
        payload = all.subarray(4, 4 + n);
        this.chunks = all.length > 4 + n ? [all.subarray(4 + n)] : [];
      }
      this.buffered -= 4 + n;
      const msg = unpackr.unpack(payload) as Msg;
      if (msg.method === undefined && msg.id !== undefined) {
        const r = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        r?.(msg.result);
      } else this.onMessage(msg);
    }
  }
}

function outputData(size: number): Buffer {
  const b = Buffer.alloc(size, 'x');
  if (size > 0) b[size - 1] = 0x0a;
  return b;
}

/** `durable`: every stream is journaled in a file beside the socket (see BareJournal). */
async function serve(socketPath: string, durable = false): Promise<void> {
  let journals = 0;
  const subscribers = new Set<BareConn>();
  const server = net.createServer((socket) => {
    const conn = new BareConn(socket);
    socket.on('close', () => subscribers.delete(conn));
    conn.onMessage = (m) => {
      const p = m.params as StreamParams;
      switch (m.method) {
        case 'echo':
          conn.send({ id: m.id, result: m.params });
          return;
        case 'subscribe':
          subscribers.add(conn);
          conn.send({ id: m.id, result: {} });
          return;
        case 'stream':
          if (durable) conn.journal ??= new BareJournal(path.join(path.dirname(socketPath), `journal-${++journals}`));
          void (async () => {
            const data = outputData(p.size);
            for (let i = 1; i <= p.count; i++) {
              conn.send({ method: 'session/event', params: benchEvent(i, data) });
              if (conn.queued >= HWM) await conn.pace();
            }
            conn.send({ id: m.id, result: { sent: p.count } });
          })();
          return;
        case 'broadcast':
          void (async () => {
            const data = outputData(p.size);
            for (let i = 1; i <= p.count; i++) {
              // Encoded once, the same bytes to every subscriber.
              const frame = packFrame({ method: 'session/event', params: benchEvent(i, data) });
              for (const s of subscribers) s.sendFrame(frame);
              for (const s of subscribers) if (s.queued >= HWM) await s.pace();
            }
            conn.send({ id: m.id, result: { sent: p.count } });
          })();
          return;
      }
    };
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
}

async function connect(socketPath: string): Promise<PeerClient> {
  const socket = await connectSocket(socketPath);
  const conn = new BareConn(socket);
  const { client, onEvent } = requestPeerClient((method, params) => conn.request(method, params), () => socket.destroy());
  conn.onMessage = (m) => {
    if (m.method === 'session/event') onEvent((m.params as { data: { data: Buffer } }).data.data.length);
  };
  return client;
}

export const bare: Peer = { serve: (socketPath) => serve(socketPath), connect };
/** The same server, its streams journaled with a group commit (the durable reference of the streaming row). */
export const bareDurable: Peer = { serve: (socketPath) => serve(socketPath, true), connect };
