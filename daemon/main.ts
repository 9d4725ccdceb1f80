#!/usr/bin/env node
// The daemon's entry point: `node dist/daemon/main.js [--idle-timeout <ms|10m>]` (clients start the
// bundled copy, dist/daemon-bundle/main.js, when the build made one). Normally spawned detached by a
// client or by `astra daemon start`, with stdout and stderr going to the log file; with --foreground
// (`astra daemon start --foreground`) every log line is also printed on stderr, readable.
import fs from 'node:fs';
import { AstraError } from '../protocol/index.js';
import { formatLogLine, resolvePaths } from '../discovery/index.js';
import { createDaemon } from './daemon.js';
import { createLogger, logLevelFrom } from './logger.js';
import { parseDuration } from '../protocol/index.js';

interface DaemonArgs {
  idleTimeoutMs?: number;
  foreground?: boolean;
}

function parseArgs(argv: string[]): DaemonArgs {
  const out: DaemonArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--idle-timeout') out.idleTimeoutMs = parseDuration(argv[++i] ?? '', '--idle-timeout');
    else if (arg.startsWith('--idle-timeout=')) out.idleTimeoutMs = parseDuration(arg.slice('--idle-timeout='.length), '--idle-timeout');
    else if (arg === '--foreground') out.foreground = true;
    else throw new AstraError('invalid_params', `unknown daemon option "${arg}"; see astra daemon start --help`);
  }
  return out;
}

/** Tells the process that spawned us (client/connect.ts) that we answer now: one line on ASTRA_READY_FD. */
function signalReady(env: NodeJS.ProcessEnv): void {
  const fd = Number(env.ASTRA_READY_FD);
  if (!Number.isInteger(fd) || fd < 3) return;
  try {
    fs.writeSync(fd, 'ready\n');
    fs.closeSync(fd);
  } catch {
    // The spawner went away; it will find us through the record.
  }
}

/** Prints each log line on stderr as `astra daemon logs` shows it (colours on a terminal). */
function terminalTee(env: NodeJS.ProcessEnv): (line: string) => void {
  const color = Boolean(process.stderr.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
  // A closed terminal must not become an uncaught exception: the file still gets every line.
  process.stderr.on('error', () => undefined);
  return (line) => {
    process.stderr.write(`${formatLogLine(line.trimEnd(), color)}\n`);
  };
}

export async function runDaemon(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paths = resolvePaths(env);
  const foreground = argv.includes('--foreground');
  const log = createLogger(paths.logFile, logLevelFrom(env), foreground ? { tee: terminalTee(env) } : {});
  let daemon: ReturnType<typeof createDaemon> | undefined;
  let crashed = false;
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; exiting');
    // Tell the clients why (reason 'error') and flush the journals, within a bound; a second
    // failure on the way out ends the process at once.
    if (crashed || !daemon) process.exit(1);
    crashed = true;
    setTimeout(() => process.exit(1), 3_000).unref();
    void daemon.stop('error', `internal error: ${err.message}; see the daemon log`).finally(() => process.exit(1));
  });
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  try {
    const { idleTimeoutMs } = parseArgs(argv);
    daemon = createDaemon({ paths, env, logger: log, ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }) });
    // A spawned daemon that lost the start-up race exits quietly; in a terminal that is a failure to say.
    if (!(await daemon.start())) {
      if (!foreground) return 0;
      process.stderr.write('astra daemon: another daemon is already running; see astra daemon status\n');
      return 1;
    }
    signalReady(env);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    log.fatal({ err: e }, 'daemon failed to start');
    process.stderr.write(`astra daemon: ${message}\n`);
    return 2;
  }
  const d = daemon;
  return new Promise<number>((resolve) => {
    d.onExit(() => resolve(0));
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.on(sig, () => {
        log.info({ signal: sig }, 'signal received');
        void d.stop('signal', `stopped by ${sig}`);
      });
    }
  });
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  runDaemon(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`astra daemon: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
