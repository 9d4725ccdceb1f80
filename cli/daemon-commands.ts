// `astra daemon start|status|stop|restart|logs` (README.md, docs/operations.md).
import fs from 'node:fs';
import type { Command } from 'commander';
import { AstraError, type DaemonStatus } from '../protocol/index.js';
import {
  ensurePrivateDir,
  isProcessAlive,
  removeRecordIfOwned,
  removeRestartMarker,
  resolvePaths,
  writeRestartMarker,
  type AstraPaths,
  type DiscoveryRecord,
} from '../discovery/index.js';
import { connectOrSpawn, handshake, readUsableRecord } from '../client/connect.js';
import { parseDuration } from '../protocol/index.js';
import { formatLogLine, followFile, tailLines } from './log-format.js';
import { CLI_VERSION, ExitCode, fail, localTime, style, type Output } from './output.js';

const CLIENT = { clientName: 'astra-cli', clientVersion: CLI_VERSION };

interface RunningDaemon {
  record: DiscoveryRecord;
  status: DaemonStatus;
}

/** Asks a running daemon for its status; never starts one. */
async function queryRunning(env: NodeJS.ProcessEnv): Promise<RunningDaemon | undefined> {
  let connected;
  try {
    connected = await connectOrSpawn({ ...CLIENT, env, autoStart: false, requestTimeoutMs: 5_000 });
  } catch (e) {
    if (e instanceof AstraError && e.reason === 'daemon_not_running') return undefined;
    throw e;
  }
  try {
    const status = (await connected.conn.request('daemon/status', {})) as DaemonStatus;
    return { record: connected.record, status };
  } finally {
    connected.conn.close();
  }
}

function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

function printStatus(out: Output, s: DaemonStatus): void {
  const loaded = s.sessions.length;
  const sessionsLine = s.sessionsOnDisk === undefined ? `${loaded} loaded` : `${loaded} loaded, ${s.sessionsOnDisk} on disk`;
  const rows: [string, string][] = [
    ['status', style(out, 'green', 'running')],
    ['instance', s.instanceId],
    ['pid', String(s.pid)],
    ['version', `${s.version} (protocol ${s.protocolVersion})`],
    ['started', `${localTime(s.startedAt)} (up ${formatDuration(s.uptimeMs)})`],
    ['endpoint', s.endpoint],
    ['log', s.logFile + (s.logLinesDropped ? `  (${s.logLinesDropped} lines could not be written: is the disk full?)` : '')],
    ['idle exit', s.idleTimeoutMs === 0 ? 'never' : `after ${formatDuration(s.idleTimeoutMs)} without clients`],
    ['connections', String(s.connections.length)],
    ['sessions', sessionsLine],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) out.stdout(`${k.padEnd(width)}  ${v}`);
  if (s.connections.length) {
    out.stdout('');
    out.stdout(style(out, 'bold', 'connections'));
    for (const c of s.connections) {
      out.stdout(`  ${c.id}  ${c.clientName} ${c.clientVersion}${c.pid ? `  pid ${c.pid}` : ''}  queued ${c.queuedBytes} B${c.subscriptions.length ? `  watching ${c.subscriptions.length}` : ''}`);
    }
  }
  if (s.sessions.length) {
    out.stdout('');
    out.stdout(style(out, 'bold', 'sessions (loaded)'));
    for (const x of s.sessions) {
      const ctl = x.controller
        ? `${x.controller.clientName}${x.controller.pid ? ` (pid ${x.controller.pid})` : ''}` +
          `${x.controller.graceUntil ? ` in grace until ${localTime(x.controller.graceUntil, true)}` : ''}`
        : 'none';
      out.stdout(
        `  ${x.id}  ${JSON.stringify(x.title)}  ${x.state}  seq ${x.headSeq}  epoch ${x.epoch}  controller ${ctl}  observers ${x.observers}` +
          `${x.runningTurnId ? `  turn ${x.runningTurnId}` : ''}${x.pendingApprovals ? `  approvals pending ${x.pendingApprovals}` : ''}`,
      );
    }
  }
}

