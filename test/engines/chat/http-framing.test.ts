// The HTTP/1.1 response framing of the model client (engines/chat/http-framing.ts): heads and chunked
// bodies, whole and cut at every byte, and malformed ones refused.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChunkedBody, HttpFramingError, parseHead } from '../../../engines/chat/http-framing.js';

function chunked(parts: string[], ext = ''): Buffer {
  return Buffer.from(parts.map((p) => `${Buffer.byteLength(p).toString(16)}${ext}\r\n${p}\r\n`).join('') + '0\r\n\r\n');
}

/** Decodes `bytes` fed in pieces cut at `cuts`; returns the body and where it ended in the last piece. */
function decode(bytes: Buffer, cuts: number[] = []): { body: string; done: boolean; tail: string } {
  const d = new ChunkedBody();
  const out: Buffer[] = [];
  let tail = '';
  const edges = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  for (let i = 0; i + 1 < edges.length; i++) {
    const piece = Buffer.from(bytes.subarray(edges[i], edges[i + 1]));
    if (d.done) {
      tail += piece.toString('latin1');
      continue;
    }
    const { data, end } = d.push(piece);
    out.push(Buffer.from(data));
    if (end !== undefined) tail += piece.subarray(end).toString('latin1');
  }
  return { body: Buffer.concat(out).toString('utf8'), done: d.done, tail };
}

describe('a chunked body', () => {
  it('decodes chunks, extensions, trailers and multi-byte text, and says where the body ended', () => {
    expect(decode(chunked(['data: a\n\n', 'é✓😀']))).toEqual({ body: 'data: a\n\né✓😀', done: true, tail: '' });
    expect(decode(chunked(['x', 'y'], ';name=value'))).toMatchObject({ body: 'xy', done: true });
    const withTrailer = Buffer.from('3\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\nNEXT');
    expect(decode(withTrailer)).toEqual({ body: 'abc', done: true, tail: 'NEXT' });
    expect(decode(Buffer.from('A\r\n0123456789\r\n'))).toMatchObject({ body: '0123456789', done: false });
  });

  it('gives the same body however the bytes are cut into reads', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (parts, cuts) => {
        const bytes = Buffer.concat([chunked(parts), Buffer.from('TAIL')]);
        expect(decode(bytes, cuts)).toEqual({ body: parts.join(''), done: true, tail: 'TAIL' });
      }),
      { numRuns: 500 },
    );
  });

  it('refuses what is not chunked framing: a bad size, a missing CRLF, a chunk longer than its size, an endless extension', () => {
    const bad = ['zz\r\nabc\r\n', '\r\n', '3\nabc\r\n', '3\r\nabcd\r\n', '3\r\nabc\n0\r\n\r\n', '1000000000000\r\n', `1;${'e'.repeat(5000)}\r\n`, '0\r\n\r\r'];
    for (const b of bad) expect(() => decode(Buffer.from(b)), JSON.stringify(b)).toThrow(HttpFramingError);
  });
});

describe('a response head', () => {
  it('parses the status, the headers (names lowercased, repeats joined) and whether the connection closes', () => {
    const r = parseHead(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A: 1\r\nx-a: 2\r\n\r\nbody'))!;
    expect(r.head.status).toBe(200);
    expect(r.head.headers.get('content-type')).toBe('text/event-stream');
    expect(r.head.headers.get('x-a')).toBe('1, 2');
    expect(r.head.closes).toBe(false);
    expect(r.length).toBe(Buffer.byteLength('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A: 1\r\nx-a: 2\r\n\r\n'));
    expect(parseHead(Buffer.from('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n'))!.head.closes).toBe(true);
    expect(parseHead(Buffer.from('HTTP/1.0 200 OK\r\n\r\n'))!.head.closes).toBe(true);
    expect(parseHead(Buffer.from('HTTP/1.1 404\r\n\r\n'))!.head.status).toBe(404);
    expect(parseHead(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: te'))).toBeUndefined();
  });

  it('refuses what is not an HTTP/1.x head, and one longer than 64 KiB', () => {
    for (const h of ['SSH-2.0-OpenSSH_9.2\r\n\r\n', 'HTTP/2 200\r\n\r\n', 'HTTP/1.1 200 OK\r\nno colon\r\n\r\n', 'HTTP/1.1 200 OK\r\nbad name: 1\r\n\r\n', 'HTTP/1.1 099 X\r\n\r\n'])
      expect(() => parseHead(Buffer.from(h)), h).toThrow(HttpFramingError);
    expect(() => parseHead(Buffer.from(`HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70_000)}`))).toThrow(HttpFramingError);
  });
});
