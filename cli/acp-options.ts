// `astra new --engine acp --agent "opencode acp" [--agent-env K=V]…`: the agent's command line split
// as a POSIX shell splits words (quotes and backslashes honoured; nothing is expanded and no shell
// runs), turned into session/create's engineOptions {command, args, env} (docs/engines.md, "acp").
import path from 'node:path';
import type { Command } from 'commander';
import type { Session } from '../protocol/index.js';
import { cleanText, fail } from './output.js';
import { fitWidth } from './view/width.js';

/** Adds `--agent` and `--agent-env` to `astra new`. */
export function addAcpOptions(cmd: Command): Command {
  return cmd
    .option('--agent <command line>', 'acp: the agent to run, split as a shell would (quotes honoured, no shell), e.g. "opencode acp" or "npx @zed-industries/codex-acp"; implies --engine acp')
    .option('--agent-env <name=value>', 'acp: a variable set for the agent (repeatable; journaled with the session: no secrets)', (v: string, all: string[] = []) => [...all, v]);
}

/**
 * Words of a command line as `sh` splits them: blanks separate words; '…' keeps everything literally;
 * "…" keeps everything but \" \\ \$ \` (backslash-escaped); a backslash outside quotes keeps the next
 * character. Throws (a typed usage error via `fail`) on an unbalanced quote or a trailing backslash.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) fail(`--agent has an unbalanced ' quote: ${line}`);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= line.length) fail(`--agent has an unbalanced " quote: ${line}`);
        const d = line[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
      inWord = true;
      i++;
    } else if (c === '\\') {
      if (i + 1 >= line.length) fail(`--agent ends with a lone backslash: ${line}`);
      if (line[i + 1] !== '\n') word += line[i + 1];
      inWord = true;
      i += 2;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** session/create's engineOptions for the acp engine from `--agent` and `--agent-env`. */
export function acpEngineOptions(agent: string | undefined, agentEnv: string[] | undefined): { command: string; args: string[]; env: Record<string, string> } {
  if (agent === undefined) fail('the acp engine needs the agent to run: --agent "opencode acp" (or another ACP agent\'s command line)');
  const words = splitCommandLine(agent);
  if (words.length === 0 || words[0] === '') fail('--agent is empty: give the agent\'s command line, e.g. --agent "opencode acp"');
  const env: Record<string, string> = {};
  for (const kv of agentEnv ?? []) {
    const eq = kv.indexOf('=');
    const name = eq < 0 ? kv : kv.slice(0, eq);
    if (eq < 0 || !ENV_NAME.test(name)) fail(`--agent-env takes NAME=value, NAME letters, digits and _ not starting with a digit (got ${kv})`);
    env[name] = kv.slice(eq + 1);
  }
  return { command: words[0]!, args: words.slice(1), env };
}

/** The engine column of `astra sessions`: "chat llama3.1", "acp opencode" (the agent's program's name), else the engine. */
export function engineText(s: Session): string {
  const o = s.engineOptions as { model?: unknown; command?: unknown } | undefined;
  if (typeof o?.model === 'string') return `${s.engine} ${fitWidth(cleanText(o.model), 24)}`;
  if (s.engine === 'acp' && typeof o?.command === 'string') return `acp ${fitWidth(cleanText(path.basename(o.command)), 24)}`;
  return s.engine;
}
