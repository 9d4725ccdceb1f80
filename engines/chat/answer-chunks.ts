// One streamed answer's body, read by read, into what model-stream.ts yields: the text of each read
// (its contents joined once, flat), then the usage, the finish_reason and the tool calls at the end.
// No I/O: model-stream.ts does the request and hands each read's text here. The events come from
// sse-events.ts (the learned chunk shape taken by a scan, the rest parsed); each parsed chunk is
// checked here: [DONE], not JSON, an error object, usage, a choice's content, tool-call fragments
// (accumulated by index, or by id for servers that omit it), finish_reason. Every fault is a
// ModelError whose message says what to do.
import { ContentChunkShape } from './chunk-shape.js';
import type { ToolCall } from './messages.js';
import { ModelError, errorDetail } from './model-errors.js';
import { SseEvents } from './sse-events.js';

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

export interface AnswerEnd {
  usage: { promptTokens: number; completionTokens: number } | undefined;
  finishReason: string;
  toolCalls: ToolCall[];
}

export class AnswerChunks {
  /** [DONE] was read: nothing after it counts. */
  done = false;
  private readonly shape = new ContentChunkShape();
  private readonly events: SseEvents;
  private readonly calls = new Map<number, PartialCall>();
  private finishReason: string | undefined;
  private usage: { promptTokens: number; completionTokens: number } | undefined;
  private answerChars = 0;
  private readonly maxEventChars: number;

  /** `scan: false` parses every event (the reference the tests compare with). */
  constructor(
    private readonly baseUrl: string,
    private readonly scrub: (text: string) => string,
    private readonly maxChars: number,
    scan = true,
  ) {
    // One event (a line or a multi-line data block) is bounded too: a server that never ends a line
    // must not grow memory without end.
    this.maxEventChars = 2 * maxChars + 4096;
    this.events = new SseEvents(this.shape, this.maxEventChars, scan);
  }

  /**
   * One read of the body (undefined: its end). Its text ('' for none) comes back with the fault that
   * stopped it, if any: text read before a fault in the same read still goes out first (it is kept
   * as the partial answer). The text of every chunk of one read is one part: a part per token would
   * cost each token two async-generator hops, most of what the daemon spends on a fast stream.
   */
  read(read: string | undefined): { text: string; fault?: unknown } {
    const items = this.events.feed(read);
    if (this.events.oversized)
      return {
        text: '',
        fault: new ModelError(
          'model_bad_response',
          `the model server at ${this.baseUrl} sent an event of more than ${this.maxEventChars} characters without ending it: check that it is an OpenAI-compatible API`,
          false,
        ),
      };
    // Joined once, into a flat string: `text += content` per chunk made a rope of every token of the
    // answer, which V8 flattened on the event loop when message.completed was encoded (2–3 ms for
    // 50,000 tokens), and whose nodes the scavenger copied at every GC.
    const parts: string[] = [];
    try {
      for (let i = 0; i < items.length; i++) {
        const m = items[i]!;
        // A content the scan took, or a chunk found to be the shape (sse-events.ts).
        if (typeof m === 'string') {
          if (m !== '') this.add(parts, m);
          continue;
        }
        // Most chunks: the learned shape with another content (chunk-shape.ts; exact, else parsed).
        if (m.event !== 'error') {
          const content = this.shape.match(m.data);
          if (content !== undefined) {
            if (content !== '') this.add(parts, content);
            continue;
          }
        }
        if (m.data.trim() === '[DONE]') {
          this.done = true;
          break;
        }
        this.chunk(m.event, m.data, parts);
      }
    } catch (e) {
      return { text: joined(parts), fault: e };
    }
    return { text: joined(parts) };
  }

  /** Events the scan took (sse-events.ts), for the tests and benchmarks. */
  get scanned(): number {
    return this.events.scanned;
  }

