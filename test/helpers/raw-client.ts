// A protocol client on the bare Connection (no AstraClient): it records every notification and answers the
// daemon's requests (approval/request) as the test says — for tests of exactly what the daemon sends.
import net from 'node:net';
import { Connection } from '../../ipc/index.js';
import { LIMITS, PROTOCOL_VERSION } from '../../protocol/index.js';
import type { RecordShape } from './processes.js';

export type Note = { method: string; params: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Connects, initializes as `name`, pushes each notification to `notes`; `onRequest` answers the daemon's requests. */
export async function rawClient(rec: RecordShape, name: string, notes: Note[], onRequest: (method: string, params: any) => unknown): Promise<Connection> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.createConnection({ path: rec.endpoint });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  const conn = new Connection(socket, { maxIncomingBytes: LIMITS.maxFrameBytes, maxOutgoingBytes: LIMITS.maxRequestBytes, requestTimeoutMs: 10_000 });
  conn.onNotification((method, params) => notes.push({ method, params }));
  conn.onRequest(onRequest);
  await conn.request('initialize', { protocolVersion: PROTOCOL_VERSION, token: rec.token, clientInfo: { name, version: '1' } });
  conn.notify('initialized', {});
  return conn;
}

/** An answer that never comes: a prompt left open (a UI that answers by approval/answer). */
export const neverAnswer = (): Promise<never> => new Promise<never>(() => undefined);
