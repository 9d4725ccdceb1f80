// What the model is sent of a command's output: the head and the tail under a byte cap, the cut
// marked, so a command that prints a megabyte costs the model a few thousand tokens, not the context.
// OutputCapture keeps only those bytes while the command runs (memory stays bounded however much it
// writes); formatToolOutput turns them into the tool message text.

export interface CapturedOutput {
  head: Buffer;
  tail: Buffer;
  /** All bytes the command wrote (stdout and stderr together, as they arrived). */
  totalBytes: number;
}

/** Keeps the first and the last `capBytes / 2` bytes of a stream of chunks. */
export class OutputCapture {
  private readonly headCap: number;
  private readonly tailCap: number;
  private headParts: Buffer[] = [];
  private headBytes = 0;
  // The tail is a list of chunks trimmed from the front whenever it holds more than twice its cap.
  private tailParts: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(capBytes: number) {
    this.headCap = Math.ceil(capBytes / 2);
    this.tailCap = Math.floor(capBytes / 2);
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headBytes < this.headCap) {
      const take = Math.min(chunk.length, this.headCap - this.headBytes);
      this.headParts.push(Buffer.from(chunk.subarray(0, take)));
      this.headBytes += take;
      chunk = chunk.subarray(take);
    }
    if (chunk.length === 0 || this.tailCap === 0) return;
    // Copied: the caller's buffer may be kept by reference elsewhere (command.output events).
    this.tailParts.push(Buffer.from(chunk.subarray(Math.max(0, chunk.length - this.tailCap))));
    this.tailBytes += Math.min(chunk.length, this.tailCap);
    if (this.tailBytes > 2 * this.tailCap) {
      const joined = Buffer.concat(this.tailParts);
      this.tailParts = [joined.subarray(joined.length - this.tailCap)];
      this.tailBytes = this.tailCap;
    }
  }

  result(): CapturedOutput {
    const head = Buffer.concat(this.headParts);
    const all = Buffer.concat(this.tailParts);
    const tail = all.subarray(Math.max(0, all.length - this.tailCap));
    return { head, tail, totalBytes: this.total };
  }
}

/** Captures a whole buffer at once (tests, and callers that already hold the output). */
export function captureOutput(data: Buffer, capBytes: number): CapturedOutput {
  const c = new OutputCapture(capBytes);
  c.push(data);
  return c.result();
}

/** Bytes at the end of `buf` that begin a UTF-8 sequence it does not finish. */
function incompleteUtf8Tail(buf: Buffer): number {
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const b = buf[buf.length - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/** Continuation bytes at the start of `buf` (the rest of a character cut off before it). */
function orphanContinuations(buf: Buffer): number {
  let i = 0;
  while (i < Math.min(3, buf.length) && (buf[i]! & 0xc0) === 0x80) i++;
  return i;
}

/**
 * The output as text for the model: all of it when it fits, else head + a marked cut + tail, cut on
 * character boundaries. Empty output says so, so the model does not wait for more.
 */
export function formatToolOutput(out: CapturedOutput): string {
  const kept = out.head.length + out.tail.length;
  if (out.totalBytes === 0) return '(no output)';
  // Head and tail are distinct bytes of the stream: together they may be all of it.
  if (kept === out.totalBytes) return Buffer.concat([out.head, out.tail]).toString('utf8');
  const head = out.head.subarray(0, out.head.length - incompleteUtf8Tail(out.head));
  const tail = out.tail.subarray(orphanContinuations(out.tail));
  const cut = out.totalBytes - head.length - tail.length;
  return `${head.toString('utf8')}\n[… ${cut} bytes of output cut; ${out.totalBytes} bytes in all …]\n${tail.toString('utf8')}`;
}
