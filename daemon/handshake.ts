// The handshake (docs/protocol.md): the first frame must be an `initialize` carrying the record's token,
// within LIMITS.handshakeDeadlineMs. It fails closed: any problem answers one typed error, then the
// connection is closed.
import {
  AstraError,
  LIMITS,
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  initializeParamsSchema,
  type Infer,
  type initializeResultSchema,
} from '../protocol/index.js';
import { encodeFrame } from '../ipc/index.js';
import { ASTRA_VERSION, tokensEqual } from '../discovery/index.js';
import type { Logger } from './logger.js';
import type { Peer } from './peer.js';
import type { Capabilities } from './capabilities.js';

export interface HandshakeContext {
  instanceId: string;
  token: string;
  startedAt: number;
  maxInputChars: number;
  /** What this connection can use (capabilities.ts), after the handshake set its experimentalApi. */
  capabilities(peer: Peer): Promise<Capabilities>;
  /** No other client and no running turn: a client of another version may replace this daemon (docs/operations.md). */
  replaceable(): boolean;
  log: Logger;
}

export type InitializeResult = Infer<typeof initializeResultSchema>;

export async function handshake(ctx: HandshakeContext, peer: Peer, method: string, params: unknown): Promise<InitializeResult> {
  const fail = (err: AstraError): never => {
    ctx.log.info({ connectionId: peer.id, reason: err.reason }, 'handshake refused');
    setImmediate(() => peer.conn.close(err));
    throw err;
  };
  if (method !== 'initialize') fail(new AstraError('not_initialized', 'the first request must be initialize'));
  const problem = initializeParamsSchema.check(params ?? {}, 'params');
  if (problem) fail(new AstraError('invalid_params', `initialize: ${problem}`));
  const p = params as Infer<typeof initializeParamsSchema>;
  if (!tokensEqual(p.token, ctx.token)) {
    fail(new AstraError('unauthorized', 'wrong token; read it again from the discovery record (daemon.json) and reconnect'));
  }
  if (p.protocolVersion < SUPPORTED_PROTOCOL_VERSIONS.min || p.protocolVersion > SUPPORTED_PROTOCOL_VERSIONS.max) {
    fail(
      new AstraError(
        'incompatible_protocol',
        `the client speaks protocol ${p.protocolVersion} but this daemon (astra ${ASTRA_VERSION}) speaks ${SUPPORTED_PROTOCOL_VERSIONS.min}` +
          `${SUPPORTED_PROTOCOL_VERSIONS.max !== SUPPORTED_PROTOCOL_VERSIONS.min ? `-${SUPPORTED_PROTOCOL_VERSIONS.max}` : ''}; ` +
          'run `astra daemon restart` to start a daemon of your version',
        {
          clientProtocolVersion: p.protocolVersion,
          supported: { ...SUPPORTED_PROTOCOL_VERSIONS },
          daemonVersion: ASTRA_VERSION,
          idle: ctx.replaceable(),
        },
      ),
    );
  }
  if (p.instanceId !== undefined && p.instanceId !== null && p.instanceId !== ctx.instanceId) {
    fail(new AstraError('wrong_instance', `this daemon is instance ${ctx.instanceId}, not ${p.instanceId}`, { instanceId: ctx.instanceId }));
  }
  peer.authenticated = true;
  peer.info = { name: p.clientInfo.name, version: p.clientInfo.version };
  if (p.clientInfo.pid !== undefined && p.clientInfo.pid !== null) peer.info.pid = p.clientInfo.pid;
  for (const m of p.capabilities?.optOutNotificationMethods ?? []) peer.mutedNotifications.add(m);
  peer.batchEvents = p.capabilities?.batchEvents === true;
  peer.experimentalApi = p.capabilities?.experimentalApi === true;
  ctx.log.info({ connectionId: peer.id, client: peer.info.name, clientVersion: peer.info.version }, 'client connected');
  return {
    instanceId: ctx.instanceId,
    connectionId: peer.id,
    protocolVersion: PROTOCOL_VERSION,
    daemon: { version: ASTRA_VERSION, pid: process.pid, startedAt: ctx.startedAt },
    limits: { maxRequestBytes: LIMITS.maxRequestBytes, maxFrameBytes: LIMITS.maxFrameBytes, maxInputChars: ctx.maxInputChars },
    ...(await ctx.capabilities(peer)),
  };
}

/**
 * Closes a connection that sent no initialize within the deadline, after telling it so in an error
 * frame with a nil id (docs/protocol.md): a client sees why, not only a closed socket.
 */
export function armHandshakeDeadline(peer: Peer, log: Logger): NodeJS.Timeout {
  const timer = setTimeout(() => {
    if (peer.authenticated || peer.conn.closed) return;
    log.info({ connectionId: peer.id }, 'no initialize within the deadline; closing');
    const err = new AstraError('handshake_timeout', `no initialize request within ${LIMITS.handshakeDeadlineMs} ms; send initialize first`);
    peer.conn.sendFrame(encodeFrame({ id: null, error: err.toWire() }, LIMITS.maxFrameBytes));
    peer.conn.close(err);
  }, LIMITS.handshakeDeadlineMs);
  timer.unref();
  return timer;
}