/** What the log's last line says, readable, when it is not a clean stop (a crash leaves its reason there). */
function lastLogWords(paths: AstraPaths, color: boolean): string | undefined {
  const last = tailLines(paths.logFile, 1)[0];
  if (!last) return undefined;
  try {
    const entry = JSON.parse(last) as { msg?: unknown };
    if (entry.msg === 'daemon stopped') return undefined;
  } catch {
    // plain text: an early crash on stderr; show it
  }
  return formatLogLine(last, color);
}

/** Why no daemon answers: never ran, stopped cleanly, or died (the record and the log tell). */
function explainNotRunning(out: Output, paths: AstraPaths): void {
  let record: DiscoveryRecord | undefined;
  try {
    record = readUsableRecord(paths.recordPath);
  } catch {
    record = undefined;
  }
  const last = lastLogWords(paths, out.color);
  if (record && !isProcessAlive(record.pid)) {
    out.stdout(`the last daemon (pid ${record.pid}) died without stopping cleanly; its log: ${paths.logFile} (astra daemon logs)`);
  } else if (last) {
    out.stdout(`the last daemon did not stop cleanly; its log: ${paths.logFile} (astra daemon logs)`);
  }
  if (last) out.stdout(`  last log line: ${last}`);
}

async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 10; Date.now() < deadline; delay = Math.min(delay * 2, 100)) {
    if (!isProcessAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, delay));
  }
  return !isProcessAlive(pid);
}

/** Is this pid really an Astra daemon? (pids are reused; never signal a stranger.) */
function looksLikeDaemon(pid: number): boolean {
  if (process.platform !== 'linux') return true;
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    return /daemon(-bundle)?[\\/]main\.js/.test(cmdline) || /astra.*daemon.*--foreground/.test(cmdline);
  } catch {
    return false;
  }
}

function attachedWords(n: number | undefined, restart: boolean): string {
  if (n === undefined) return '';
  if (n === 0) return '; no client was attached';
  return `; ${n} client${n === 1 ? ' was' : 's were'} attached and ${n === 1 ? 'was' : 'were'} told it ${restart ? 'is restarting (they reconnect)' : 'stopped'}`;
}

export async function stopDaemon(
  out: Output,
  env: NodeJS.ProcessEnv,
  opts: { force?: boolean; timeoutMs: number; restart?: boolean },
): Promise<number> {
  const paths = resolvePaths(env);
  const record = readUsableRecord(paths.recordPath);
  if (!record || !isProcessAlive(record.pid)) {
    out.stdout('no daemon is running');
    if (record) removeRecordIfOwned(paths.recordPath, record.instanceId);
    return ExitCode.ok;
  }
  let confirmed = false;
  if (!opts.force) {
    try {
      const { conn, init } = await handshake(record, { ...CLIENT, requestTimeoutMs: opts.timeoutMs });
      confirmed = init.instanceId === record.instanceId && init.daemon.pid === record.pid;
      const params = opts.restart ? { reason: 'astra daemon restart', restart: true } : { reason: 'astra daemon stop' };
      const answer = (await conn.request('daemon/shutdown', params).finally(() => conn.close())) as { connections?: number };
      if (await waitUntilGone(record.pid, opts.timeoutMs)) {
        out.stdout(`daemon stopped (pid ${record.pid})${attachedWords(answer.connections, opts.restart === true)}`);
        return ExitCode.ok;
      }
      out.stderr(`the daemon did not exit within ${formatDuration(opts.timeoutMs)}; sending signals`);
    } catch (e) {
      out.stderr(`graceful shutdown failed (${e instanceof Error ? e.message : String(e)}); sending signals`);
    }
  }
  if (!confirmed && !looksLikeDaemon(record.pid)) {
    throw new AstraError(
      'invalid_record',
      `pid ${record.pid} from ${paths.recordPath} is not an Astra daemon; not signalling it. Remove the record if the daemon is gone.`,
    );
  }
  process.kill(record.pid, 'SIGTERM');
  if (!(await waitUntilGone(record.pid, 2_000))) {
    process.kill(record.pid, 'SIGKILL');
    await waitUntilGone(record.pid, 2_000);
  }
  removeRecordIfOwned(paths.recordPath, record.instanceId);
  out.stdout(`daemon stopped (pid ${record.pid}, signalled)`);
  return ExitCode.ok;
}

