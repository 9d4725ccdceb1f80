// What the suite needs from each peer (bare socket, vscode-jsonrpc, grpc-js): the same four
// operations, so one client script drives them all.
import net from 'node:net';

export interface StreamParams {
  /** Events to send. */
  count: number;
  /** Bytes of output per event. */
  size: number;
}

export interface PeerClient {
  /** One request and its answer (small params, echoed back). */
  echo(n: number): Promise<unknown>;
  /** Asks the server to stream `count` events; `onEvent` runs per event; resolves when the server is done. */
  stream(p: StreamParams, onEvent: (dataBytes: number) => void): Promise<void>;
  /** Registers for broadcasts; `onEvent` runs per event received. Resolves once registered. */
  subscribe(onEvent: (dataBytes: number) => void): Promise<void>;
  /** Asks the server to send `count` events to every subscriber; resolves when the server has queued them all. */
  broadcast(p: StreamParams): Promise<void>;
  close(): void;
}

/** A connected Unix socket (rejects if connecting fails). */
export async function connectSocket(socketPath: string): Promise<net.Socket> {
  const socket = net.connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/**
 * The PeerClient of a peer that has requests and `session/event` notifications: feed each event's
 * output size to `onEvent`; it reaches whichever handler the last stream/subscribe call gave.
 */
export function requestPeerClient(request: (method: string, params: object) => Promise<unknown>, close: () => void): { client: PeerClient; onEvent(dataBytes: number): void } {
  let handler: (dataBytes: number) => void = () => {};
  const client: PeerClient = {
    echo: (n) => request('echo', { sessionId: 's-0123456789abcdef', n }),
    async stream(p, h) {
      handler = h;
      await request('stream', p);
    },
    async subscribe(h) {
      handler = h;
      await request('subscribe', {});
    },
    async broadcast(p) {
      await request('broadcast', p);
    },
    close,
  };
  return { client, onEvent: (dataBytes) => handler(dataBytes) };
}

export interface Peer {
  serve(socketPath: string): Promise<void>;
  connect(socketPath: string): Promise<PeerClient>;
}
