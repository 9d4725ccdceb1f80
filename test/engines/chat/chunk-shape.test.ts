// The content-chunk fast path (engines/chat/chunk-shape.ts) must be exact: whenever match() gives a
// content, JSON.parse of the same text is a chunk that says nothing but that content. Checked on
// hand-made traps and on generated hostile texts against JSON.parse as the oracle.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ContentChunkShape, contentOnly } from '../../../engines/chat/chunk-shape.js';

const chunk = (content: string, extra = '') =>
  `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}${extra}},"finish_reason":null}]}`;

function learned(data: string): ContentChunkShape {
  const s = new ContentChunkShape();
  s.learn(data, JSON.parse(data));
  return s;
}

/** What JSON.parse says the text's content is, if it is a content-only chunk (the oracle). */
function oracle(data: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  return contentOnly(parsed);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the content-chunk shape', () => {
  it('gives the content of a chunk that differs from the learned one only in a plain content', () => {
    const s = learned(chunk('tok '));
    expect(s.match(chunk('Hello'))).toBe('Hello');
    expect(s.match(chunk(''))).toBe('');
    expect(s.match(chunk('ünïcødé ✓ 😀 \u2028'))).toBe('ünïcødé ✓ 😀 \u2028');
  });

  it('leaves every chunk that is not exactly the shape to JSON.parse', () => {
    const s = learned(chunk('tok '));
    const traps = [
      chunk('say "hi"'), // an escaped quote
      chunk('back\\slash'),
      chunk('line\nbreak'), // \n escape
      chunk('tab\there'),
      chunk('tok ').replace('"tok "', '"\\u0074ok "'), // an escape for a plain letter
      chunk('tok ').replace('"tok "', '"a","content":"b"'), // a duplicate key, the last one wins
      chunk('tok ').replace('"finish_reason":null', '"finish_reason":"stop"'),
      chunk('tok ').replace('"index":0', '"index":1'),
      chunk('tok ').replace('chatcmpl-1', 'chatcmpl-2'),
      chunk('tok ', ',"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]'),
      chunk('tok ') + ' ',
      ' ' + chunk('tok '),
      chunk('tok ').replace('"tok "', '"tok'), // cut
      chunk('tok ').replace('"tok "', '"a" "b"'),
      '[DONE]',
      '',
    ];
    for (const t of traps) expect(s.match(t), t).toBeUndefined();
  });

  it('does not take a key, an id or a value a later duplicate overrides for the content', () => {
    // The content's text also occurs as the id and as a key, after the real content.
    const sameAsId = '{"id":"tok","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}],"x":{"tok":1}}';
    const s = learned(sameAsId);
    expect(s.match(sameAsId.replace('"content":"tok"', '"content":"other"'))).toBe('other');
    expect(s.match(sameAsId.replace('"id":"tok"', '"id":"other"'))).toBeUndefined();
    expect(s.match(sameAsId.replace('{"tok":1}', '{"other":1}'))).toBeUndefined();
    // A duplicate content key: JSON.parse keeps the last, so the first is not the content's place.
    const dup = '{"choices":[{"index":0,"delta":{"content":"A","content":"B"},"finish_reason":null}]}';
    const d = learned(dup);
    expect(d.match(dup)).toBe('B');
    expect(d.match(dup.replace('"B"', '"C"'))).toBe('C');
    expect(d.match(dup.replace('"A"', '"Z"'))).toBeUndefined();
  });

  it('learns nothing from a chunk that says more than its content, or whose content is escaped', () => {
    const notContentOnly = [
      chunk('tok ').replace('"finish_reason":null', '"finish_reason":"stop"'),
      chunk('tok ').replace('"model":"m"', '"model":"m","usage":{"prompt_tokens":1,"completion_tokens":2}'),
      chunk('tok ').replace('"model":"m"', '"model":"m","error":{"message":"x"}'),
      chunk('tok ', ',"tool_calls":[]'),
      chunk('a"b'),
      '{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}',
    ];
    for (const t of notContentOnly) {
      const s = learned(t);
      expect(s.match(t), t).toBeUndefined();
      expect(s.match(chunk('tok ')), t).toBeUndefined();
    }
  });

  it('stops learning after a few shapes that no chunk matched (a server with a new id per chunk)', () => {
    const s = new ContentChunkShape();
    const parse = vi.spyOn(JSON, 'parse');
    for (let i = 0; i < 20; i++) {
      const data = chunk('tok ').replace('chatcmpl-1', `chatcmpl-${i}`);
      expect(s.match(data)).toBeUndefined();
      s.learn(data, { choices: [{ index: 0, delta: { content: 'tok ' }, finish_reason: null }] });
    }
    // One probe per learned shape, and none once learning stopped: not one per chunk.
    expect(parse.mock.calls.length).toBeLessThanOrEqual(5);
  });

  it('keeps matching a shape that chunks match (learning goes on for a stream whose shape changes once)', () => {
    const s = learned(chunk('a').replace('"delta":{', '"delta":{"role":"assistant",'));
    for (let i = 0; i < 10; i++) {
      const d = chunk(`t${i}`);
      if (s.match(d) === undefined) s.learn(d, JSON.parse(d));
    }
    expect(s.match(chunk('later'))).toBe('later');
  });

  it('agrees with JSON.parse on generated hostile texts around a learned shape', () => {
    const shapes = [chunk('tok '), '{"choices":[{"delta":{"content":"x"}}]}', '{"a":"\\"","choices":[{"index":0,"delta":{"content":"q"},"finish_reason":""}],"b":"q"}'];
    const piece = fc.oneof(
      fc.string({ unit: 'grapheme-ascii', maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc.constantFrom('"', '\\', '\\"', '\\u0022', '","content":"', '"}', '"},"finish_reason":"stop', '\n', '\u0000', '\ud800', '"index":1'),
    );
    fc.assert(
      fc.property(fc.constantFrom(...shapes), fc.array(piece, { maxLength: 4 }), fc.nat(), fc.nat(), (shapeText, pieces, cutA, cutB) => {
        const s = learned(shapeText);
        const content = contentOnly(JSON.parse(shapeText))!;
        const at = shapeText.lastIndexOf(`"${content}"`) + 1;
        const prefix = shapeText.slice(0, at);
        const suffix = shapeText.slice(at + content.length);
        const middle = pieces.join('');
        // The content replaced, and texts with the prefix or the suffix cut or spliced.
        const candidates = [
          prefix + middle + suffix,
          prefix.slice(0, cutA % (prefix.length + 1)) + middle + suffix,
          prefix + middle + suffix.slice(cutB % (suffix.length + 1)),
          prefix + middle + '"' + middle + suffix,
          middle + shapeText,
          shapeText.replace(content, middle),
        ];
        for (const data of candidates) {
          const fast = s.match(data);
          if (fast !== undefined) expect(fast, data).toBe(oracle(data));
        }
      }),
      { numRuns: 3000 },
    );
  });
});
