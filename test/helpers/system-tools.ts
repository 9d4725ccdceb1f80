// Tests that drive a system tool (tmux, Debian's python3-msgpack, chromium) skip when it is
// missing on a developer's machine, with one line naming the package to install — except under
// CI=true, where every tool must be there (.ci/run installs them) and a missing one fails the run.
import { spawnSync } from 'node:child_process';

export interface SystemTool {
  /** What the tests need, as a user would name it. */
  name: string;
  /** The Debian package that brings it. */
  pkg: string;
  /** True when the tool can be used. */
  probe(): boolean;
}

function runs(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
  return r.status === 0;
}

export const TMUX: SystemTool = { name: 'tmux', pkg: 'tmux', probe: () => runs('tmux', ['-V']) };

/** Debian's python3-msgpack lives in /usr/bin/python3; a python3 on PATH with msgpack also does. */
export function pythonWithMsgpack(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3']) if (runs(candidate, ['-c', 'import msgpack'])) return candidate;
  return undefined;
}

export const PYTHON_MSGPACK: SystemTool = { name: 'python3 with msgpack', pkg: 'python3-msgpack', probe: () => pythonWithMsgpack() !== undefined };

/** Debian's chromium, driven by playwright-core (its own browser download cannot be reached here). */
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM: SystemTool = { name: 'chromium', pkg: 'chromium', probe: () => runs(CHROMIUM_PATH, ['--version']) };

/** vim, or Debian's vim-tiny (vim.tiny) where only that is installed. */
export function vimCommand(): string | undefined {
  for (const candidate of ['vim', 'vim.basic', 'vim.tiny']) if (runs(candidate, ['--version'])) return candidate;
  return undefined;
}

export const VIM: SystemTool = { name: 'vim', pkg: 'vim-tiny', probe: () => vimCommand() !== undefined };

/** top, from Debian's procps (not in every minimal image). */
export const TOP: SystemTool = { name: 'top', pkg: 'procps', probe: () => runs('top', ['-V']) };

const checked = new Map<SystemTool, boolean>();

/**
 * Whether the tests needing `tool` must be skipped here. Prints the one line saying so (once per
 * tool and file). Under CI=true it never skips: the tests then run and fail without the tool.
 */
export function skipWithout(tool: SystemTool): boolean {
  let ok = checked.get(tool);
  if (ok === undefined) checked.set(tool, (ok = tool.probe()));
  if (ok || process.env.CI === 'true') return false;
  process.stderr.write(`skipped: tests that need ${tool.name} (install the Debian package ${tool.pkg}: apt-get install ${tool.pkg})\n`);
  return true;
}
