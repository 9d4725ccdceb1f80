// Peer: @grpc/grpc-js over a `unix:` address, HTTP/2. A generic service with Buffer serializers (no
// protoc): each message is the same msgpackr encoding the other peers use, so only the transport differs.
// Events are a server stream; broadcast writes each event to every open subscribe stream.
import * as grpc from '@grpc/grpc-js';
import { Packr, Unpackr } from 'msgpackr';
import { benchEvent } from '../lib.js';
import type { Peer, PeerClient, StreamParams } from './peer.js';

const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const id = (b: Buffer): Buffer => b;

function method(name: string, responseStream: boolean): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path: `/astra.bench.Bench/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  };
}

const SERVICE = {
  echo: method('Echo', false),
  stream: method('Stream', true),
  subscribe: method('Subscribe', true),
  broadcast: method('Broadcast', false),
} satisfies grpc.ServiceDefinition;

const OPTIONS = { 'grpc.max_receive_message_length': 64 * 1024 * 1024, 'grpc.max_send_message_length': 64 * 1024 * 1024 };

async function writePaced(call: grpc.ServerWritableStream<Buffer, Buffer>, buf: Buffer): Promise<void> {
  if (!call.write(buf)) await new Promise((r) => call.once('drain', r));
}

async function serve(socketPath: string): Promise<void> {
  const subscribers = new Set<grpc.ServerWritableStream<Buffer, Buffer>>();
  const server = new grpc.Server(OPTIONS);
  server.addService(SERVICE, {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, packr.pack(unpackr.unpack(call.request))),
    stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const p = unpackr.unpack(call.request) as StreamParams;
      const data = Buffer.alloc(p.size, 'x');
      void (async () => {
        for (let i = 1; i <= p.count; i++) await writePaced(call, packr.pack(benchEvent(i, data)));
        call.end();
      })();
    },
    subscribe: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      subscribers.add(call);
      call.on('cancelled', () => subscribers.delete(call));
      // The stream's headers tell the client it is registered.
      call.sendMetadata(new grpc.Metadata());
    },
    broadcast: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const p = unpackr.unpack(call.request) as StreamParams;
      const data = Buffer.alloc(p.size, 'x');
      void (async () => {
        for (let i = 1; i <= p.count; i++) {
          const buf = packr.pack(benchEvent(i, data));
          await Promise.all([...subscribers].map((s) => writePaced(s, buf)));
        }
        cb(null, packr.pack({ sent: p.count }));
      })();
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
}

type Client = grpc.Client & {
  echo(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  stream(req: Buffer): grpc.ClientReadableStream<Buffer>;
  subscribe(req: Buffer): grpc.ClientReadableStream<Buffer>;
  broadcast(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
};

async function connect(socketPath: string): Promise<PeerClient> {
  const Ctor = grpc.makeGenericClientConstructor(SERVICE, 'Bench');
  const client = new Ctor(`unix:${socketPath}`, grpc.credentials.createInsecure(), OPTIONS) as unknown as Client;
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())));
  const unary = (name: 'echo' | 'broadcast', v: unknown) =>
    new Promise<unknown>((resolve, reject) => client[name](packr.pack(v), (err, res) => (err ? reject(err) : resolve(unpackr.unpack(res!)))));
  const eventBytes = (buf: Buffer) => ((unpackr.unpack(buf) as { data: { data: Buffer } }).data.data).length;
  return {
    echo: (n) => unary('echo', { sessionId: 's-0123456789abcdef', n }),
    stream(p, h) {
      return new Promise((resolve, reject) => {
        const s = client.stream(packr.pack(p));
        s.on('data', (buf: Buffer) => h(eventBytes(buf)));
        s.on('error', reject);
        s.on('end', () => resolve());
      });
    },
    subscribe(h) {
      return new Promise((resolve, reject) => {
        const s = client.subscribe(packr.pack({}));
        s.on('data', (buf: Buffer) => h(eventBytes(buf)));
        s.on('error', (e: grpc.ServiceError) => {
          if (e.code !== grpc.status.CANCELLED) reject(e);
        });
        s.once('metadata', () => resolve());
      });
    },
    async broadcast(p) {
      await unary('broadcast', p);
    },
    close: () => client.close(),
  };
}

export const grpcPeer: Peer = { serve, connect };
