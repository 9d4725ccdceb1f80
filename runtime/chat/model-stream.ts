// One streaming Chat Completions request: POST {baseUrl}/chat/completions with stream: true, read
// as Server-Sent Events, yielding text deltas as they arrive and, at the end, the accumulated tool
// calls, the finish_reason and the usage. Every way it can go wrong is a ModelError with a code, a
// message that says what to do and whether a retry may help; a cancel is a ModelCancelledError and is
// never taken for a finished answer. Quirks of real servers are tolerated here, in one place: SSE
// comments, a last chunk with empty `choices` carrying usage, a whole tool call in one chunk
// (Ollama), tool-call fragments without ids (accumulated by index), a stream without [DONE].
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ContentChunkShape } from './chunk-shape.js';
import { SHELL_TOOL, type ChatMessage, type ToolCall } from './messages.js';
import { ModelCancelledError, ModelError, RetryAfter, connectionError, errorDetail, httpError, readErrorDetail, scrubSecret } from './model-errors.js';
import { UnknownContentEncoding, postModel, type ModelResponse } from './model-http.js';

export { MODEL_ERROR_CODES, ModelCancelledError, ModelError, scrubSecret, type ModelErrorCode } from './model-errors.js';

export interface ModelRequest {
  baseUrl: string;
  model: string;
  apiKey?: string;
  messages: ChatMessage[];
  signal: AbortSignal;
  stallMs: number;
  maxRetryAfterMs: number;
  maxAttempts: number;
  /** Characters of text and tool-call arguments one answer may have (default 1 Mi: its events must fit a frame). */
  maxAnswerChars?: number;
}

export const DEFAULT_MAX_ANSWER_CHARS = 1024 * 1024;

export type ModelStreamPart =
  | { type: 'text'; text: string }
  | { type: 'usage'; promptTokens: number; completionTokens: number }
  /** Always the last part of a stream that did not throw. */
  | { type: 'finish'; finishReason: string; toolCalls: ToolCall[] };


/** The request body: exported so tests and docs can say exactly what the model is sent. */
export function chatRequestBody(model: string, messages: ChatMessage[]): Record<string, unknown> {
  return { model, messages, tools: [SHELL_TOOL], stream: true, stream_options: { include_usage: true } };
}

