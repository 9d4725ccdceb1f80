// A fast path for the chunk most of an answer is made of: a server streams one chunk per token, each
// the same JSON text as the one before but for its content, e.g.
//   {"id":"c1","object":"chat.completion.chunk",…,"choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}
// JSON.parse of each is a third of what the daemon spends on a fast stream (bench/REPORT.md, "Chat
// engine"). Once a chunk that says nothing but content has been parsed, its text around the content
// is kept (the shape); a later chunk whose text is that shape with a plain string in the content's
// place is that content, without a parse.
//
// Exact, not a heuristic: the shape is taken only after a probe, the same text with another string
// in that place, parses to the same chunk with the probe as its content (so the place is the content
// string's body: not a key, not a duplicate key a later one overrides, not outside a string). A
// string body without `"`, `\` and control characters keeps every other token of the text as it
// is, so the chunk parses to the learned one with that content. Anything else — an escape, a quote,
// another key, a different id, whitespace — is not the shape and goes to JSON.parse as before.
// A stream whose chunks never repeat their shape (a per-chunk id or padding) stops being learned
// from after a few tries, so it costs a handful of parses more, not one more per chunk.
//
// sse-events.ts uses the shape on the raw event text as well (scannable, prefix, suffix, taken): a
// shape learned from a multi-line data field (a line break in it) is not taken there, since the
// raw text would hold `data:` between its lines.

/** Shapes learned in a row without a chunk matching them, after which learning stops for the stream. */
const MAX_FRUITLESS_SHAPES = 4;
/** Places tried for the content in one chunk's text (it can occur as a key or another value too). */
const MAX_PLACES = 4;

export class ContentChunkShape {
  private prefix = '';
  private suffix = '';
  private inline = false;
  private hits = 0;
  private fruitless = 0;

  /** A shape is learned and holds no line break: sse-events.ts may look for it in the raw text. */
  get scannable(): boolean {
    return this.inline;
  }

  /** The learned text before the content, its opening quote included ('' before one is learned). */
  get learnedPrefix(): string {
    return this.prefix;
  }

  /** The learned text after the content, from its closing quote. */
  get learnedSuffix(): string {
    return this.suffix;
  }

  /** Counts `n` chunks found to be the shape outside match() (as match() counts its own). */
  taken(n: number): void {
    this.hits += n;
  }

  /**
   * The content of `data` when it is the learned shape with a plain string as its content ('' for
   * an empty one); undefined otherwise, when it must be parsed.
   */
  match(data: string): string | undefined {
    const prefix = this.prefix;
    if (prefix === '') return undefined;
    const suffix = this.suffix;
    const end = data.length - suffix.length;
    // Equality of slices, not startsWith/endsWith: on Node 20 these were 4× slower for a prefix held
    // in a field (≈ 20 vs 5 ms for 50,000 chunks).
    if (end < prefix.length || data.slice(0, prefix.length) !== prefix || data.slice(end) !== suffix) return undefined;
    const content = data.slice(prefix.length, end);
    if (!isPlain(content)) return undefined;
    this.hits++;
    return content;
  }

  /** Learns the shape of `data`, which parsed to `chunk`, when the chunk says nothing but its content. */
  learn(data: string, chunk: unknown): void {
    if (this.fruitless >= MAX_FRUITLESS_SHAPES) return;
    const content = contentOnly(chunk);
    if (content === undefined || !isPlain(content)) return;
    const needle = `"${content}"`;
    const probe = content === 'x' ? 'y' : 'x';
    let at = data.length;
    for (let tries = 0; tries < MAX_PLACES; tries++) {
      at = data.lastIndexOf(needle, at - 1);
      if (at < 0) return;
      const prefix = data.slice(0, at + 1);
      const suffix = data.slice(at + 1 + content.length);
      let probed: unknown;
      try {
        probed = JSON.parse(prefix + probe + suffix);
      } catch {
        continue;
      }
      if (contentOnly(probed) !== probe) continue;
      if (this.prefix !== '' && this.hits === 0) this.fruitless++;
      this.prefix = prefix;
      this.suffix = suffix;
      this.inline = !/[\r\n]/.test(prefix) && !/[\r\n]/.test(suffix);
      this.hits = 0;
      return;
    }
  }
}

function isPlain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c < 0x20) return false;
  }
  return true;
}

/**
 * The content of a chunk whose only effect on the answer is its content: one choice, index 0, a
 * string content, no tool calls, no finish_reason, no usage, no error. Undefined for any other.
 */
export function contentOnly(chunk: unknown): string | undefined {
  if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) return undefined;
  const c = chunk as { choices?: unknown; usage?: unknown; error?: unknown };
  if (c.error !== undefined && c.error !== null) return undefined;
  if (c.usage !== undefined && c.usage !== null) return undefined;
  if (!Array.isArray(c.choices) || c.choices.length !== 1) return undefined;
  const choice = c.choices[0] as { index?: unknown; delta?: unknown; finish_reason?: unknown } | null;
  if (choice === null || typeof choice !== 'object' || Array.isArray(choice)) return undefined;
  if ((choice.index ?? 0) !== 0) return undefined;
  if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') return undefined;
  const delta = choice.delta as { content?: unknown; tool_calls?: unknown } | null | undefined;
  if (delta === null || typeof delta !== 'object' || Array.isArray(delta)) return undefined;
  if (delta.tool_calls !== undefined && delta.tool_calls !== null) return undefined;
  return typeof delta.content === 'string' ? delta.content : undefined;
}
