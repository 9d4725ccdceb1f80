// The scan of sse-events.ts must be exact: an answer read with it gives the same parts (each read's
// text, the faults, the usage, the finish_reason, the tool calls) as the same answer read with
// eventsource-parser alone. Checked on random streams mixing the learned chunk shape with other
// chunks, comments, fields, multi-line data, CRLF and CR line ends, escapes and a BOM, split into
// reads at random places; and on hand-made cases that show the scan does take the shape's events.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AnswerChunks } from '../../../engines/chat/answer-chunks.js';
import { ContentChunkShape } from '../../../engines/chat/chunk-shape.js';
import { SseEvents } from '../../../engines/chat/sse-events.js';

const chunkJson = (delta: Record<string, unknown>, finish: string | null = null, id = 'chatcmpl-1', extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, object: 'chat.completion.chunk', created: 1767225600, model: 'm', ...extra, choices: [{ index: 0, delta, finish_reason: finish }] });

type Line = '\n' | '\r\n' | '\r';

/** One event's text with its line ends; `head` is `data:` or `data: `. */
function event(dataLines: string[], end: Line, head = 'data: ', fields: string[] = []): string {
  return [...fields, ...dataLines.map((d) => head + d)].map((l) => l + end).join('') + end;
}

/** JSON text as several data lines, each ending after a comma. */
const dataLines = (json: string) => json.replace(/,/g, ',\n').split('\n');

const plain = fc.string({ unit: fc.constantFrom('t', 'o', 'k', ' ', 'é', '✓', '😀', '\u2028'), maxLength: 6 });
const tricky = fc.string({ unit: fc.constantFrom('a', '"', '\\', '\n', '\t', '\u0001', '/', '😀'), minLength: 1, maxLength: 5 });
const content = fc.oneof({ weight: 8, arbitrary: plain }, { weight: 2, arbitrary: tricky });
const line = fc.oneof({ weight: 8, arbitrary: fc.constant<Line>('\n') }, { weight: 2, arbitrary: fc.constant<Line>('\r\n') }, { weight: 1, arbitrary: fc.constant<Line>('\r') });
const head = fc.oneof({ weight: 9, arbitrary: fc.constant('data: ') }, { weight: 1, arbitrary: fc.constant('data:') });

/** The events of an answer after its first chunk (which teaches the shape). */
const piece = fc.oneof(
  { weight: 20, arbitrary: fc.tuple(content, line, head).map(([c, l, h]) => event([chunkJson({ content: c })], l, h)) },
  // Another shape: another id, a role, usage in the chunk, an escaped content written with \u.
  { weight: 2, arbitrary: fc.tuple(content, line).map(([c, l]) => event([chunkJson({ content: c }, null, 'chatcmpl-2')], l)) },
  { weight: 1, arbitrary: fc.tuple(content, line).map(([c, l]) => event([chunkJson({ role: 'assistant', content: c })], l)) },
  { weight: 1, arbitrary: line.map((l) => event([chunkJson({ content: 'x' }).replace('"x"', '"\\u0078"')], l)) },
  // A raw control character in the content: not JSON, so never the shape.
  { weight: 1, arbitrary: line.map((l) => event([chunkJson({ content: 'x' }).replace('"x"', '"x\ty"')], l)) },
  { weight: 1, arbitrary: fc.tuple(content, line).map(([c, l]) => event([chunkJson({ content: c }, null, 'chatcmpl-1', { usage: { prompt_tokens: 3, completion_tokens: 4 } })], l)) },
  // A chunk split over data lines (its JSON stays valid: the lines join with "\n").
  { weight: 1, arbitrary: fc.tuple(content, line).map(([c, l]) => event(dataLines(chunkJson({ content: c })), l)) },
  // Fields before the data, comments, keep-alives, stray blank lines.
  { weight: 3, arbitrary: fc.tuple(content, line, fc.constantFrom('id: 7', 'event: message', 'retry: 100', 'event: error', 'bogus: 1')).map(([c, l, f]) => event([chunkJson({ content: c })], l, 'data: ', [f])) },
  { weight: 2, arbitrary: line.map((l) => `: keep-alive${l}${l}`) },
  { weight: 1, arbitrary: line },
  { weight: 1, arbitrary: line.map((l) => `retry: 5${l}${l}`) },
  // Tool calls, in fragments and whole.
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0, max: 1 }), plain, line).map(([i, a, l]) => event([chunkJson({ tool_calls: [{ index: i, id: `call_${i}`, function: { name: 'shell', arguments: a } }] })], l)) },
  // The end of an answer, and faults.
  { weight: 1, arbitrary: line.map((l) => event([chunkJson({}, 'stop')], l)) },
  { weight: 1, arbitrary: line.map((l) => event([JSON.stringify({ id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: 10, completion_tokens: 20 } })], l)) },
  { weight: 1, arbitrary: fc.constantFrom('data: [DONE]\n\n', 'data: not json\n\n', 'data: {"error":{"message":"boom"}}\n\n', 'data:\n\n') },
);

interface Outcome {
  reads: { text: string; fault?: string }[];
  end?: unknown;
  scanned: number;
}

const faultOf = (e: unknown) => (e instanceof Error ? `${(e as { code?: string }).code ?? e.name}: ${e.message}` : String(e));

