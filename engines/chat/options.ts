// The chat engine's options: what session/create's `engineOptions` may say, checked at the edge so a
// malformed URL or a missing model is an invalid_params at create time, not a failed turn later; and
// the daemon-wide settings (the key and the bounds) read from the daemon's environment.
import { AstraError } from '../../protocol/index.js';
import { proxyFromEnv, type ProxySettings } from './model-proxy.js';

export const CHAT_DEFAULT_BASE_URL = 'http://127.0.0.1:11434/v1';
export const CHAT_DEFAULT_MAX_STEPS = 25;
export const CHAT_MAX_STEPS_LIMIT = 1000;
export const CHAT_MAX_SYSTEM_PROMPT_CHARS = 64 * 1024;
export const CHAT_MAX_MODEL_CHARS = 256;

/** A session's options after validation: what the lead stores with the session (no secret in it). */
export interface ChatSessionOptions {
  model: string;
  /** Without a trailing slash, e.g. http://127.0.0.1:11434/v1 */
  baseUrl: string;
  maxSteps: number;
  systemPrompt?: string;
}

/** Daemon-wide settings, shared by every chat session. */
export interface ChatEngineConfig {
  /** Sent only as `Authorization: Bearer …`; never in an event, an error or a log line. */
  apiKey?: string;
  /** Fail a model request after this long without a byte from the server (default 120 s). */
  stallMs: number;
  /** Wait out a 429's Retry-After when it is at most this long (default 30 s); fail otherwise. */
  maxRetryAfterMs: number;
  /** Model requests per step counting 429 retries (default 3). */
  maxAttempts: number;
  /** What a tool result may send the model of a command's output (default 16 KiB, head and tail). */
  toolOutputCapBytes: number;
  /** Characters of text and tool-call arguments in one answer (default 1 Mi). */
  maxAnswerChars: number;
  /**
   * After a message.delta, the next waits this long, text arriving meanwhile joining it (default
   * 20 ms: 50 a second is more than a reader sees, and each is a wake-up for every subscriber;
   * against 10 ms, 16 observers of a fast answer got 2–3 % more tokens/s: bench/REPORT.md).
   */
  deltaIntervalMs: number;
  /** HTTPS_PROXY, HTTP_PROXY, NO_PROXY (or lowercase) of the daemon's environment; absent: none set. */
  proxy?: ProxySettings;
  /** The clock deltaIntervalMs is measured by, ms (default performance.now; tests drive it). */
  now?: () => number;
}

export const CHAT_CONFIG_DEFAULTS: ChatEngineConfig = {
  stallMs: 120_000,
  maxRetryAfterMs: 30_000,
  maxAttempts: 3,
  toolOutputCapBytes: 16 * 1024,
  maxAnswerChars: 1024 * 1024,
  deltaIntervalMs: 20,
};

type Env = Record<string, string | undefined>;

/** The key from ASTRA_CHAT_API_KEY, else OPENAI_API_KEY; none is fine for local servers. */
export function chatApiKeyFromEnv(env: Env = process.env): string | undefined {
  const key = env.ASTRA_CHAT_API_KEY || env.OPENAI_API_KEY;
  return key ? key : undefined;
}

/** The daemon-wide config: the key from the environment, the rest from defaults and `overrides`. */
export function chatEngineConfig(env: Env = process.env, overrides: Partial<ChatEngineConfig> = {}): ChatEngineConfig {
  const apiKey = chatApiKeyFromEnv(env);
  // ASTRA_CHAT_STALL_MS: an integer > 0, else the default.
  const stallMs = Number(env.ASTRA_CHAT_STALL_MS);
  const proxy = proxyFromEnv(env);
  return {
    ...CHAT_CONFIG_DEFAULTS,
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(proxy ? { proxy } : {}),
    ...(Number.isInteger(stallMs) && stallMs > 0 ? { stallMs } : {}),
    ...overrides,
  };
}

/** The variables that may hold the key: never passed on to a command the model runs. */
export const CHAT_KEY_VARIABLES = ['ASTRA_CHAT_API_KEY', 'OPENAI_API_KEY'] as const;

/**
 * The environment for a tool command: the daemon's without the key, so a model that runs `env`
 * cannot read it (and the output, journaled and sent to the model, cannot hold it).
 */
export function chatCommandEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of CHAT_KEY_VARIABLES) delete out[k];
  return out;
}

