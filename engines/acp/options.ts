// The acp engine's options: session/create's `engineOptions` ({command, args?, env?}, the shape ACP
// clients configure agent servers with), checked at the edge so a malformed one is invalid_params
// naming the field; and the engine-wide bounds (every wait of the engine has one).
import fs from 'node:fs';
import path from 'node:path';
import { AstraError } from '../../protocol/index.js';

/** What is kept with the session (journaled in its settings record: `env` must hold no secret). */
export interface AcpSessionOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The agent's own session id, learned at session/create (prepare); absent until then. */
  acpSessionId?: string;
}

/** Engine-wide bounds and knobs (tests shorten them). */
export interface AcpEngineConfig {
  /** The agent's answer to `initialize`, `session/new` and `session/load` (default 60 s: opencode takes ~10 s cold). */
  startTimeoutMs: number;
  /** After `session/cancel`, how long the agent has to end its prompt before the turn is ended anyway (default 10 s). */
  cancelGraceMs: number;
  /** An agent without a turn this long is stopped (default 30 min): one started at create that no turn took, or one between turns (the next turn starts it again). */
  idleAgentMs: number;
  /** Characters of one message, thought or tool text, and of each side of a diff (default 1 Mi); past it, cut with a marker. */
  maxTextChars: number;
  /** Characters of an update kept opaque (its JSON; default 256 Ki); past it, kept as a cut JSON text. */
  maxOpaqueChars: number;
  /** The last lines of the agent's stderr quoted in an error (default 20). */
  stderrLines: number;
  /** The largest message read from the agent (default 128 MiB: a 50 MB diff arrives, then is cut); a larger one ends the connection. */
  maxMessageBytes: number;
}

export const ACP_CONFIG_DEFAULTS: AcpEngineConfig = {
  startTimeoutMs: 60_000,
  cancelGraceMs: 10_000,
  idleAgentMs: 30 * 60_000,
  maxTextChars: 1024 * 1024,
  maxOpaqueChars: 256 * 1024,
  stderrLines: 20,
  maxMessageBytes: 128 * 1024 * 1024,
};

const ALLOWED = new Set(['command', 'args', 'env']);
const MAX_ARG_CHARS = 64 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function invalid(field: string, message: string): AstraError {
  return new AstraError('invalid_params', `engineOptions.${field} ${message}`, { field: `engineOptions.${field}` });
}

/** Checks session/create's engineOptions for `acp`; throws invalid_params naming the field. */
export function parseAcpOptions(raw: Record<string, unknown> | undefined): AcpSessionOptions {
  if (raw === undefined) throw invalid('command', 'is required: the agent to run, e.g. {command: "opencode", args: ["acp"]}.');
  for (const k of Object.keys(raw)) if (!ALLOWED.has(k)) throw invalid(k, `is not an option of the acp engine (it takes command, args, env).`);
  const { command, args, env } = raw;
  if (typeof command !== 'string' || command.trim() === '' || command.length > 4096 || command.includes('\0'))
    throw invalid('command', 'must be a non-empty string (a program name on PATH or a path), at most 4096 characters.');
  const out: AcpSessionOptions = { command, args: [], env: {} };
  if (args !== undefined) {
    if (!Array.isArray(args) || args.length > 1000) throw invalid('args', 'must be an array of at most 1000 strings.');
    args.forEach((a, i) => {
      if (typeof a !== 'string' || a.length > MAX_ARG_CHARS || a.includes('\0')) throw invalid(`args[${i}]`, `must be a string of at most ${MAX_ARG_CHARS} characters.`);
    });
    out.args = [...(args as string[])];
  }
  if (env !== undefined) {
    if (env === null || typeof env !== 'object' || Array.isArray(env)) throw invalid('env', 'must be a map of variable names to strings.');
    for (const [k, v] of Object.entries(env as Record<string, unknown>)) {
      if (!ENV_NAME.test(k)) throw invalid(`env.${k}`, 'is not a variable name (letters, digits and _, not starting with a digit).');
      if (typeof v !== 'string' || v.includes('\0')) throw invalid(`env.${k}`, 'must be a string.');
      out.env[k] = v;
    }
  }
  return out;
}

/** The options as stored (after prepare): parseAcpOptions' shape plus the agent's session id. */
export function storedAcpOptions(o: object | undefined): AcpSessionOptions {
  const s = o as Partial<AcpSessionOptions> | undefined;
  if (!s || typeof s.command !== 'string') throw new AstraError('invalid_state', 'This acp session has no agent command in its settings.');
  const out: AcpSessionOptions = { command: s.command, args: Array.isArray(s.args) ? s.args : [], env: s.env ?? {} };
  if (typeof s.acpSessionId === 'string') out.acpSessionId = s.acpSessionId;
  return out;
}

/** `command args…` as a person would type it (for errors and events). */
export function agentLabel(o: { command: string; args: string[] }): string {
  return [o.command, ...o.args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

/** Whether `command` names a program that can be run from `cwd` with `envPath` (PATH's search, done here to fail fast). */
export function findProgram(command: string, cwd: string, envPath: string | undefined): string | undefined {
  const canRun = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) {
    const p = path.resolve(cwd, command);
    return canRun(p) ? p : undefined;
  }
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, command);
    if (canRun(p)) return p;
  }
  return undefined;
}

/** The engine's bounds from the daemon's environment: ASTRA_ACP_START_TIMEOUT_MS, ASTRA_ACP_CANCEL_GRACE_MS (integers > 0; else the defaults). */
export function acpEngineConfig(env: Record<string, string | undefined> = process.env): AcpEngineConfig {
  const ms = (v: string | undefined, d: number) => {
    const n = Number(v);
    return Number.isSafeInteger(n) && n > 0 ? n : d;
  };
  return { ...ACP_CONFIG_DEFAULTS, startTimeoutMs: ms(env.ASTRA_ACP_START_TIMEOUT_MS, ACP_CONFIG_DEFAULTS.startTimeoutMs), cancelGraceMs: ms(env.ASTRA_ACP_CANCEL_GRACE_MS, ACP_CONFIG_DEFAULTS.cancelGraceMs) };
}
