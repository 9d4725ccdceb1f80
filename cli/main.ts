#!/usr/bin/env node
// The `astra` command's entry point. It stays tiny so that short commands start fast: msgpackr's
// native decoder (a few ms to load) is not worth it for a handful of small frames (but for `astra web`), and the program
// itself is loaded only after that is settled (these two imports load nothing of msgpackr's).
import { fileURLToPath } from 'node:url';
import { loadWithCodeCache, type CachedModule } from './code-cache.js';

// `astra web` is a long-running server decoding every event of every stream: its native decoder
// (strings decoded in bulk) is worth its load time, as the daemon's is.
const longRunning = process.argv[2] === 'web' && process.argv[3] !== 'pair';
if (process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED === undefined && !longRunning) {
  process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED = 'true';
  // A daemon started from here should not inherit the CLI's choice (client/connect.ts drops it).
  process.env.ASTRA_CLI_NATIVE_OFF = '1';
}

// `astra daemon status | head` closes our stdout early, a closed window hangs up our terminal
// (EIO): neither is an error. A command that watches the stream itself (attach: it must release
// control first) has its own handler and is left to it.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' || e.code === 'EIO') {
      if (stream.listenerCount('error') > 1) return;
      process.exit(process.exitCode ?? 0);
    }
    throw e;
  });
}

type Program = typeof import('./program.js');
const argv = process.argv.slice(2);

/**
 * `astra daemon ...` (what scripts and status bars run often): the program without the session and
 * web commands, one CommonJS file run with V8's code cache (cli/code-cache.ts). Undefined when the
 * build made no such bundle.
 */
function daemonCommands(): CachedModule | undefined {
  if (argv[0] !== 'daemon') return undefined;
  try {
    return loadWithCodeCache(fileURLToPath(new URL('../cli-bundle/daemon-commands.cjs', import.meta.url)));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

// Else the bundled program (scripts/bundle.mjs) when the build made one, else the plain modules.
async function program(): Promise<Program> {
  const bundled = new URL('../cli-bundle/program.js', import.meta.url);
  return (await import(bundled.href).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    return import('./program.js');
  })) as Program;
}

const cached = daemonCommands();
const { main } = cached ? (cached.exports as unknown as Program) : await program();
main(argv).then(
  (code) => {
    cached?.saveCache();
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`astra: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);

export {};
