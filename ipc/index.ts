// ipc/: frame codec with directional limits, msgpack settings, the frame writer, Connection, endpoints.
export { encode, decode, packWithReserve } from './msgpack.js';
export { packEventBody, sessionWire, arrayHeader, type SessionWire } from './wire-bytes.js';
export { encodeFrame } from './frame-encoder.js';
export { FrameDecoder, type FrameDecoderOptions } from './frame-decoder.js';
export { DirectReads } from './direct-reads.js';
export { FrameWriter, checkOutgoingSize } from './frame-writer.js';
export {
  Connection,
  SOCKET_HIGH_MARK,
  type ConnectionState,
  type ConnectionOptions,
  type RequestOptions,
  type RequestContext,
  type RequestHandler,
  type NotificationHandler,
  type CloseHandler,
} from './connection.js';
export { socketPathFor, checkSocketPath, pipeNameFor, endpointFor, SOCKET_FILE_NAME, MAX_SOCKET_PATH_BYTES } from './endpoint.js';
