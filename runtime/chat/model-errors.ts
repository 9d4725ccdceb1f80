// The model request's faults: each a ModelError with a stable code, a message that says what to do
// next and whether sending again may help. Server text quoted in a message is clipped and has the
// API key replaced, since some servers echo it (OpenAI's 401 body does).

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

export async function readErrorDetail(reader: ReadableStreamDefaultReader<Uint8Array> | undefined, arm: () => void, disarm: () => void): Promise<string> {
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < MAX_ERROR_BODY_BYTES) {
      arm();
      const r = await reader.read().finally(disarm);
      if (r.done) break;
      parts.push(r.value);
      bytes += r.value.length;
    }
  } catch {
    // A body cut short or stalled: what arrived is the detail.
  }
  const text = Buffer.concat(parts).toString('utf8');
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

export function httpError(res: Response, detail: string, req: { baseUrl: string; model: string; apiKey?: string }): Error {
  const s = res.status;
  const d = detail ? `: ${detail}` : '';
  const at = `the model server at ${req.baseUrl}`;
  if (s === 429) return new RetryAfter(retryAfterMs(res.headers.get('retry-after')), detail);
  if (s === 401 || s === 403)
    return new ModelError(
      'model_auth',
      req.apiKey
        ? `${at} refused the API key (HTTP ${s}${d}): set a valid key in ASTRA_CHAT_API_KEY (or OPENAI_API_KEY) in the daemon's environment and restart the daemon`
        : `${at} wants an API key (HTTP ${s}${d}): set ASTRA_CHAT_API_KEY (or OPENAI_API_KEY) in the daemon's environment and restart the daemon`,
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

export function connectionError(e: unknown, baseUrl: string, scrub: (t: string) => string): ModelError {
  const cause = (e as { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : '';
  const what = scrub(String(cause?.message ?? (e as Error).message ?? e));
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    const host = safeHost(baseUrl);
    return new ModelError('model_dns', `the model server's host ${host} does not resolve (${code}): check the base URL (ASTRA_CHAT_BASE_URL or --base-url) and your network`, code === 'EAI_AGAIN');
  }
  // Refused by fetch itself before connecting (normalizeBaseUrl refuses these ports at create time).
  if (what === 'bad port')
    return new ModelError('model_unreachable', `fetch refuses to connect to the port of ${baseUrl} (a port the Fetch standard blocks): run the model server on another port, such as 11434`, false);
  if (code === 'ECONNREFUSED')
    return new ModelError('model_unreachable', `is a model server listening at ${baseUrl}? start \`ollama serve\` or set ASTRA_CHAT_BASE_URL (connection refused)`, true);
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || what === 'terminated')
    return new ModelError('model_incomplete', `the model server at ${baseUrl} closed the connection mid-answer (${what}): send the message again; if it repeats, check the server's log`, true);
  return new ModelError('model_unreachable', `could not reach the model server at ${baseUrl} (${code || what}): check that it is running and that the base URL is right`, true);
}

function safeHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).hostname;
  } catch {
    return baseUrl;
  }
}
