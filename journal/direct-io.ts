// Direct I/O (O_DIRECT) for the journal's large records: their bytes go from an aligned staging
// buffer to the disk without passing through the page cache. Streamed output of several MiB per
// event would otherwise fill page-cache pages the first time they are touched — on a VM whose idle
// memory the host has taken back, that first touch is the slowest step on the whole path — and evict
// pages that are worth more than output written once and rarely read again. A direct write also runs
// on the thread pool without the event loop's CPU: the disk takes event N while the loop sends N − 1.
//
// Linux only (fs.constants.O_DIRECT is undefined elsewhere); where a file system refuses it, the
// journal writes through the page cache as before.
import * as fs from 'node:fs';

/** Direct writes start and end on page boundaries: stricter than any block device asks, and a buffered append never shares a page with one. */
export const DIRECT_ALIGN = 4096;
const WASM_PAGE = 64 * 1024;
/** One staging buffer holds the largest output event (LIMITS.maxOutputChunkBytes, 4 MiB) with its record head and trailing pad; larger records go through the page cache. */
const STAGE_PAGES = Math.ceil((4 * 1024 * 1024) / WASM_PAGE) + 1;
export const STAGE_BYTES = STAGE_PAGES * WASM_PAGE;
/** Staging buffers kept for reuse (warm memory) once their write is done: at most 8.1 MiB. More are made on demand, one per write in flight. */
const KEEP_STAGES = 2;

// Node has WebAssembly; the project's lib settings (no DOM) do not declare it.
declare const WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => { buffer: ArrayBuffer } };

let usable = fs.constants.O_DIRECT !== undefined;
const spare: Buffer[] = [];

/** Whether direct writes may be tried at all (false off Linux, and after one was refused). */
export function directIOUsable(): boolean {
  return usable;
}

/** A write-only O_DIRECT descriptor for `file`, or undefined where the file system refuses one. */
export function openDirect(file: string): number | undefined {
  if (!usable) return undefined;
  try {
    return fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_DIRECT!);
  } catch {
    return undefined;
  }
}

/** Called when the kernel refused a direct write with EINVAL (alignment it would not take): no more direct writes in this process. */
export function refuseDirectIO(): void {
  usable = false;
}

/**
 * A page-aligned buffer of STAGE_BYTES. O_DIRECT needs the memory aligned, and Buffer.alloc gives
 * no such promise; WebAssembly memory is mapped by V8 on its own pages, so it starts on one. Where
 * none can be made (node --jitless has no WebAssembly; an address-space limit), undefined, and no
 * more direct writes in this process.
 */
export function takeStage(): Buffer | undefined {
  const b = spare.pop();
  if (b) return b;
  try {
    const mem = new WebAssembly.Memory({ initial: STAGE_PAGES, maximum: STAGE_PAGES });
    return Buffer.from(mem.buffer);
  } catch {
    usable = false;
    return undefined;
  }
}

export function giveStage(b: Buffer): void {
  if (spare.length < KEEP_STAGES) spare.push(b);
}

/** Bytes from `offset` to the next DIRECT_ALIGN boundary at which a pad record (≥ minPad bytes) fits; 0 when already aligned. */
export function padTo(offset: number, minPad: number): number {
  let r = (DIRECT_ALIGN - (offset % DIRECT_ALIGN)) % DIRECT_ALIGN;
  if (r > 0 && r < minPad) r += DIRECT_ALIGN;
  return r;
}
