// One streaming Chat Completions request: POST {baseUrl}/chat/completions with stream: true, read
// as Server-Sent Events, yielding text deltas as they arrive and, at the end, the accumulated tool
// calls, the finish_reason and the usage. Every way it can go wrong is a ModelError with a code, a
// message that says what to do and whether a retry may help; a cancel is a ModelCancelledError and is
// never taken for a finished answer. This file is the request, its retries, the stall timer and the
// cancel; what the body says is read in answer-chunks.ts (no I/O), read by read, where the quirks of
// real servers are tolerated in one place: SSE comments, a last chunk with empty `choices` carrying
// usage, a whole tool call in one chunk (Ollama), tool-call fragments without ids (accumulated by
// index), a stream without [DONE].
import { AnswerChunks } from './answer-chunks.js';
import { SHELL_TOOL, type ChatMessage, type ToolCall } from './messages.js';
import { ModelCancelledError, ModelError, RetryAfter, connectionError, httpError, readErrorDetail, scrubSecret } from './model-errors.js';
import { UnknownContentEncoding, postModel, type ModelResponse } from './model-http.js';
import { postModelViaProxy, proxiedConnectionError, type ProxySettings } from './model-proxy.js';

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
  /** The proxy settings of the daemon's environment (model-proxy.ts); none: straight to the server. */
  proxy?: ProxySettings;
  /** The turn's W3C trace context: sent as the `traceparent` (and `tracestate`) headers when well-formed (traceHeaders). */
  trace?: { traceparent?: string; tracestate?: string };
}

/** W3C Trace Context: version-traceid-parentid-flags in lowercase hex; version ff and all-zero ids are invalid. */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** tracestate: printable ASCII, at most 512 characters (W3C's limit). */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** The trace headers for a model request: a malformed traceparent sends neither (and a tracestate goes only with one). */
export function traceHeaders(trace: ModelRequest['trace']): Record<string, string> {
  const parent = trace?.traceparent?.trim();
  if (parent === undefined || !TRACEPARENT.test(parent)) return {};
  const state = trace?.tracestate?.trim();
  return state !== undefined && TRACESTATE.test(state) ? { traceparent: parent, tracestate: state } : { traceparent: parent };
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

async function* attemptOnce(req: ModelRequest): AsyncGenerator<ModelStreamPart, void, undefined> {
  const url = `${req.baseUrl}/chat/completions`;
  const target = new URL(url);
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
    if (req.proxy) return proxiedConnectionError(e, target, req.proxy, (err) => connectionError(err, req.baseUrl, scrub));
    return connectionError(e, req.baseUrl, scrub);
  };

  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream', ...traceHeaders(req.trace) };
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
    const body = JSON.stringify(chatRequestBody(req.model, req.messages));
    res = await (req.proxy ? postModelViaProxy(target, headers, body, ctl.signal, req.proxy) : postModel(target, headers, body, ctl.signal));
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

    const answer = new AnswerChunks(req.baseUrl, scrub, req.maxAnswerChars ?? DEFAULT_MAX_ANSWER_CHARS);
    while (!answer.done) {
      let read: string | undefined;
      arm();
      try {
        read = await res.read();
      } catch (e) {
        throw interrupted(e);
      } finally {
        disarm();
      }
      const { text, fault } = answer.read(read);
      if (text) yield { type: 'text', text };
      if (fault !== undefined) throw fault;
      if (read === undefined) break;
    }
    // A cancel that lands as the stream ends is still a cancel.
    if (why === 'cancel' || req.signal.aborted) throw new ModelCancelledError();
    const { usage, finishReason, toolCalls } = answer.end();
    if (usage) yield { type: 'usage', ...usage };
    yield { type: 'finish', finishReason, toolCalls };
  } finally {
    disarm();
    req.signal.removeEventListener('abort', onAbort);
    // Closes the connection when we stop early (a fault, the consumer gone); keeps it after the end.
    res.close();
  }
}