function alreadyRunning(out: Output, s: DaemonStatus): void {
  out.stdout(`the daemon is already running (pid ${s.pid}, instance ${s.instanceId})`);
}

async function startDaemon(out: Output, env: NodeJS.ProcessEnv, idleTimeoutMs: number | undefined): Promise<number> {
  const running = await queryRunning(env);
  if (running) {
    alreadyRunning(out, running.status);
    return ExitCode.ok;
  }
  const daemonArgs = idleTimeoutMs === undefined ? [] : ['--idle-timeout', String(idleTimeoutMs)];
  const { conn, init, spawned } = await connectOrSpawn({ ...CLIENT, env, daemonArgs, explicitStart: true });
  conn.close();
  out.stdout(
    spawned
      ? `daemon started (pid ${init.daemon.pid}, instance ${init.instanceId})`
      : `the daemon is already running (pid ${init.daemon.pid}, instance ${init.instanceId})`,
  );
  return ExitCode.ok;
}

/** How many times restart stops a daemon some other client started in its place before it gives up. */
const RESTART_ATTEMPTS = 3;

/**
 * Stops the daemon and starts the new one itself, with this environment. Its marker in the runtime
 * dir keeps clients waiting for that daemon instead of starting one of theirs; a daemon started in
 * its place anyway (by an Astra without the marker) is stopped too.
 */
async function restartDaemon(out: Output, env: NodeJS.ProcessEnv, idleTimeoutMs: number | undefined): Promise<number> {
  const paths = resolvePaths(env);
  ensurePrivateDir(paths.runtimeDir);
  writeRestartMarker(paths.runtimeDir);
  try {
    await stopDaemon(out, env, { timeoutMs: 5_000, restart: true });
    const daemonArgs = idleTimeoutMs === undefined ? [] : ['--idle-timeout', String(idleTimeoutMs)];
    for (let attempt = 1; ; attempt++) {
      const { conn, init, spawned } = await connectOrSpawn({ ...CLIENT, env, daemonArgs, explicitStart: true });
      conn.close();
      if (spawned) {
        out.stdout(`daemon started (pid ${init.daemon.pid}, instance ${init.instanceId}) with this environment`);
        return ExitCode.ok;
      }
      if (attempt >= RESTART_ATTEMPTS) {
        throw new AstraError(
          'spawn_failed',
          `another client started a daemon (pid ${init.daemon.pid}) each time this restart stopped one, ${attempt} times; ` +
            'stop the clients of an older Astra (they do not wait for a restart), then run `astra daemon restart` again',
          { pid: init.daemon.pid },
        );
      }
      out.stderr(`another client started a daemon (pid ${init.daemon.pid}) before this restart could; stopping it too`);
      await stopDaemon(out, env, { timeoutMs: 5_000, restart: true });
    }
  } finally {
    removeRestartMarker(paths.runtimeDir);
  }
}

