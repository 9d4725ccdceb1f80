// A tool command of the chat engine: run exactly as a shell turn's command (engines/shell-engine.ts),
// in the turn's stream, with the API key left out of its environment and only head and tail of its
// output kept in memory.
import type { EngineContext } from '../../runtime/engine.js';
import { runShellCommand } from '../shell-engine.js';
import type { ToolCommandOutcome } from './context.js';
import { chatCommandEnv } from './options.js';
import { OutputCapture } from './tool-output.js';

export async function runToolCommand(ctx: EngineContext, req: { command: string; cwd: string; captureBytes: number }): Promise<ToolCommandOutcome> {
  const capture = new OutputCapture(req.captureBytes);
  const r = await runShellCommand(ctx, { command: req.command, cwd: req.cwd, env: chatCommandEnv(), noInput: true, onOutput: (c) => capture.push(c) });
  const out: ToolCommandOutcome = { outcome: r.outcome, exitCode: r.exitCode, signal: r.signal, output: capture.result() };
  if (r.error !== undefined) out.error = r.error;
  return out;
}
