// What is secret stays secret (docs/secrets.md): the display text of a command, a tool call, an
// approval, a turn's input and a session's title with the values of secret-looking variables and
// strings shaped like common API keys masked, and the sha-256 digest of what the engine really
// gave. SessionHost applies maskEvent to every event as it is appended, before the journal, the
// state or any subscriber sees it; the engine keeps the real values. A leaf: it imports only types.
import { createHash } from 'node:crypto';
import type { EventData, EventType } from '../protocol/index.js';

/** What a masked value becomes. */
export const MASK = '***';

/** A value: double-quoted (JSON escapes), single-quoted, double-quoted inside a JSON string, or a bare word. */
const VALUE = String.raw`"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\\"(?:[^"\\]|\\[^"])*\\"|[^\s"'\x60;&|<>(){}\[\],\\]+`;

/** NAME=value, NAME: value, "name": "value", --name=value. */
const ASSIGNMENT = new RegExp(String.raw`(?<![A-Za-z0-9_.-])(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(\\?["']?[ \t]*[=:][ \t]*)(${VALUE})`, 'g');
/** --name value (a command-line flag and its next word). */
const FLAG = new RegExp(String.raw`(?<![A-Za-z0-9_-])(--?[A-Za-z][A-Za-z0-9_.-]*)([ \t]+)(${VALUE})`, 'g');
/** An Authorization header's credentials, with or without its scheme. */
const AUTHORIZATION = /\b(authorization["']?\s*[:=]\s*["']?\s*)((?:bearer|basic|token|bot|digest)\s+)?([^\s"'\\,;]+)/gi;
const BEARER = /\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})/gi;
/** scheme://user:password@host */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/'"]+:)([^\s@/'"]+)(@)/gi;
const PRIVATE_KEY = /(-----BEGIN ([A-Z ]*)PRIVATE KEY-----)[\s\S]*?(-----END \2PRIVATE KEY-----)/g;
/** Strings shaped like common API keys, masked wherever they stand. */
const KEY_SHAPES = new RegExp(
  [
    String.raw`\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}`, // OpenAI, Anthropic, Stripe
    String.raw`\b(?:rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}`, // Stripe
    String.raw`\bgh[pousr]_[A-Za-z0-9]{20,}`, // GitHub
    String.raw`\bgithub_pat_[A-Za-z0-9_]{20,}`,
    String.raw`\bglpat-[A-Za-z0-9_-]{20,}`, // GitLab
    String.raw`\bxox[abposr]-[A-Za-z0-9-]{10,}`, // Slack
    String.raw`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`, // AWS access key id
    String.raw`\bAIza[0-9A-Za-z_-]{35}`, // Google
    String.raw`\bhf_[A-Za-z0-9]{30,}`, // Hugging Face
    String.raw`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`, // a JWT
  ].join('|'),
  'g',
);

/** Whether a variable, field or flag name says its value is secret. */
export function secretName(raw: string): boolean {
  const name = raw.replace(/^-+/, '');
  if (/password|passwd|passphrase|secret|token|credential|api[_-]?key|private[_-]?key|access[_-]?key/i.test(name)) return true;
  if (/^pwd$/i.test(name)) return false; // the working directory
  if (/(?:^|[_.-])(?:key|pass|pwd|pat)(?:$|[_.-])/i.test(name)) return true;
  return /[a-z0-9](?:Key|Pass)$/.test(name);
}

function maskValue(value: string): string {
  if (value.startsWith('$') || value === MASK) return value; // a reference to another variable, or masked already
  if (value.startsWith('\\"')) return `\\"${MASK}\\"`;
  const q = value[0];
  if ((q === '"' || q === "'") && value.length >= 2 && value.endsWith(q)) return `${q}${MASK}${q}`;
  return MASK;
}

/**
 * The values after secret names masked. A match whose name is not secret is given up just past its
 * name, so that its value is searched too (`"command": "A_TOKEN=x"`, `echo --x A_TOKEN=x`).
 */
function maskNamed(re: RegExp, text: string): string {
  let out = '';
  let from = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const [whole, name, sep, value] = m as unknown as [string, string, string, string];
    if (secretName(name) && !(re === FLAG && value.startsWith('-'))) {
      out += text.slice(from, m.index) + name + sep + maskValue(value);
      from = m.index + whole.length;
    } else re.lastIndex = m.index + name.length;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** The text with every secret the rule recognises replaced by MASK (docs/secrets.md). */
export function maskSecrets(text: string): string {
  if (text.length === 0) return text;
  let t = text
    .replace(PRIVATE_KEY, (_m, begin: string, _kind: string, end: string) => `${begin}${MASK}${end}`)
    .replace(URL_PASSWORD, (_m, head: string, _pw: string, at: string) => `${head}${MASK}${at}`)
    .replace(AUTHORIZATION, (_m, head: string, scheme: string | undefined) => `${head}${scheme ?? ''}${MASK}`)
    .replace(BEARER, (_m, head: string) => `${head}${MASK}`);
  t = maskNamed(FLAG, maskNamed(ASSIGNMENT, t));
  return t.replace(KEY_SHAPES, MASK);
}

/** JSON with object keys sorted (by UTF-16 code units), no whitespace, undefined members left out. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

/** sha-256 of the canonical JSON of `value` (UTF-8), as 64 lowercase hex digits. */
export function digestOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

/** A tool call's arguments as a value: the JSON they hold, or the string itself when they are not JSON. */
function argumentsValue(args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}

/**
 * The event data as it is journaled and sent: the fields that show a command, a tool's arguments,
 * an approval, a turn's input or a title masked, with `argsDigest` / `paramsDigest` of the real
 * values. Other types are returned as they are (the same object).
 */
export function maskEvent<T extends EventType>(type: T, data: EventData<T>): EventData<T> {
  switch (type) {
    case 'command.started': {
      const d = data as EventData<'command.started'>;
      return { ...d, command: maskSecrets(d.command), argsDigest: digestOf({ command: d.command, cwd: d.cwd }) } as EventData<T>;
    }
    case 'tool.call': {
      const d = data as EventData<'tool.call'>;
      return { ...d, arguments: maskSecrets(d.arguments), argsDigest: digestOf(argumentsValue(d.arguments)) } as EventData<T>;
    }
    case 'approval.requested': {
      const d = data as EventData<'approval.requested'>;
      const out: EventData<'approval.requested'> = { ...d, command: maskSecrets(d.command), paramsDigest: digestOf({ command: d.command, cwd: d.cwd, reason: d.reason }) };
      if (d.reason !== undefined && d.reason !== null) out.reason = maskSecrets(d.reason);
      return out as EventData<T>;
    }
    case 'turn.started': {
      const d = data as EventData<'turn.started'>;
      return { ...d, input: { ...d.input, text: maskSecrets(d.input.text) } } as EventData<T>;
    }
    case 'message.user': {
      const d = data as EventData<'message.user'>;
      return { ...d, text: maskSecrets(d.text) } as EventData<T>;
    }
    case 'session.created':
    case 'session.updated': {
      const d = data as { title?: string | null };
      return (typeof d.title === 'string' ? { ...d, title: maskSecrets(d.title) } : data) as EventData<T>;
    }
    default:
      return data;
  }
}
