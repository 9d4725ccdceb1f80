// An incoming frame's payload to a checked message (connection.ts dispatches it): MessagePack
// decoding (event batches by their known layout, the rest by msgpackr), the envelope check, and what
// to answer when either fails — the id to echo when it can still be read, and never an error in
// answer to an error (two peers could bounce them forever).
import { AstraError, isPlainObject, parseMessage, parseTrustedMessage, type Message, type RequestId } from '../protocol/index.js';
import { EventBatchDecoder } from './event-batch.js';
import { decode, decodeFromTrustedPeer } from './msgpack.js';

/** What a payload reads as: a message, an error to answer (with the id to echo), or an error only to report. */
export type ReadResult = { message: Message } | { answer: AstraError; id: RequestId | null } | { report: AstraError };

/** The id of a message that failed validation, when it can still be read, so the error can echo it. */
function readableId(value: unknown): RequestId | null {
  if (!isPlainObject(value)) return null;
  const id = Object.prototype.hasOwnProperty.call(value, 'id') ? value.id : undefined;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return id;
  if (typeof id === 'string' && id.length > 0 && id.length <= 128) return id;
  return null;
}

export class MessageReader {
  /** A trusted peer's output batches, decoded without msgpackr (event-batch.ts); made at the first frame. */
  private batches: EventBatchDecoder | undefined;
  /** Set by trustShapes(): envelopes only (parseTrustedMessage), no walk over every value of a frame. */
  envelopeOnly = false;

  /** `lenient`: decode first and scan for extension types only when validation fails (ConnectionOptions.extensionScan 'onError'). */
  constructor(private readonly lenient: boolean) {}

  /** `borrowed`: the payload lies in a reused read buffer, valid only during this call; no view of it is kept. */
  read(payload: Buffer, borrowed: boolean): ReadResult {
    let value: unknown;
    try {
      // Event frames (nearly every frame of a busy stream) by their known layout, keeping no view of
      // a borrowed payload; anything else by msgpackr, from a copy of a borrowed one (its bin values are views).
      if (this.lenient) {
        value = (this.batches ??= new EventBatchDecoder()).decode(payload, borrowed);
        if (value === undefined) value = decodeFromTrustedPeer(borrowed ? (payload = Buffer.from(payload)) : payload);
      } else value = decode(borrowed ? (payload = Buffer.from(payload)) : payload);
    } catch (e) {
      // The framing is intact, so the connection survives one bad payload.
      return { answer: e instanceof AstraError ? e : new AstraError('parse_error'), id: null };
    }
    try {
      return { message: this.envelopeOnly ? parseTrustedMessage(value) : parseMessage(value) };
    } catch (e) {
      if (this.lenient) {
        // Scan now, so an extension type is reported as such (decode throws the precise error).
        try {
          decode(payload);
        } catch (scanned) {
          if (scanned instanceof AstraError) return { answer: scanned, id: null };
        }
      }
      const err = e instanceof AstraError ? e : new AstraError('invalid_request', 'the message could not be validated');
      if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, 'error')) return { report: err };
      return { answer: err, id: readableId(value) };
    }
  }
}