/** What model-stream.ts would make of these reads. */
function readAll(reads: string[], scan: boolean, maxChars: number): Outcome {
  const a = new AnswerChunks('http://m/v1', (t) => t, maxChars, scan);
  const out: Outcome = { reads: [], scanned: 0 };
  for (const r of [...reads, undefined]) {
    if (a.done) break;
    const { text, fault } = a.read(r);
    out.reads.push(fault === undefined ? { text } : { text, fault: faultOf(fault) });
    if (fault !== undefined) return { ...out, scanned: a.scanned };
  }
  try {
    out.end = a.end();
  } catch (e) {
    out.end = faultOf(e);
  }
  return { ...out, scanned: a.scanned };
}

/**
 * `body` cut at these places (never inside a surrogate pair: the StringDecoder gives whole
 * characters); a negative cut -k is just after the k-th line end, where a cut is most telling.
 */
function split(body: string, cuts: number[]): string[] {
  const ends: number[] = [];
  for (let i = 0; i < body.length; i++) if (body[i] === '\n' || body[i] === '\r') ends.push(i + 1);
  const place = (c: number) => (c >= 0 ? c % (body.length + 1) : ends[(-c - 1) % ends.length]!);
  const at = [...new Set(cuts.map(place))].sort((x, y) => x - y);
  const reads: string[] = [];
  let from = 0;
  for (let c of at) {
    if (c > 0 && c < body.length && /[\ud800-\udbff]/.test(body[c - 1]!)) c++;
    if (c <= from) continue;
    reads.push(body.slice(from, c));
    from = c;
  }
  if (from < body.length) reads.push(body.slice(from));
  return reads;
}

describe('the scan of the learned chunk shape (sse-events.ts)', () => {
  it('gives the same parts as eventsource-parser alone, over random streams and random reads', () => {
    let scannedRuns = 0;
    fc.assert(
      fc.property(
        fc.boolean(),
        content,
        line,
        fc.array(piece, { minLength: 4, maxLength: 60, size: 'medium' }),
        fc.array(fc.oneof({ weight: 1, arbitrary: fc.nat() }, { weight: 2, arbitrary: fc.integer({ min: -1000, max: -1 }) }), { minLength: 1, maxLength: 16 }),
        fc.oneof({ weight: 4, arbitrary: fc.constant(1 << 20) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }) }),
        (bom, first, firstLine, pieces, cuts, maxChars) => {
          const body = (bom ? '\ufeff' : '') + event([chunkJson({ role: 'assistant', content: first })], firstLine) + event([chunkJson({ content: 'tok ' })], '\n') + pieces.join('');
          const reads = split(body, cuts);
          const withScan = readAll(reads, true, maxChars);
          const parserOnly = readAll(reads, false, maxChars);
          expect(parserOnly.scanned).toBe(0);
          expect({ ...withScan, scanned: 0 }).toEqual(parserOnly);
          if (withScan.scanned > 0) scannedRuns++;
        },
      ),
      { numRuns: 4000 },
    );
    // The property says nothing if the scan never took an event: in about a quarter of the runs it
    // does (≈ 1,000 of 4,000, varying with the random streams), so well over 600 must.
    expect(scannedRuns, `the scan took events in ${scannedRuns} of 4000 runs`).toBeGreaterThan(600);
  });

  it('takes the events of the shape itself, across a cut event, a comment and a CRLF stream, and leaves the rest to the parser', () => {
    const shape = new ContentChunkShape();
    const sse = new SseEvents(shape, 1 << 20);
    const ev = (c: string, end: Line = '\n') => event([chunkJson({ content: c })], end);
    const first = sse.feed(ev('a'));
    expect(first).toHaveLength(1);
    const m = first[0] as { data: string };
    shape.learn(m.data, JSON.parse(m.data));
    // Whole events: contents, no event objects.
    expect([...sse.feed(ev('b') + ev('c') + ev('d', '\r\n'))]).toEqual(['b', 'c', 'd']);
    expect(sse.scanned).toBe(3);
    // An event cut by the end of a read: the parser holds its start; the next read completes it
    // (found to be the shape) and the scan goes on after it.
    const cut = ev('e');
    expect([...sse.feed(ev('x') + cut.slice(0, 40))]).toEqual(['x']);
    expect([...sse.feed(cut.slice(40) + ': keep-alive\n\n' + ev('f') + ev('g'))]).toEqual(['e', 'f', 'g']);
    expect(sse.scanned).toBe(6);
    // An escape goes to the parser (and on to JSON.parse); from the first event not of the shape,
    // the parser has the rest of the read.
    const items = sse.feed(ev('h') + ev('"q"') + ev('i') + event([chunkJson({}, 'stop')], '\n') + ev('j'));
    expect(items[0]).toBe('h');
    expect(items.slice(1).map((x) => (typeof x === 'string' ? x : JSON.parse(x.data).choices[0].delta.content ?? 'stop'))).toEqual(['"q"', 'i', 'stop', 'j']);
    expect(sse.scanned).toBe(7);
    // The next read: the scan again.
    expect([...sse.feed(ev('k'))]).toEqual(['k']);
  });

  it('never takes a shape learned from a multi-line data field', () => {
    const shape = new ContentChunkShape();
    const sse = new SseEvents(shape, 1 << 20);
    const lines = dataLines(chunkJson({ content: 'a' }));
    const [m] = sse.feed(event(lines, '\n')) as { data: string }[];
    shape.learn(m!.data, JSON.parse(m!.data));
    expect(shape.scannable).toBe(false);
    // The same lines as one `data:` line each would be another event to the parser: never the shape.
    const items = sse.feed(event(dataLines(chunkJson({ content: 'b' })), '\n'));
    expect(sse.scanned).toBe(0);
    expect(items.map((x) => (typeof x === 'string' ? x : x.data))).toEqual([dataLines(chunkJson({ content: 'b' })).join('\n')]);
  });
});
