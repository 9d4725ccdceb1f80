#!/usr/bin/env node
// The daemon's entry point: `node dist/daemon/main.js [--idle-timeout <ms|10m>]` (clients start the
// bundled copy, dist/daemon-bundle/main.js, when the build made one). Normally spawned detached by a
// client or by `astra daemon start`, with stdout and stderr going to the log file.
import fs from 'node:fs';
import { AstraError } from '../protocol/index.js';
import { resolvePaths } from '../discovery/index.js';
import { createDaemon } from './daemon.js';
import { createLogger, logLevelFrom } from './logger.js';
import { parseDuration } from '../protocol/index.js';

function parseArgs(argv: string[]): { idleTimeoutMs?: number } {
  const out: { idleTimeoutMs?: number } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--idle-timeout') out.idleTimeoutMs = parseDuration(argv[++i] ?? '', '--idle-timeout');
    else if (arg.startsWith('--idle-timeout=')) out.idleTimeoutMs = parseDuration(arg.slice('--idle-timeout='.length), '--idle-timeout');
    else if (arg === '--foreground') continue;
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

export async function runDaemon(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paths = resolvePaths(env);
  const log = createLogger(paths.logFile, logLevelFrom(env));
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  let daemon;
  try {
    const args = parseArgs(argv);
    daemon = createDaemon({ paths, env, logger: log, ...args });
    if (!(await daemon.start())) return 0;
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
        void d.stop('signal', sig);
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
