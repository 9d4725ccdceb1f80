#!/usr/bin/env node
// The `astra` command.
import { Command, CommanderError } from 'commander';
import { AstraError } from '../protocol/index.js';
import { registerDaemonCommands } from './daemon-commands.js';
import { registerSessionCommands } from './session-commands.js';
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
  registerSessionCommands(program, out, env, setExit);
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

// `astra daemon status | head` closes our stdout early: that is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`astra: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
