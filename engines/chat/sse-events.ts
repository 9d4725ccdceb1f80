// The Server-Sent Events of one answer's body, read from its text: eventsource-parser for any event,
// and a fused scan for the events most of an answer is made of, `data: ` + the learned chunk shape
// (chunk-shape.ts) with a plain content + a blank line. The scan takes their contents straight out
// of the read's text, with one string comparison per event (the text from one event's content to
// the next one's, the same for every event framed alike) and no event object; the parser costs an
// object and several slices per event (≈ 14 of the daemon's 40 ms per 50,000-token answer with the
// shape's match and the loop around them: bench/REPORT.md, "Chat engine").
//
// Exact, not a heuristic. The scan runs only where the parser is between events: nothing buffered,
// no field of an event pending (`clean`). From there an event the scan takes is one the parser would
// have given as {data} with no event type, which model-stream.ts would have matched to the shape
// (match() on its data); the scan counts it as a hit for the shape as match() would. Anything else —
// a comment, an `event:`/`id:`/`retry:` field, a multi-line data, a CR line end, a content with an
// escape, an event cut by the end of the read — goes to the parser from its start up to the next
// blank line ("\n\n" or "\n\r\n": after one the parser is between events whatever came before), and
// the scan goes on after it when the events the parser gave there were the shape too. From the first
// event that is not the shape the parser takes the rest of the read: model-stream.ts parses it and
// may learn a new shape, which must not be used for events before that one's place.
//
// A byte order mark at the body's start is dropped (as the SSE standard and TextDecoder do).
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { ContentChunkShape } from './chunk-shape.js';

/** A content the scan took (or a parsed event found to be the shape), or an event for the caller. */
export type SseItem = string | EventSourceMessage;

export class SseEvents {
  /** An event passed the bound without ending (the parser's buffer): the caller must stop. */
  oversized = false;
  /** Events the scan took, for the tests and benchmarks (the parser never saw them). */
  scanned = 0;
  private readonly items: SseItem[] = [];
  private readonly parser: EventSourceParser;
  private atStart = true;
  /** The parser was fed: the scan never takes the text the parser would see first (its own BOM rule). */
  private fed = false;
  /** The parser is between events (a conservative view: false when unsure, which only costs speed). */
  private clean = true;
  /** From one content's closing quote to the next content: suffix, blank line, `data:`(+ space), prefix. */
  private gap = '';
  /** The part of `gap` from the next event's start (its `data:` and prefix). */
  private gapHead = 0;
  private gapPrefix = '';
  private gapSuffix = '';

  /** `scan: false` gives the parser everything (the reference the tests compare the scan with). */
  constructor(
    private readonly shape: ContentChunkShape,
    maxEventChars: number,
    private readonly scan = true,
  ) {
    this.parser = createParser({
      onEvent: (m) => this.items.push(m),
      onError: (e) => {
        if (e.type === 'max-buffer-size-exceeded') this.oversized = true;
      },
      maxBufferSize: maxEventChars,
    });
  }

