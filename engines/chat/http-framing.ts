// The byte logic of an HTTP/1.1 response for model-http.ts: the head (status line and headers) and a
// chunked body decoded in place. No I/O. Strict as Node's own parser is: CRLF line ends, hex chunk
// sizes, bounded head and chunk-extension lengths; anything else is an HttpFramingError.

export const MAX_HEAD_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 4096;
/** A chunk size above this (1 TiB) is taken as garbage rather than as a chunk to wait for. */
const MAX_CHUNK_SIZE = 2 ** 40;

export class HttpFramingError extends Error {
  /** Node's parser names its errors HPE_*: model-errors.ts maps them to model_bad_response. */
  readonly code = 'HPE_INVALID_RESPONSE';
}

export interface ResponseHead {
  status: number;
  /** Lowercased names; repeated headers joined with ", ". */
  headers: Map<string, string>;
  /** HTTP/1.0, or `connection: close`: the connection ends with this response. */
  closes: boolean;
}

/**
 * The head at the start of `buf` and its length in bytes, or undefined when it is not complete yet.
 * Throws HttpFramingError when it is malformed or longer than MAX_HEAD_BYTES.
 */
export function parseHead(buf: Buffer): { head: ResponseHead; length: number } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) {
    if (buf.length > MAX_HEAD_BYTES) throw new HttpFramingError(`a response head longer than ${MAX_HEAD_BYTES} bytes`);
    return undefined;
  }
  if (end > MAX_HEAD_BYTES) throw new HttpFramingError(`a response head longer than ${MAX_HEAD_BYTES} bytes`);
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const m = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: .*)?$/.exec(lines[0]!);
  if (!m) throw new HttpFramingError(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 60))}`);
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(line.slice(0, colon))) throw new HttpFramingError(`a malformed header line: ${JSON.stringify(line.slice(0, 60))}`);
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const had = headers.get(name);
    headers.set(name, had === undefined ? value : `${had}, ${value}`);
  }
  const connection = (headers.get('connection') ?? '').toLowerCase();
  const closes = m[1] === '0' ? !/\bkeep-alive\b/.test(connection) : /\bclose\b/.test(connection);
  return { head: { status: Number(m[2]), headers, closes }, length: end + 4 };
}

/** The chunked decoder's states. */
const S = { Size: 0, Ext: 1, SizeLf: 2, Data: 3, DataCr: 4, DataLf: 5, TrailerStart: 6, TrailerLine: 7, TrailerLineLf: 8, EndLf: 9, Done: 10 } as const;

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

/** A chunked body decoded across reads: push() each read, get its data bytes back. */
export class ChunkedBody {
  private state: number = S.Size;
  private size = 0;
  private digits = 0;
  private left = 0;
  private lineBytes = 0;

  /** The body and its trailers have been read. */
  get done(): boolean {
    return this.state === S.Done;
  }

  /**
   * Decodes `buf` from `start` in place: returns the data it held (a view of `buf`, whose bytes it
   * overwrites) and where the body ended in it when it did (bytes after that are not the body's).
   */
  push(buf: Buffer, start = 0): { data: Buffer; end: number | undefined } {
    let w = start;
    let i = start;
    const n = buf.length;
    while (i < n) {
      switch (this.state) {
        case S.Data: {
          const take = Math.min(this.left, n - i);
          if (w !== i) buf.copyWithin(w, i, i + take);
          w += take;
          i += take;
          this.left -= take;
          if (this.left === 0) this.state = S.DataCr;
          continue;
        }
        case S.Size: {
          const c = buf[i]!;
          const v = hex(c);
          if (v >= 0) {
            this.size = this.size * 16 + v;
            if (++this.digits > 11 || this.size > MAX_CHUNK_SIZE) throw new HttpFramingError('a chunk size too large');
          } else if (this.digits === 0) throw new HttpFramingError('a chunk without a size');
          else if (c === 0x0d) this.state = S.SizeLf;
          else if (c === 0x3b || c === 0x20 || c === 0x09) {
            this.state = S.Ext;
            this.lineBytes = 0;
          } else throw new HttpFramingError('a malformed chunk size');
          break;
        }
        case S.Ext:
          if (buf[i] === 0x0d) this.state = S.SizeLf;
          else if (++this.lineBytes > MAX_LINE_BYTES) throw new HttpFramingError('a chunk extension too long');
          break;
        case S.SizeLf:
          if (buf[i] !== 0x0a) throw new HttpFramingError('a chunk size line not ended by CRLF');
          if (this.size === 0) this.state = S.TrailerStart;
          else {
            this.left = this.size;
            this.state = S.Data;
          }
          this.size = 0;
          this.digits = 0;
          break;
        case S.DataCr:
          if (buf[i] !== 0x0d) throw new HttpFramingError('a chunk longer than its size');
          this.state = S.DataLf;
          break;
        case S.DataLf:
          if (buf[i] !== 0x0a) throw new HttpFramingError('a chunk not ended by CRLF');
          this.state = S.Size;
          break;
        case S.TrailerStart:
          if (buf[i] === 0x0d) this.state = S.EndLf;
          else {
            this.state = S.TrailerLine;
            this.lineBytes = 1;
          }
          break;
        case S.TrailerLine:
          if (buf[i] === 0x0d) this.state = S.TrailerLineLf;
          else if (++this.lineBytes > MAX_LINE_BYTES) throw new HttpFramingError('a trailer line too long');
          break;
        case S.TrailerLineLf:
          if (buf[i] !== 0x0a) throw new HttpFramingError('a trailer line not ended by CRLF');
          this.state = S.TrailerStart;
          break;
        case S.EndLf:
          if (buf[i] !== 0x0a) throw new HttpFramingError('a chunked body not ended by CRLF');
          this.state = S.Done;
          return { data: buf.subarray(start, w), end: i + 1 };
        case S.Done:
          return { data: buf.subarray(start, w), end: i };
      }
      i++;
    }
    return { data: buf.subarray(start, w), end: undefined };
  }
}
