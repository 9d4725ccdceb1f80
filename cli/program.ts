// The `astra` command's program: commands are registered here; the entry point is cli/main.ts.
import { Command, CommanderError } from 'commander';
import { AstraError } from '../protocol/index.js';
import { registerDaemonCommands } from './daemon-commands.js';
import { CLI_VERSION, ExitCode, terminalOutput } from './output.js';

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
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });
  registerDaemonCommands(program, out, env, setExit);
  // `astra daemon ...` is what scripts and status bars run often: skip loading the client library.
  if (argv[0] !== 'daemon') {
    const { registerSessionCommands } = await import('./session-commands.js');
    registerSessionCommands(program, out, env, setExit);
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
    out.stderr(`astra: ${message}`);
    return ExitCode.error;
  }
}