  /**
   * The items of one read of the body (undefined: its end), in the stream's order. The array is
   * reused: take what it holds before the next call.
   */
  feed(read: string | undefined): readonly SseItem[] {
    const items = this.items;
    items.length = 0;
    if (read === undefined) {
      this.parser.reset({ consume: true });
      return items;
    }
    let text = read;
    if (this.atStart && text !== '') {
      this.atStart = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (!this.scan || !this.fed || !this.shape.scannable) {
      this.toParser(text);
      return items;
    }
    const n = text.length;
    let p = 0;
    while (p < n) {
      if (this.clean) {
        p = this.take(text, p);
        if (p === n) break;
      }
      const b = blankLineAfter(text, p);
      if (b < 0) {
        this.toParser(p === 0 ? text : text.slice(p));
        break;
      }
      const had = items.length;
      this.toParser(text.slice(p, b));
      p = b;
      if (this.oversized) break;
      if (!this.matched(had)) {
        if (p < n) this.toParser(text.slice(p));
        break;
      }
    }
    return items;
  }

  private toParser(text: string): void {
    this.parser.feed(text);
    this.fed = true;
    if (text !== '') this.clean = endsWithBlankLine(text);
  }

  /** Turns the events from `from` on that are the shape into their contents; false at the first that is not. */
  private matched(from: number): boolean {
    const items = this.items;
    for (let i = from; i < items.length; i++) {
      const m = items[i] as EventSourceMessage;
      const content = m.event !== 'error' ? this.shape.match(m.data) : undefined;
      if (content === undefined) return false;
      items[i] = content;
    }
    return true;
  }

  /**
   * Takes the shape's events from `p` (where the parser is between events): their contents go to
   * the items; returns where the first event it did not take starts.
   */
  private take(text: string, p: number): number {
    const shape = this.shape;
    const prefix = shape.learnedPrefix;
    const suffix = shape.learnedSuffix;
    if (prefix !== this.gapPrefix || suffix !== this.gapSuffix) {
      this.gap = '';
      this.gapPrefix = prefix;
      this.gapSuffix = suffix;
    }
    const items = this.items;
    const n = text.length;
    let taken = 0;
    scan: while (p < n) {
      // One event in full: `data:` (and the one space the value does not keep), the prefix, a
      // plain content (up to its closing quote), the suffix, a blank line.
      if (!isDataField(text, p)) break;
      const head = text.charCodeAt(p + 5) === 0x20 ? 6 : 5;
      let c = p + head + prefix.length;
      // Equality of slices, not startsWith: on Node 20 startsWith was 2.4× slower here.
      if (c > n || text.slice(p + head, c) !== prefix) break;
      let q = plainEnd(text, c);
      for (;;) {
        if (q < 0) break scan;
        // This event's suffix and blank line and the next one's field and prefix in one comparison,
        // when the next is framed as the event the gap was taken from.
        const gap = this.gap;
        const g = q + gap.length;
        if (gap !== '' && g <= n && text.slice(q, g) === gap) {
          if (q > c) items.push(text.slice(c, q));
          taken++;
          p = g - this.gapHead;
          c = g;
          q = plainEnd(text, c);
          continue;
        }
        const e = q + suffix.length;
        if (e > n || text.slice(q, e) !== suffix) break scan;
        const t = blankLineEnd(text, e);
        if (t < 0) break scan;
        if (q > c) items.push(text.slice(c, q));
        taken++;
        if (gap === '') {
          this.gap = text.slice(q, t) + text.slice(p, p + head) + prefix;
          this.gapHead = head + prefix.length;
        }
        p = t;
        continue scan;
      }
    }
    shape.taken(taken);
    this.scanned += taken;
    return p;
  }
}

function isDataField(text: string, p: number): boolean {
  return text.charCodeAt(p) === 0x64 && text.charCodeAt(p + 1) === 0x61 && text.charCodeAt(p + 2) === 0x74 && text.charCodeAt(p + 3) === 0x61 && text.charCodeAt(p + 4) === 0x3a;
}

/** The closing quote of a plain string body from `c` (no `\`, no control character); -1 if none before the text ends. */
function plainEnd(text: string, c: number): number {
  for (let i = c; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) return i;
    if (ch === 0x5c || ch < 0x20) return -1;
  }
  return -1;
}

/** After a data line's end and the blank line ending its event ("\n\n" or "\r\n\r\n") at `e`; -1 otherwise. */
function blankLineEnd(text: string, e: number): number {
  const a = text.charCodeAt(e);
  if (a === 0x0a) return text.charCodeAt(e + 1) === 0x0a ? e + 2 : -1;
  if (a === 0x0d && text.charCodeAt(e + 1) === 0x0a && text.charCodeAt(e + 2) === 0x0d && text.charCodeAt(e + 3) === 0x0a) return e + 4;
  return -1;
}

/**
 * After the first blank line from `p` the parser sees whole: "\n\n" or "\n\r\n" (an LF always ends a
 * line, so the line after it is empty whatever came before); -1 if the text has none.
 */
function blankLineAfter(text: string, p: number): number {
  for (let i = text.indexOf('\n', p); i >= 0; i = text.indexOf('\n', i + 1)) {
    const c = text.charCodeAt(i + 1);
    if (c === 0x0a) return i + 2;
    if (c === 0x0d && text.charCodeAt(i + 2) === 0x0a) return i + 3;
  }
  return -1;
}

function endsWithBlankLine(text: string): boolean {
  const n = text.length;
  if (text.charCodeAt(n - 1) !== 0x0a) return false;
  const b = text.charCodeAt(n - 2);
  return b === 0x0a || (b === 0x0d && text.charCodeAt(n - 3) === 0x0a);
}
