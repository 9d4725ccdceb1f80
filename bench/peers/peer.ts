// What the suite needs from each peer (bare socket, vscode-jsonrpc, grpc-js): the same four
// operations, so one client script drives them all.

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

export interface Peer {
  serve(socketPath: string): Promise<void>;
  connect(socketPath: string): Promise<PeerClient>;
}