const KNOWN_KEYS = new Set(['model', 'baseUrl', 'maxSteps', 'systemPrompt']);

function invalid(message: string, field: string): AstraError {
  return new AstraError('invalid_params', message, { field });
}

/**
 * Validates session/create's `engineOptions` for engine 'chat' and fills in the defaults from the
 * daemon's environment (ASTRA_CHAT_BASE_URL, ASTRA_CHAT_MODEL). Throws AstraError('invalid_params').
 */
export function parseChatOptions(raw: unknown, env: Env = process.env): ChatSessionOptions {
  if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw)))
    throw invalid('engineOptions must be a map such as {model: "llama3.1"}', 'engineOptions');
  const o = (raw ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!KNOWN_KEYS.has(k))
      throw invalid(`engineOptions.${k} is not an option of the chat engine (it takes model, baseUrl, maxSteps, systemPrompt)`, `engineOptions.${k}`);

  let model: string;
  if (o.model !== undefined) {
    if (typeof o.model !== 'string' || o.model.trim() === '' || o.model.length > CHAT_MAX_MODEL_CHARS)
      throw invalid(`engineOptions.model must be a model name of 1 to ${CHAT_MAX_MODEL_CHARS} characters, such as "llama3.1"`, 'engineOptions.model');
    model = o.model;
  } else if (env.ASTRA_CHAT_MODEL && env.ASTRA_CHAT_MODEL.trim() !== '') {
    model = env.ASTRA_CHAT_MODEL.slice(0, CHAT_MAX_MODEL_CHARS);
  } else {
    throw invalid('the chat engine needs a model: pass --model NAME (engineOptions.model), or set ASTRA_CHAT_MODEL in the daemon\'s environment', 'engineOptions.model');
  }

  let baseUrl: string;
  if (o.baseUrl !== undefined) {
    if (typeof o.baseUrl !== 'string') throw invalid('engineOptions.baseUrl must be a URL string such as http://127.0.0.1:11434/v1', 'engineOptions.baseUrl');
    baseUrl = normalizeBaseUrl(o.baseUrl, 'engineOptions.baseUrl');
  } else if (env.ASTRA_CHAT_BASE_URL) {
    baseUrl = normalizeBaseUrl(env.ASTRA_CHAT_BASE_URL, 'ASTRA_CHAT_BASE_URL');
  } else baseUrl = CHAT_DEFAULT_BASE_URL;

  let maxSteps = CHAT_DEFAULT_MAX_STEPS;
  if (o.maxSteps !== undefined) {
    if (typeof o.maxSteps !== 'number' || !Number.isInteger(o.maxSteps) || o.maxSteps < 1 || o.maxSteps > CHAT_MAX_STEPS_LIMIT)
      throw invalid(`engineOptions.maxSteps must be an integer from 1 to ${CHAT_MAX_STEPS_LIMIT} (model requests per turn)`, 'engineOptions.maxSteps');
    maxSteps = o.maxSteps;
  }

  const out: ChatSessionOptions = { model, baseUrl, maxSteps };
  if (o.systemPrompt !== undefined) {
    if (typeof o.systemPrompt !== 'string' || o.systemPrompt.length > CHAT_MAX_SYSTEM_PROMPT_CHARS)
      throw invalid(`engineOptions.systemPrompt must be a string of at most ${CHAT_MAX_SYSTEM_PROMPT_CHARS} characters`, 'engineOptions.systemPrompt');
    out.systemPrompt = o.systemPrompt;
  }
  return out;
}

/**
 * An http(s) URL without credentials, query or fragment, returned without its trailing slash. A key
 * in the URL would be journaled with the session: it belongs in ASTRA_CHAT_API_KEY.
 */
export function normalizeBaseUrl(value: string, field: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${field} is not a URL: give one such as http://127.0.0.1:11434/v1`, field);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`${field} must be an http:// or https:// URL (got ${url.protocol}//…), such as http://127.0.0.1:11434/v1`, field);
  if (url.username || url.password)
    throw invalid(`${field} must not carry credentials: put the key in ASTRA_CHAT_API_KEY in the daemon's environment`, field);
  if (url.search || url.hash) throw invalid(`${field} must not have a query or fragment; give the API's base, such as http://127.0.0.1:11434/v1`, field);
  return url.href.replace(/\/+$/, '');
}
