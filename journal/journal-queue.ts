// What a journal has queued for its file, in file order, and the arenas small records are written
// into. The journal (journal.ts) decides where a record goes and when the queue is written; this
// file owns the bytes in memory until then. Bytes once written into an arena are never rewritten:
// a full arena is replaced, not reused, so a view of a stored body stays valid.
import { crc32 } from './crc32.js';
import { placeDirect, type Queued } from './journal-direct-writer.js';
import { RECORD_HEADER_BYTES, kindCrc, writePad, writeRecordHead } from './journal-format.js';

/** Records are queued in arenas of this size (a tick's worth of small events in one buffer). */
const ARENA_BYTES = 256 * 1024;
/** An arena started for a record bigger than a quarter of ARENA_BYTES (output chunks) has this size. */
const BIG_ARENA_BYTES = 4 * 1024 * 1024;

const NO_ARENA = Buffer.alloc(0);

export class RecordQueue {
  /** Queued bytes in file order: buffers written through the page cache, and large records for the direct writer. */
  items: Queued[] = [];
  /** Bytes queued (items, and the arena's part not yet sealed into items). */
  bytes = 0;
  // Allocated on the first record: a loaded session that writes nothing keeps no arena.
  private arena: Buffer = NO_ARENA;
  private arenaStart = 0;
  private arenaEnd = 0;
  /**
   * Where the last queued record's stored body is: bytes [lastStart, lastEnd) of lastBuf, followed
   * by all of lastExtra when that is set (a large payload kept by reference).
   */
  lastBuf: Buffer = NO_ARENA;
  lastStart = 0;
  lastEnd = 0;
  lastExtra: Buffer | undefined = undefined;

  /**
   * Writes a record into the arena, starting a new arena when it does not fit: `len` bytes of body
   * and payload, `n` bytes with the header and the kind byte.
   */
  write(kind: number, body: Uint8Array, payload: Uint8Array | undefined, len: number, n: number): void {
    this.bytes += n;
    // Output chunks of 64 KiB share 4 MiB arenas: one allocation per 64 of them, not one each.
    if (this.arenaEnd + n > this.arena.length) this.newArena(n > ARENA_BYTES / 4 ? BIG_ARENA_BYTES : ARENA_BYTES);
    const a = this.arena;
    const at = this.arenaEnd;
    writeRecordHead(a, at, kind, len, body);
    // The checksum covers kind + body (+ payload): chained from the kind byte's CRC, no slicing.
    let crc = crc32(body, kindCrc(kind));
    if (payload) {
      a.set(payload, at + RECORD_HEADER_BYTES + 1 + body.length);
      crc = crc32(payload, crc);
    }
    a.writeUInt32BE(crc, at + 4);
    this.arenaEnd = at + n;
    this.setLast(a, at + RECORD_HEADER_BYTES + 1, at + n, undefined);
  }

  /** Queues buffers of their own (`n` bytes together) after what the arena holds. */
  push(n: number, ...bufs: Buffer[]): void {
    this.seal();
    this.items.push(...bufs);
    this.bytes += n;
  }

  /**
   * Queues a large record for the direct writer at the next aligned offset after `end` (the file
   * offset where the queue ends), with the pad record before it in the arena (the one after it goes
   * in the direct writer's staging buffer).
   */
  pushDirect(end: number, head: Buffer, payload: Buffer, n: number): void {
    const { before, bytes } = placeDirect(end, n);
    if (before > 0) {
      this.bytes += before;
      if (this.arenaEnd + before > this.arena.length) this.newArena(ARENA_BYTES);
      writePad(this.arena, this.arenaEnd, before);
      this.arenaEnd += before;
    }
    this.seal();
    this.items.push({ at: end + before, head, payload, bytes });
    this.bytes += bytes;
  }

  setLast(buf: Buffer, start: number, end: number, extra: Buffer | undefined): void {
    this.lastBuf = buf;
    this.lastStart = start;
    this.lastEnd = end;
    this.lastExtra = extra;
  }

  /** Moves what the arena holds since the last seal into `items`. */
  seal(): void {
    if (this.arenaEnd > this.arenaStart) {
      this.items.push(this.arena.subarray(this.arenaStart, this.arenaEnd));
      this.arenaStart = this.arenaEnd;
    }
  }

  private newArena(size: number): void {
    this.seal();
    this.arena = Buffer.allocUnsafeSlow(size);
    this.arenaStart = this.arenaEnd = 0;
  }
}
