// Direct reads: a client socket created with Node's `onread` option reads into buffers the frame
// decoder chooses, so the rest of a large frame (megabytes of command output) lands in that frame's
// own buffer: no buffer per 64 KiB read for the garbage collector, no copy to join them.
//   const reads = new DirectReads();
//   const socket = net.createConnection({ path, onread: reads.onread });
//   const conn = new Connection(socket, { ..., directReads: reads });
import type { FrameDecoder } from './frame-decoder.js';

export class DirectReads {
  private decoder: FrameDecoder | undefined;
  /** Bytes read before a decoder was attached (none in practice: the daemon speaks second). */
  private early: Buffer[] = [];

  /** The `onread` option for net.createConnection / net.connect. */
  readonly onread = {
    buffer: (): Buffer => (this.decoder ? this.decoder.readTarget() : Buffer.allocUnsafe(64 * 1024)),
    // Always true: returning false would pause the socket.
    callback: (n: number, buf: Uint8Array): boolean => {
      const b = buf as Buffer;
      if (this.decoder) this.decoder.readDone(n, b);
      else this.early.push(Buffer.from(b.subarray(0, n)));
      return true;
    },
  };

  /** Connection calls this once, with its decoder. */
  attach(decoder: FrameDecoder): void {
    this.decoder = decoder;
    const early = this.early;
    this.early = [];
    for (const b of early) decoder.push(b);
  }
}
