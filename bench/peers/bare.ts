// The baseline: a bare Node Unix socket with Astra's framing (4-byte big-endian length + plain
// msgpackr) and the tricks docs/design-notes.md notes as fastest: frames written in one tick copied into one
// buffer and written once, the header written into msgpackr's reserved start space, a 256 KiB
// high-water mark. No validation, no leases, no journal: the floor Astra is measured against.
import net from 'node:net';
import { Packr, Unpackr, RESERVE_START_SPACE } from 'msgpackr';
import { benchEvent } from '../lib.js';
import { connectSocket, requestPeerClient, type Peer, type PeerClient, type StreamParams } from './peer.js';

const HWM = 256 * 1024;
const BATCH = 64 * 1024;

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

export class BareConn {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private batch = Buffer.allocUnsafeSlow(BATCH);
  private start = 0;
  private end = 0;
  private out: Buffer[] = [];
  private scheduled = false;
  private nextId = 1;
  private readonly pending = new Map<number, (r: unknown) => void>();
  onMessage: (m: Msg) => void = () => {};

  constructor(readonly socket: net.Socket) {
    (socket as unknown as { _writableState: { highWaterMark: number } })._writableState.highWaterMark = HWM;
    socket.on('data', (c: Buffer) => this.read(c));
    socket.on('error', () => {});
  }

  get queued(): number {
    return this.end - this.start + this.socket.writableLength;
  }

  /** Sends an encoded frame; small frames written in the same tick share one socket write. */
  sendFrame(f: Buffer): void {
    if (f.length > BATCH) {
      if (this.end > this.start) this.out.push(this.batch.subarray(this.start, this.end));
      this.start = this.end;
      this.out.push(f);
    } else {
      if (this.end + f.length > this.batch.length) {
        if (this.end > this.start) this.out.push(this.batch.subarray(this.start, this.end));
        this.batch = Buffer.allocUnsafeSlow(BATCH);
        this.start = this.end = 0;
      }
      f.copy(this.batch, this.end);
      this.end += f.length;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        if (this.end > this.start) this.out.push(this.batch.subarray(this.start, this.end));
        this.start = this.end;
        for (const b of this.out) this.socket.write(b);
        this.out = [];
      });
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

  /** Waits until this connection's queue is under the high-water mark. */
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

async function serve(socketPath: string): Promise<void> {
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

export const bare: Peer = { serve, connect };
