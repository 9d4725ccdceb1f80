// The `astra` command's program: commands are registered here; the entry point is cli/main.ts.
import { Command, CommanderError, Help, type Option } from 'commander';
import { AstraError } from '../protocol/index.js';
import { registerDaemonCommands } from './daemon-commands.js';
import { CLI_VERSION, ExitCode, formatDuration, terminalOutput, wrapText } from './output.js';

const TOP_HELP = `
Sessions are named by id, by a unique prefix of the id (\`ses_\` may be left out) or by a unique title.

Environment:
  ASTRA_HOME   keep every Astra file (socket, journals, logs) under this one directory; unset: the per-user runtime, data and log directories (docs/operations.md lists them and the other variables)
  NO_COLOR     no colours

Exit codes:
  0  done
  1  failed: the message (starting "astra:") says why and what to do
  2  usage error: a bad command, option or value
  3  \`astra daemon status\`: no daemon is running
  \`astra send --wait\` exits with the command's own exit code, or 130 when the turn was cancelled.`;

/**
 * Help shows defaults the way they are typed: a `<duration>` option's milliseconds as "5s", not
 * "5000"; other numbers unquoted ("50", not "\"50\"").
 */
function optionDescription(this: Help, option: Option): string {
  const d = option.defaultValue as unknown;
  const numeric = typeof d === 'number' || (typeof d === 'string' && /^\d+$/.test(d));
  if (numeric && option.defaultValueDescription === undefined) {
    const text = /<duration>/.test(option.flags) ? formatDuration(Number(d)) : String(d);
    const shown = Object.assign(Object.create(Object.getPrototypeOf(option) as object) as Option, option, { defaultValueDescription: text });
    return Help.prototype.optionDescription.call(this, shown);
  }
  return Help.prototype.optionDescription.call(this, option);
}

/** One message style: "astra: " and a lower-case start (the daemon's messages begin with a capital). */
export function errorLine(message: string): string {
  const m = message.replace(/^astra: /, '');
  return `astra: ${/^[A-Z][a-z]/.test(m) ? m[0]!.toLowerCase() + m.slice(1) : m}`;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const out = terminalOutput(env);
  let exitCode: number = ExitCode.ok;
  const setExit = (code: number): void => {
    exitCode = code;
  };
  const program = new Command('astra')
    .description('Astra: one local daemon that hosts your agent sessions; terminals attach to watch or control them')
    .version(CLI_VERSION)
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ optionDescription, helpWidth: Math.min(100, process.stdout.columns || 80) })
    .addHelpText('after', () => wrapText(TOP_HELP))
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });
  registerDaemonCommands(program, out, env, setExit);
  // `astra daemon ...` is what scripts and status bars run often: skip loading the client library.
  if (argv[0] !== 'daemon') {
    const { registerSessionCommands } = await import('./session-commands.js');
    registerSessionCommands(program, out, env, setExit);
    (await import('./log-command.js')).registerLogCommand(program, out, env);
  }
  if (argv[0] !== 'daemon') (await import('./web-command.js')).registerWebCommands(program, env, setExit);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const message = e instanceof AstraError ? e.message : e instanceof Error ? e.message : String(e);
    out.stderr(errorLine(message));
    return ExitCode.error;
  }
}
