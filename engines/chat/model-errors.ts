// The model request's faults: each a ModelError with a stable code, a message that says what to do
// next and whether sending again may help. Server text quoted in a message is clipped and has the
// API key replaced, since some servers echo it (OpenAI's 401 body does).

/** Characters of an error answer's body read for its detail. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MAX_DETAIL_CHARS = 300;

export const MODEL_ERROR_CODES = [
  'model_unreachable', // connection refused, host down
  'model_dns', // the host name does not resolve
  'model_auth', // 401/403
  'model_not_found', // 404
  'model_rate_limited', // 429 beyond the bound
  'model_server_error', // 5xx
  'model_rejected', // another 4xx (a request the server will not take: tools unsupported, context too long)
  'model_stream_error', // an `error` object in the stream
  'model_bad_response', // malformed JSON, not a stream
  'model_incomplete', // the stream ended without a finish_reason
  'model_stalled', // no byte for longer than the stall bound
  'model_answer_too_large', // more text and tool-call arguments than one answer may have
] as const;
export type ModelErrorCode = (typeof MODEL_ERROR_CODES)[number];

export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export class ModelCancelledError extends Error {
  override readonly name = 'ModelCancelledError';
  constructor() {
    super('the model request was cancelled');
  }
}

/** A 429: the caller waits `waitMs` and sends again, or fails with model_rate_limited. */
export class RetryAfter extends Error {
  constructor(
    readonly waitMs: number,
    readonly detail: string,
  ) {
    super('retry after');
  }
}

/** Replaces the key wherever a server echoed it (OpenAI's 401 body does). */
export function scrubSecret(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

function clip(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > MAX_DETAIL_CHARS ? `${t.slice(0, MAX_DETAIL_CHARS)}…` : t;
}

/** The server's own words from an OpenAI-style error body ({error: {message}} or {error: "..."}). */
export function errorDetail(body: unknown): string {
  if (body && typeof body === 'object') {
    const e = (body as { error?: unknown; message?: unknown; detail?: unknown }).error ?? (body as { message?: unknown }).message ?? (body as { detail?: unknown }).detail;
    if (typeof e === 'string') return clip(e);
    if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return clip((e as { message: string }).message);
  }
  return clip(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The server's words from an error answer's body: up to 64 KiB of it, each read bounded by `arm`. */
export async function readErrorDetail(body: { read(): Promise<string | undefined> }, arm: () => void, disarm: () => void): Promise<string> {
  let text = '';
  try {
    while (text.length < MAX_ERROR_BODY_BYTES) {
      arm();
      const part = await body.read().finally(disarm);
      if (part === undefined) break;
      text += part;
    }
  } catch {
    // A body cut short or stalled: what arrived is the detail.
  }
  if (!text.trim()) return '';
  try {
    return errorDetail(JSON.parse(text));
  } catch {
    return clip(text);
  }
}

export function retryAfterMs(value: string | null): number {
  if (!value) return 1000;
  const secs = Number(value);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : 1000;
}

export function httpError(res: { status: number; header(name: string): string | undefined }, detail: string, req: { baseUrl: string; model: string; apiKey?: string }): Error {
  const s = res.status;
  const d = detail ? `: ${detail}` : '';
  const at = `the model server at ${req.baseUrl}`;
  if (s === 429) return new RetryAfter(retryAfterMs(res.header('retry-after') ?? null), detail);
  if (s >= 300 && s < 400) {
    // Not followed: a POST to a model API that moved is a base URL to correct, and following it
    // would send the key on to wherever it points.
    const to = redirectBase(res.header('location'), req.baseUrl);
    return new ModelError(
      'model_rejected',
      `${at} redirects the request${to ? ` to ${scrubSecret(to, req.apiKey)}` : ''} (HTTP ${s}): set the base URL (ASTRA_CHAT_BASE_URL or --base-url) to ${to ? 'that address' : 'where the API is'}, then send the message again`,
      false,
    );
  }
  if (s === 401 || s === 403)
    return new ModelError(
      'model_auth',
      req.apiKey
        ? `${at} refused the API key (HTTP ${s}${d}): restart the daemon with a valid key: ASTRA_CHAT_API_KEY=<key> astra daemon restart (the daemon takes engine settings only from \`astra daemon start\` or \`restart\`), then send the message again`
        : `${at} wants an API key (HTTP ${s}${d}): restart the daemon with one: ASTRA_CHAT_API_KEY=<key> astra daemon restart (the daemon takes engine settings only from \`astra daemon start\` or \`restart\`), then send the message again`,
      false,
    );
  if (s === 404)
    return new ModelError(
      'model_not_found',
      `${at} has no model "${req.model}" (HTTP 404${d}): check the model name (GET ${req.baseUrl}/models lists them; for Ollama \`ollama pull ${req.model}\`), and that the base URL ends in its API path such as /v1`,
      false,
    );
  if (s >= 500)
    return new ModelError('model_server_error', `${at} failed (HTTP ${s}${d}): send the message again; if it repeats, check the server's log`, true);
  return new ModelError(
    'model_rejected',
    `${at} rejected the request (HTTP ${s}${d}): check that the model supports tool calls (see docs/engines.md for the flags each server needs)`,
    false,
  );
}

/** A failure to connect, or a connection lost mid-answer: Node's error (err.code), as postModel rejects. */
export function connectionError(e: unknown, baseUrl: string, scrub: (t: string) => string): ModelError {
  const err = e as { code?: unknown; message?: unknown; cause?: { code?: unknown }; errors?: { code?: unknown }[] };
  // An AggregateError when every address of a host failed (Node's happy eyeballs): the first says.
  const codes = [err.code, err.cause?.code, Array.isArray(err.errors) ? err.errors[0]?.code : undefined];
  const code = (codes.find((c) => typeof c === 'string') as string | undefined) ?? '';
  const what = scrub(String(err.message ?? e));
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    const host = safeHost(baseUrl);
    return new ModelError('model_dns', `the model server's host ${host} does not resolve (${code}): check the base URL (ASTRA_CHAT_BASE_URL or --base-url) and your network`, code === 'EAI_AGAIN');
  }
  if (code === 'ECONNREFUSED')
    return new ModelError('model_unreachable', `is a model server listening at ${baseUrl}? start \`ollama serve\`, or point the daemon at your server: \`ASTRA_CHAT_BASE_URL=<url> astra daemon restart\` (connection refused)`, true);
  if (code === 'ECONNRESET' || code === 'EPIPE')
    return new ModelError('model_incomplete', `the model server at ${baseUrl} closed the connection mid-answer (${what}): send the message again; if it repeats, check the server's log`, true);
  // http-framing.ts's HttpFramingError (an answer that is not HTTP/1.1 framing).
  if (code.startsWith('HPE_'))
    return new ModelError('model_bad_response', `the model server at ${baseUrl} sent a malformed HTTP answer (${code}: ${what}): check that the base URL is its OpenAI-compatible API`, false);
  return new ModelError('model_unreachable', `could not reach the model server at ${baseUrl} (${code || what}): check that it is running and that the base URL is right`, true);
}

/** Where a redirect points, as a base URL (without /chat/completions), or undefined. */
function redirectBase(location: string | undefined, baseUrl: string): string | undefined {
  if (!location) return undefined;
  try {
    const url = new URL(location, `${baseUrl}/chat/completions`);
    url.search = '';
    url.hash = '';
    url.username = '';
    url.password = '';
    return url.href.replace(/\/chat\/completions\/?$/, '');
  } catch {
    return undefined;
  }
}

function safeHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).hostname;
  } catch {
    return baseUrl;
  }
}