export function registerDaemonCommands(program: Command, out: Output, env: NodeJS.ProcessEnv, setExit: (code: number) => void): void {
  const daemon = program.command('daemon').description('start, stop and inspect the background daemon');

  daemon
    .command('start')
    .description('start the daemon in the background (does nothing if one is running)')
    .option('--foreground', 'run the daemon in this terminal instead of detaching')
    .option('--idle-timeout <duration>', 'exit after this long without clients (ms, or 30s/10m/1h; 0 = never; default 10m)')
    .action(async (o: { foreground?: boolean; idleTimeout?: string }) => {
      const idle = o.idleTimeout === undefined ? undefined : parseDuration(o.idleTimeout, '--idle-timeout');
      if (o.foreground) {
        // One daemon per user: a foreground start next to a running one is refused, not a silent exit.
        const running = await queryRunning(env);
        if (running) {
          alreadyRunning(out, running.status);
          out.stderr('astra: not starting a second daemon in the foreground; stop the running one first (astra daemon stop)');
          setExit(ExitCode.error);
          return;
        }
        const { runDaemon } = await import('../daemon/main.js');
        const paths = resolvePaths(env);
        out.stderr(`astra daemon running in the foreground (pid ${process.pid}); log: ${paths.logFile} (also shown here); Ctrl-C stops it`);
        setExit(await runDaemon(['--foreground', ...(idle === undefined ? [] : ['--idle-timeout', String(idle)])], env));
        return;
      }
      setExit(await startDaemon(out, env, idle));
    });

  daemon
    .command('status')
    .description('show whether the daemon runs and what it is doing (never starts one); exit 0 running, 3 not running')
    .option('--json', 'print one JSON object')
    .action(async (o: { json?: boolean }) => {
      const paths = resolvePaths(env);
      let running: RunningDaemon | undefined;
      try {
        // A live daemon whose record was altered puts it right at its next self-check: the connect waits for that.
        running = await queryRunning(env);
      } catch (e) {
        if (!(e instanceof AstraError && e.reason === 'unauthorized')) throw e;
        const pid = typeof e.data.pid === 'number' ? e.data.pid : undefined;
        if (o.json) out.stdout(JSON.stringify({ running: true, reachable: false, pid, reason: 'unauthorized', message: e.message, recordPath: paths.recordPath, logFile: paths.logFile }, null, 2));
        else out.stdout(`${style(out, 'yellow', 'running but not answering')}: ${e.message}`);
        setExit(ExitCode.error);
        return;
      }
      if (!running) {
        if (o.json) {
          out.stdout(JSON.stringify({ running: false, recordPath: paths.recordPath, runtimeDir: paths.runtimeDir, logFile: paths.logFile }, null, 2));
        } else {
          out.stdout(`${style(out, 'yellow', 'not running')} (looked for ${paths.recordPath}); start it with: astra daemon start`);
          explainNotRunning(out, paths);
        }
        setExit(ExitCode.notRunning);
        return;
      }
      if (o.json) out.stdout(JSON.stringify(running.status, null, 2));
      else printStatus(out, running.status);
      setExit(ExitCode.ok);
    });

  daemon
    .command('stop')
    .description('stop the daemon gracefully; with --force (or past --timeout) by signals')
    .option('--force', 'skip the graceful request: SIGTERM, then SIGKILL')
    .option('--timeout <duration>', 'how long to wait for a graceful exit', '5000')
    .action(async (o: { force?: boolean; timeout: string }) => {
      setExit(await stopDaemon(out, env, { force: o.force, timeoutMs: parseDuration(o.timeout, '--timeout') }));
    });

  daemon
    .command('restart')
    .description('stop the daemon (if running) and start a new one with this environment; attached clients wait for it and reconnect')
    .option('--idle-timeout <duration>', 'idle timeout for the new daemon (ms, or 30s/10m/1h; 0 = never; default 10m)')
    .action(async (o: { idleTimeout?: string }) => {
      setExit(await restartDaemon(out, env, o.idleTimeout === undefined ? undefined : parseDuration(o.idleTimeout, '--idle-timeout')));
    });

  daemon
    .command('logs')
    .description('print the daemon log, readable (colours on a terminal)')
    .option('-f, --follow', 'keep printing new lines')
    .option('-n, --lines <n>', 'how many lines from the end', '50')
    .action(async (o: { follow?: boolean; lines: string }) => {
      const paths = resolvePaths(env);
      const n = Number(o.lines);
      if (!Number.isInteger(n) || n < 0) fail(`-n takes a whole number of lines, got "${o.lines}"`);
      if (!fs.existsSync(paths.logFile) && !o.follow) {
        out.stderr(`no log yet at ${paths.logFile}; the daemon writes it when it starts (astra daemon start)`);
        setExit(ExitCode.ok);
        return;
      }
      for (const line of tailLines(paths.logFile, n)) out.stdout(formatLogLine(line, out.color));
      if (o.follow) await followFile(paths.logFile, (line) => out.stdout(formatLogLine(line, out.color)));
      setExit(ExitCode.ok);
    });
}
