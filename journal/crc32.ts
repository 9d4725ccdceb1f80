// CRC-32 (IEEE) for journal records. Node 20.20 ships zlib.crc32 (native, fast); older 20.x
// releases do not, so a table-driven fallback keeps the journal readable everywhere.
import * as zlib from 'node:zlib';

type Crc32Fn = (data: Uint8Array, value?: number) => number;

const native = (zlib as unknown as { crc32?: Crc32Fn }).crc32;

let table: Uint32Array | undefined;

function makeTable(): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

export function crc32Portable(data: Uint8Array, value = 0): number {
  const t = (table ??= makeTable());
  let c = (value ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const crc32: Crc32Fn = typeof native === 'function' ? native : crc32Portable;
