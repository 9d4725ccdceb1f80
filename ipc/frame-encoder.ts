// messages → frames: a 4-byte big-endian payload length, then the MessagePack payload.
import { FRAME_HEADER_BYTES } from '../protocol/index.js';
import { checkOutgoingSize } from './frame-writer.js';
import { packWithReserve } from './msgpack.js';

/** Frames at least this big are not copied out of msgpackr's buffer (packWithReserve frees it). */
const COPY_BELOW_BYTES = 1024 * 1024;

/**
 * Packs a value with the header in place. The result is a view into msgpackr's output buffer:
 * callers that keep it must copy it (encodeFrame does) or consume it at once (Connection does).
 */
export function packFrame(value: unknown, maxPayloadBytes: number): Buffer {
  const out = packWithReserve(value, FRAME_HEADER_BYTES);
  const size = out.length - FRAME_HEADER_BYTES;
  checkOutgoingSize(size, maxPayloadBytes);
  out.writeUInt32BE(size, 0);
  return out;
}

/**
 * Encodes one frame: length header + payload. Throws AstraError('frame_too_large', {size, limit})
 * when the payload is over the limit, before anything is sent. The result is safe to keep and to
 * write to many connections (encode once, fan out).
 */
export function encodeFrame(value: unknown, maxPayloadBytes: number): Buffer {
  const out = packFrame(value, maxPayloadBytes);
  return out.length >= COPY_BELOW_BYTES ? out : Buffer.from(out);
}