  /** What the answer ended with; throws model_incomplete when no finish_reason came. */
  end(): AnswerEnd {
    if (this.finishReason === undefined)
      throw new ModelError(
        'model_incomplete',
        `the model server at ${this.baseUrl} ended the answer without a finish_reason (the stream was cut short): send the message again; if it repeats, check the server's log`,
        true,
      );
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, p]): ToolCall => ({ id: p.id || `call_${index}`, type: 'function', function: { name: p.name, arguments: p.arguments } }));
    return { usage: this.usage, finishReason: this.finishReason, toolCalls };
  }

  private add(parts: string[], content: string): void {
    this.count(content.length);
    parts.push(content);
  }

  private count(n: number): void {
    this.answerChars += n;
    if (this.answerChars > this.maxChars)
      throw new ModelError(
        'model_answer_too_large',
        `the model's answer passed ${this.maxChars} characters (Astra's bound for one answer, so its events fit a frame): ask it for a shorter answer or smaller tool calls`,
        false,
      );
  }

  /** A chunk that is not the shape: parsed and checked. */
  private chunk(event: string | undefined, data: string, parts: string[]): void {
    let obj: unknown;
    try {
      obj = JSON.parse(data);
    } catch {
      throw new ModelError(
        'model_bad_response',
        `the model server at ${this.baseUrl} sent a chunk that is not JSON (${JSON.stringify(this.scrub(data.slice(0, 80)))}…): check that it is an OpenAI-compatible API, then send the message again`,
        false,
      );
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
      throw new ModelError(
        'model_bad_response',
        `the model server at ${this.baseUrl} sent a chunk that is not a JSON object (${JSON.stringify(this.scrub(data.slice(0, 80)))}): check that it is an OpenAI-compatible API`,
        false,
      );
    const errObj = (obj as { error?: unknown }).error;
    if (event === 'error' || (errObj !== undefined && errObj !== null)) {
      throw new ModelError(
        'model_stream_error',
        `the model server at ${this.baseUrl} reported an error mid-answer (${this.scrub(errorDetail(obj))}): send the message again; if it repeats, check the server's log`,
        true,
      );
    }
    const c = obj as { choices?: unknown; usage?: unknown };
    const u = readUsage(c.usage);
    if (u) this.usage = u;
    if (!Array.isArray(c.choices)) return;
    for (const choice of c.choices as { index?: number; delta?: unknown; finish_reason?: unknown }[]) {
      if ((choice.index ?? 0) !== 0) continue; // we ask for one choice
      const delta = (choice.delta ?? {}) as { content?: unknown; tool_calls?: unknown };
      if (typeof delta.content === 'string' && delta.content !== '') this.add(parts, delta.content);
      if (Array.isArray(delta.tool_calls)) this.count(accumulateToolCalls(this.calls, delta.tool_calls));
      if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') this.finishReason = choice.finish_reason;
    }
    this.shape.learn(data, obj);
  }
}

function joined(parts: string[]): string {
  return parts.length === 1 ? parts[0]! : parts.join('');
}

/** Adds the fragments to their calls; returns the characters of arguments added. */
function accumulateToolCalls(calls: Map<number, PartialCall>, fragments: unknown[]): number {
  let added = 0;
  for (let i = 0; i < fragments.length; i++) {
    const f = fragments[i] as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    // Servers that omit `index` send one whole call per entry: a new id is a new call.
    let index = typeof f.index === 'number' ? f.index : undefined;
    if (index === undefined) {
      const byId = typeof f.id === 'string' ? [...calls.entries()].find(([, c]) => c.id === f.id)?.[0] : undefined;
      index = byId ?? (typeof f.id === 'string' || calls.size === 0 ? calls.size : calls.size - 1);
    }
    let call = calls.get(index);
    if (!call) calls.set(index, (call = { id: '', name: '', arguments: '' }));
    if (typeof f.id === 'string' && f.id !== '') call.id = f.id;
    // The name comes whole in the first fragment (some servers repeat it): set, never concatenate.
    if (typeof f.function?.name === 'string' && f.function.name !== '') call.name = f.function.name;
    const before = call.arguments.length;
    if (typeof f.function?.arguments === 'string') call.arguments += f.function.arguments;
    // A few servers send arguments as an object rather than a JSON string.
    else if (f.function?.arguments && typeof f.function.arguments === 'object') call.arguments += JSON.stringify(f.function.arguments);
    added += call.arguments.length - before + call.name.length;
  }
  return added;
}

function readUsage(u: unknown): { promptTokens: number; completionTokens: number } | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const { prompt_tokens: p, completion_tokens: c } = u as { prompt_tokens?: unknown; completion_tokens?: unknown };
  if (typeof p !== 'number' || typeof c !== 'number' || !Number.isFinite(p) || !Number.isFinite(c)) return undefined;
  return { promptTokens: Math.max(0, Math.round(p)), completionTokens: Math.max(0, Math.round(c)) };
}
