// Protocol version and the directional frame limits of docs/protocol.md §2.

export const PROTOCOL_VERSION = 1;
/** The protocol versions this build can speak, inclusive. */
export const SUPPORTED_PROTOCOL_VERSIONS = { min: 1, max: 1 } as const;

export const LIMITS = {
  /** Largest frame payload a client may send to the daemon. */
  maxRequestBytes: 128 * 1024,
  /** Largest frame payload the daemon may send to a client. */
  maxFrameBytes: 8 * 1024 * 1024,
  /** Default largest turn input, in characters. */
  maxInputChars: 64 * 1024,
  /** Largest command.output chunk, in bytes. */
  maxOutputChunkBytes: 4 * 1024 * 1024,
  /** Once a frame's first byte arrived, the rest must arrive within this many ms. */
  frameDeadlineMs: 10_000,
  /** The first frame (initialize) must arrive within this many ms of connecting. */
  handshakeDeadlineMs: 2_000,
  /** Most lines of output session/subscribe's historyLines may ask for. */
  maxHistoryLines: 100_000,
} as const;

/** Bytes of the big-endian length header in front of every frame. */
export const FRAME_HEADER_BYTES = 4;
