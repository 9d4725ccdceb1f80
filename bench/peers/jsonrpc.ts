// Peer: vscode-jsonrpc 8 over a Unix socket (Content-Length framing, JSON). JSON has no binary type,
// so an event's output travels as a string of the same length.
import net from 'node:net';
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node.js';
import { benchEvent } from '../lib.js';
import { connectSocket, requestPeerClient, type Peer, type PeerClient, type StreamParams } from './peer.js';

function open(socket: net.Socket): MessageConnection {
  socket.on('error', () => {});
  const conn = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
  conn.listen();
  return conn;
}

// vscode-jsonrpc queues writes behind its own semaphore without limit (sendNotification resolves
// once written): wait for every 64th write so the queue stays bounded, like the other peers' pacing.
const PACE_EVERY = 64;

async function serve(socketPath: string): Promise<void> {
  const subscribers = new Set<{ conn: MessageConnection; socket: net.Socket }>();
  const server = net.createServer((socket) => {
    const conn = open(socket);
    const me = { conn, socket };
    socket.on('close', () => subscribers.delete(me));
    conn.onRequest('echo', (p: unknown) => p);
    conn.onRequest('subscribe', () => {
      subscribers.add(me);
      return {};
    });
    conn.onRequest('stream', async (p: StreamParams) => {
      const data = 'x'.repeat(p.size);
      for (let i = 1; i <= p.count; i++) {
        const written = conn.sendNotification('session/event', benchEvent(i, data));
        if (i % PACE_EVERY === 0) await written;
      }
      return { sent: p.count };
    });
    conn.onRequest('broadcast', async (p: StreamParams) => {
      const data = 'x'.repeat(p.size);
      for (let i = 1; i <= p.count; i++) {
        const ev = benchEvent(i, data);
        const written = [...subscribers].map((s) => s.conn.sendNotification('session/event', ev));
        if (i % PACE_EVERY === 0) await Promise.all(written);
      }
      return { sent: p.count };
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
}

async function connect(socketPath: string): Promise<PeerClient> {
  const socket = await connectSocket(socketPath);
  const conn = open(socket);
  const { client, onEvent } = requestPeerClient(
    (method, params) => conn.sendRequest(method, params),
    () => {
      conn.dispose();
      socket.destroy();
    },
  );
  conn.onNotification('session/event', (e: { data: { data: string } }) => onEvent(e.data.data.length));
  return client;
}

export const jsonrpc: Peer = { serve, connect };