/** Streams one answer; retries a 429 whose Retry-After fits the bound (nothing was read yet then). */
export async function* streamChatCompletion(req: ModelRequest): AsyncGenerator<ModelStreamPart, void, undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      yield* attemptOnce(req);
      return;
    } catch (e) {
      if (!(e instanceof RetryAfter)) throw e;
      if (attempt >= req.maxAttempts || e.waitMs > req.maxRetryAfterMs)
        throw new ModelError(
          'model_rate_limited',
          `the model server at ${req.baseUrl} is rate limiting requests (HTTP 429${e.detail ? `: ${e.detail}` : ''}); ` +
            `it asks to wait ${Math.ceil(e.waitMs / 1000)} s${attempt > 1 ? ` after ${attempt} attempts` : ''}: send the message again later`,
          true,
        );
      await abortableSleep(e.waitMs, req.signal);
    }
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ModelCancelledError());
    const onAbort = () => {
      clearTimeout(t);
      reject(new ModelCancelledError());
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

async function* attemptOnce(req: ModelRequest): AsyncGenerator<ModelStreamPart, void, undefined> {
  const url = `${req.baseUrl}/chat/completions`;
  const scrub = (text: string) => scrubSecret(text, req.apiKey);
  // One controller for the request: fired by the caller's cancel or by the stall timer; `why` says which.
  const ctl = new AbortController();
  let why: 'cancel' | 'stall' | undefined;
  const onAbort = () => {
    why ??= 'cancel';
    ctl.abort();
  };
  if (req.signal.aborted) throw new ModelCancelledError();
  req.signal.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  // Armed only while waiting on the server, so time the consumer spends (backpressure) is not a stall.
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      why ??= 'stall';
      ctl.abort();
    }, req.stallMs);
  };
  const disarm = () => clearTimeout(timer);
  const stalled = () =>
    new ModelError(
      'model_stalled',
      `the model server at ${req.baseUrl} sent nothing for ${req.stallMs >= 1000 ? `${Math.round(req.stallMs / 1000)} s` : `${req.stallMs} ms`}: it may be overloaded or stuck loading the model; check it, then send the message again`,
      true,
    );
  const interrupted = (e: unknown): Error => {
    if (why === 'cancel') return new ModelCancelledError();
    if (why === 'stall') return stalled();
    return connectionError(e, req.baseUrl, scrub);
  };

  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (req.apiKey) {
    // A header cannot carry a line break or a control character (and must not: it would end the header).
    if (!/^[\x20-\x7e\x80-\xff\t]+$/.test(req.apiKey)) {
      req.signal.removeEventListener('abort', onAbort);
      throw new ModelError('model_auth', 'the API key (ASTRA_CHAT_API_KEY or OPENAI_API_KEY) has a character an HTTP header cannot carry, such as a line break: set it again without it and restart the daemon', false);
    }
    headers.authorization = `Bearer ${req.apiKey}`;
  }
  let res: ModelResponse;
  arm();
  try {
    res = await postModel(new URL(url), headers, JSON.stringify(chatRequestBody(req.model, req.messages)), ctl.signal);
  } catch (e) {
    disarm();
    req.signal.removeEventListener('abort', onAbort);
    if (e instanceof UnknownContentEncoding)
      throw new ModelError('model_bad_response', `the model server at ${req.baseUrl} answered with ${scrub(e.message)}, which Astra does not decode (it asks for none): check what sits between Astra and the server`, false);
    throw interrupted(e);
  }

  try {
    if (res.status < 200 || res.status > 299) {
      const detail = scrub(await readErrorDetail(res, arm, disarm));
      throw httpError(res, detail, req);
    }
    const type = res.header('content-type') ?? '';
    if (/json/i.test(type) && !/event-stream/i.test(type))
      throw new ModelError(
        'model_bad_response',
        `the model server at ${req.baseUrl} answered with ${type.split(';')[0]}, not an event stream: it does not stream Chat Completions; check that the base URL is its OpenAI-compatible /v1 API`,
        false,
      );

    const maxChars = req.maxAnswerChars ?? DEFAULT_MAX_ANSWER_CHARS;
    const messages: EventSourceMessage[] = [];
    // One event (a line or a multi-line data block) is bounded too: a server that never ends a line
    // must not grow memory without end.
    const maxEventChars = 2 * maxChars + 4096;
    let oversized = false;
    const parser = createParser({
      onEvent: (m) => messages.push(m),
      onError: (e) => {
        if (e.type === 'max-buffer-size-exceeded') oversized = true;
      },
      maxBufferSize: maxEventChars,
    });
    // The body comes as text (model-http.ts decodes it with a StringDecoder, a sequence split
    // between reads joined, a bad one U+FFFD); a byte order mark at its start is dropped, as the SSE
    // standard (and TextDecoder) do.
    let atStart = true;
    const decode = (text: string): string => {
      if (atStart && text !== '') {
        atStart = false;
        if (text.charCodeAt(0) === 0xfeff) return text.slice(1);
      }
      return text;
    };
    const shape = new ContentChunkShape();
    const calls = new Map<number, PartialCall>();
    let finishReason: string | undefined;
    let usage: { promptTokens: number; completionTokens: number } | undefined;
    let done = false;
    let answerChars = 0;
    const count = (n: number) => {
      answerChars += n;
      if (answerChars > maxChars)
        throw new ModelError(
          'model_answer_too_large',
          `the model's answer passed ${maxChars} characters (Astra's bound for one answer, so its events fit a frame): ask it for a shorter answer or smaller tool calls`,
          false,
        );
    };

    while (!done) {
      let read: string | undefined;
      arm();
      try {
        read = await res.read();
      } catch (e) {
        throw interrupted(e);
      } finally {
        disarm();
      }
      if (read === undefined) parser.reset({ consume: true });
      else parser.feed(decode(read));
      if (oversized)
        throw new ModelError(
          'model_bad_response',
          `the model server at ${req.baseUrl} sent an event of more than ${maxEventChars} characters without ending it: check that it is an OpenAI-compatible API`,
          false,
        );

      // The text of every chunk of one read goes out as one part: a part per token would cost each
      // token two async-generator hops, which is most of what the daemon spends on a fast stream. Text
      // read before a fault in the same read still goes out first (it is kept as the partial answer).
      // Its contents are joined once, into a flat string: `text += content` per chunk made a rope of
      // every token of the answer, which V8 then flattened on the event loop when message.completed
      // was encoded (2–3 ms for 50,000 tokens), and whose nodes the scavenger copied at every GC.
      const parts: string[] = [];
      let fault: unknown;
      try {
        for (const m of messages.splice(0)) {
          // Most chunks: the learned shape with another content (chunk-shape.ts; exact, else parsed).
          if (m.event !== 'error') {
            const content = shape.match(m.data);
            if (content !== undefined) {
              if (content !== '') {
                count(content.length);
                parts.push(content);
              }
              continue;
            }
          }
          if (m.data.trim() === '[DONE]') {
            done = true;
            break;
          }
          let obj: unknown;
          try {
            obj = JSON.parse(m.data);
          } catch {
            throw new ModelError(
              'model_bad_response',
              `the model server at ${req.baseUrl} sent a chunk that is not JSON (${JSON.stringify(scrub(m.data.slice(0, 80)))}…): check that it is an OpenAI-compatible API, then send the message again`,
              false,
            );
          }
          if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
            throw new ModelError(
              'model_bad_response',
              `the model server at ${req.baseUrl} sent a chunk that is not a JSON object (${JSON.stringify(scrub(m.data.slice(0, 80)))}): check that it is an OpenAI-compatible API`,
              false,
            );
          const errObj = (obj as { error?: unknown }).error;
          if (m.event === 'error' || (errObj !== undefined && errObj !== null)) {
            throw new ModelError(
              'model_stream_error',
              `the model server at ${req.baseUrl} reported an error mid-answer (${scrub(errorDetail(obj))}): send the message again; if it repeats, check the server's log`,
              true,
            );
          }
          const c = obj as { choices?: unknown; usage?: unknown };
          const u = readUsage(c.usage);
          if (u) usage = u;
          if (!Array.isArray(c.choices)) continue;
          for (const choice of c.choices as { index?: number; delta?: unknown; finish_reason?: unknown }[]) {
            if ((choice.index ?? 0) !== 0) continue; // we ask for one choice
            const delta = (choice.delta ?? {}) as { content?: unknown; tool_calls?: unknown };
            if (typeof delta.content === 'string' && delta.content !== '') {
              count(delta.content.length);
              parts.push(delta.content);
            }
            if (Array.isArray(delta.tool_calls)) count(accumulateToolCalls(calls, delta.tool_calls));
            if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') finishReason = choice.finish_reason;
          }
          shape.learn(m.data, obj);
        }
      } catch (e) {
        fault = e;
      }
      if (parts.length > 0) yield { type: 'text', text: parts.length === 1 ? parts[0]! : parts.join('') };
      if (fault !== undefined) throw fault;
      if (read === undefined) break;
    }
    // A cancel that lands as the stream ends is still a cancel.
    if (why === 'cancel' || req.signal.aborted) throw new ModelCancelledError();
    if (finishReason === undefined)
      throw new ModelError(
        'model_incomplete',
        `the model server at ${req.baseUrl} ended the answer without a finish_reason (the stream was cut short): send the message again; if it repeats, check the server's log`,
        true,
      );
    if (usage) yield { type: 'usage', ...usage };
    const toolCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, p]): ToolCall => ({ id: p.id || `call_${index}`, type: 'function', function: { name: p.name, arguments: p.arguments } }));
    yield { type: 'finish', finishReason, toolCalls };
  } finally {
    disarm();
    req.signal.removeEventListener('abort', onAbort);
    // Closes the connection when we stop early (a fault, the consumer gone); keeps it after the end.
    res.close();
  }
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
