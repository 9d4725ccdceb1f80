// `astra daemon ...` against real daemon processes, a temp ASTRA_HOME each.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Driver } from '../helpers/driver.js';
import {
  envFor,
  isAlive,
  processesOfHome,
  readRecordFile,
  recordPath,
  runCli,
  waitFor,
  useTempHomes,
  CLI,
  ROOT,
  jsonLines,
  startNode,
} from '../helpers/processes.js';

const home = useTempHomes();

/** A process's environment, from /proc. */
function daemonEnv(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

describe('astra daemon status/start/stop', () => {
  it('status with no daemon exits 3 and starts nothing', async () => {
    const h = home();
    const r = await runCli(['daemon', 'status'], envFor(h));
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/not running/);
    expect(r.stdout).toContain('astra daemon start');
    const j = await runCli(['daemon', 'status', '--json'], envFor(h));
    expect(j.code).toBe(3);
    expect(JSON.parse(j.stdout)).toMatchObject({ running: false, recordPath: recordPath(h) });
    expect(processesOfHome(h)).toEqual([]);
    expect(fs.existsSync(recordPath(h))).toBe(false);
  });

  it('start, status with the right fields, stop, then status exits 3; start twice is fine', async () => {
    const h = home();
    const env = envFor(h);
    const started = await runCli(['daemon', 'start'], env);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/daemon started \(pid \d+/);
    const again = await runCli(['daemon', 'start'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already running/);

    const record = readRecordFile(h)!;
    // Started with the daemon's node flags (client/connect.ts DAEMON_NODE_FLAGS).
    expect(fs.readFileSync(`/proc/${record.pid}/cmdline`, 'utf8').split('\0')).toContain('--initial-old-space-size=64');
    const s = await runCli(['daemon', 'status', '--json'], env);
    expect(s.code).toBe(0);
    const status = JSON.parse(s.stdout);
    expect(status).toMatchObject({
      running: true,
      instanceId: record.instanceId,
      pid: record.pid,
      protocolVersion: 1,
      endpoint: path.join(h, 'run', 'astra.sock'),
      logFile: path.join(h, 'logs', 'daemon.log'),
      idleTimeoutMs: 600_000,
      sessions: [],
    });
    expect(typeof status.version).toBe('string');
    expect(status.uptimeMs).toBeGreaterThanOrEqual(0);
    expect(status.startedAt).toBeLessThanOrEqual(Date.now());
    // The status command itself is the one connection.
    expect(status.connections).toHaveLength(1);
    expect(status.connections[0]).toMatchObject({ clientName: 'astra-cli' });
    expect(typeof status.connections[0].id).toBe('string');
    expect(typeof status.connections[0].connectedAt).toBe('number');

    const human = await runCli(['daemon', 'status'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/status\s+running/);
    expect(human.stdout).toContain(record.instanceId);

    const stopped = await runCli(['daemon', 'stop'], env);
    expect(stopped.code).toBe(0);
    expect(isAlive(record.pid)).toBe(false);
    expect(fs.existsSync(recordPath(h))).toBe(false);
    expect((await runCli(['daemon', 'status'], env)).code).toBe(3);
    expect((await runCli(['daemon', 'stop'], env)).code).toBe(0);
  });

  it('files are private: runtime dir 0700, record 0600, socket 0600, and the token is in no log line', async () => {
    const h = home();
    const env = envFor(h);
    expect(await runCli(['daemon', 'start'], env)).toMatchObject({ code: 0 });
    const record = readRecordFile(h)!;
    const mode = (p: string) => fs.statSync(p).mode & 0o777;
    expect(mode(path.join(h, 'run'))).toBe(0o700);
    expect(mode(recordPath(h))).toBe(0o600);
    expect(mode(record.endpoint)).toBe(0o600);
    expect(mode(path.join(h, 'logs', 'daemon.log'))).toBe(0o600);
    expect(mode(path.join(h, 'logs'))).toBe(0o700);
    expect(record.token.length).toBeGreaterThanOrEqual(43); // 256 bits in base64url
    await runCli(['daemon', 'status'], env);
    await runCli(['daemon', 'stop'], env);
    const log = fs.readFileSync(path.join(h, 'logs', 'daemon.log'), 'utf8');
    expect(log).toContain('daemon started');
    expect(log).not.toContain(record.token);
    const logs = await runCli(['daemon', 'logs', '-n', '5'], env);
    expect(logs.code).toBe(0);
    expect(logs.stdout.trim().split('\n').length).toBeLessThanOrEqual(5);
    expect(logs.stdout).toMatch(/INFO/);
    expect(logs.stdout).not.toMatch(/^\{/m);
  });

  it('logs -f follows new lines as the daemon writes them, readable', async () => {
    const h = home();
    const env = envFor(h);
    expect(await runCli(['daemon', 'start'], env)).toMatchObject({ code: 0 });
    const follower = startNode([CLI, 'daemon', 'logs', '-f', '-n', '1'], env);
    let seen = '';
    follower.stdout!.on('data', (d: Buffer) => (seen += d.toString()));
    try {
      await waitFor('the last line', () => seen.includes('INFO'));
      const before = seen;
      expect((await runCli(['daemon', 'status'], env)).code).toBe(0); // a client connects: the daemon logs it
      await waitFor('a followed line', () => seen.length > before.length && /client connected.*client=astra-cli/.test(seen.slice(before.length)));
      expect(seen).not.toMatch(/^\{"level"/m);
    } finally {
      follower.kill('SIGKILL');
    }
  });

  it('a socket path over 103 bytes is refused with a message naming ASTRA_HOME', async () => {
    const base = home();
    const deep = path.join(base, 'x'.repeat(60), 'y'.repeat(40));
    fs.mkdirSync(deep, { recursive: true });
    const r = await runCli(['daemon', 'start'], envFor(deep));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/103/);
    expect(r.stderr).toMatch(/ASTRA_HOME/);
  });

  it('a runtime dir that is a symlink, mode 0755, or owned by another uid is refused with a clear message', async () => {
    const h1 = home();
    fs.mkdirSync(path.join(h1, 'elsewhere'), { mode: 0o700 });
    fs.symlinkSync(path.join(h1, 'elsewhere'), path.join(h1, 'run'));
    const r1 = await runCli(['daemon', 'start'], envFor(h1));
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(/symlink/i);

    const h2 = home();
    fs.mkdirSync(path.join(h2, 'run'), { mode: 0o755 });
    fs.chmodSync(path.join(h2, 'run'), 0o755);
    const r2 = await runCli(['daemon', 'start'], envFor(h2));
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/chmod 700/);

    if (process.getuid?.() === 0) {
      const h3 = home();
      fs.mkdirSync(path.join(h3, 'run'), { mode: 0o700 });
      fs.chownSync(path.join(h3, 'run'), 12345, 12345);
      const r3 = await runCli(['daemon', 'start'], envFor(h3));
      expect(r3.code).toBe(1);
      expect(r3.stderr).toMatch(/owned by/i);
    }
  });

  it('start --foreground serves from the terminal process and Ctrl-C (SIGINT) stops it cleanly', async () => {
    const h = home();
    const env = envFor(h);
    const fg = startNode([CLI, 'daemon', 'start', '--foreground', '--idle-timeout', '0'], env);
    const exited = new Promise<number | null>((resolve) => fg.on('exit', (code) => resolve(code)));
    const record = await waitFor('the foreground daemon to publish its record', () => readRecordFile(h));
    expect(record.pid).toBe(fg.pid);
    const s = await runCli(['daemon', 'status', '--json'], env);
    expect(JSON.parse(s.stdout)).toMatchObject({ running: true, pid: fg.pid, idleTimeoutMs: 0 });
    fg.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(fs.existsSync(recordPath(h))).toBe(false);
    expect(fs.existsSync(record.endpoint)).toBe(false);
  });

  it('SIGTERM makes the daemon exit 0 with its record and socket removed', async () => {
    const h = home();
    const env = envFor(h);
    expect(await runCli(['daemon', 'start'], env)).toMatchObject({ code: 0 });
    const record = readRecordFile(h)!;
    process.kill(record.pid, 'SIGTERM');
    await waitFor('daemon exit', () => !isAlive(record.pid));
    expect(fs.existsSync(recordPath(h))).toBe(false);
    expect(fs.existsSync(record.endpoint)).toBe(false);
    const log = fs.readFileSync(path.join(h, 'logs', 'daemon.log'), 'utf8');
    expect(log).toMatch(/"signal":"SIGTERM"/);
    expect(log).toMatch(/daemon stopped/);
  });

  it('stop --force kills a daemon that cannot answer (stopped with SIGSTOP)', async () => {
    const h = home();
    const env = envFor(h);
    expect(await runCli(['daemon', 'start'], env)).toMatchObject({ code: 0 });
    const record = readRecordFile(h)!;
    process.kill(record.pid, 'SIGSTOP');
    try {
      const r = await runCli(['daemon', 'stop', '--force'], env);
      expect(r.code).toBe(0);
      await waitFor('daemon gone', () => !isAlive(record.pid));
    } finally {
      if (isAlive(record.pid)) process.kill(record.pid, 'SIGKILL');
    }
    expect((await runCli(['daemon', 'status'], env)).code).toBe(3);
  });

  it('restart gives a new instance', async () => {
    const h = home();
    const env = envFor(h);
    expect(await runCli(['daemon', 'start'], env)).toMatchObject({ code: 0 });
    const before = readRecordFile(h)!;
    const r = await runCli(['daemon', 'restart'], env);
    expect(r.code).toBe(0);
    const after = readRecordFile(h)!;
    expect(after.instanceId).not.toBe(before.instanceId);
    expect(isAlive(before.pid)).toBe(false);
    expect(isAlive(after.pid)).toBe(true);
  });

  it('every command has --help', async () => {
    const h = home();
    for (const args of [['--help'], ['daemon', '--help'], ['daemon', 'status', '--help'], ['daemon', 'stop', '--help']]) {
      const r = await runCli(args, envFor(h));
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Usage: astra/);
    }
    const bad = await runCli(['daemon', 'stop', '--timeout', 'soon'], envFor(h));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--timeout takes milliseconds/);
  });

});

describe('astra daemon … as a user meets it (issue 19)', () => {
  const drivers: Driver[] = [];
  afterEach(() => {
    for (const d of drivers.splice(0)) d.kill();
  });
  async function attach(env: NodeJS.ProcessEnv, name: string): Promise<Driver> {
    const d = new Driver(env, name);
    drivers.push(d);
    return d.ready();
  }

  it('stop says how many clients were attached, and they are told it stopped', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const record = readRecordFile(h)!;
    const [a, b] = await Promise.all([attach(env, 'one'), attach(env, 'two')]);
    const r = await runCli(['daemon', 'stop'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`daemon stopped \\(pid ${record.pid}\\); 2 clients were attached and were told it stopped`));
    for (const d of [a, b]) {
      const note = await d.next((l) => l.note === 'daemon/shuttingDown');
      expect(note.params.reason).toBe('stopped');
    }
  });

  it('restart tells attached clients it is restarting, so they reconnect', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const d = await attach(env, 'attached');
    const r = await runCli(['daemon', 'restart'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 client was attached and was told it is restarting/);
    const note = await d.next((l) => l.note === 'daemon/shuttingDown');
    expect(note.params.reason).toBe('restarting');
  });

  // Issue 26: an attached client reconnecting at once used to start the new daemon first, with ITS
  // environment (the old key); restart then said "already running" and exited 0.
  it('restart with a client attached starts the new daemon itself, with the new environment; the client waits and reconnects to it', async () => {
    const h = home();
    const env = envFor(h, { ASTRA_CHAT_API_KEY: 'old-key' });
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, started.stderr).toBe(0);
    const first = readRecordFile(h)!;
    expect(daemonEnv(first.pid).ASTRA_CHAT_API_KEY).toBe('old-key');
    // A library client that reconnects as soon as it can, its environment holding the old key.
    const script =
      `import(${JSON.stringify(path.join(ROOT, 'dist', 'client', 'index.js'))}).then(async ({ AstraClient }) => {` +
      `  const c = await AstraClient.connect({ clientName: 'eager', reconnect: { initialDelayMs: 1, maxDelayMs: 20, maxElapsedMs: 60000 } });` +
      `  c.on('reconnected', (e) => console.log(JSON.stringify({ reconnected: e.instanceId, pid: e.daemonPid })));` +
      `  console.log(JSON.stringify({ ready: c.instanceId }));` +
      `});`;
    const eager = startNode(['--input-type=module', '-e', script], env);
    // And one that connects over and over (as scripts and a web page do), starting a daemon whenever none answers.
    const loop =
      `import(${JSON.stringify(path.join(ROOT, 'dist', 'client', 'connect.js'))}).then(async ({ connectOrSpawn }) => {` +
      `  for (;;) { try { const c = await connectOrSpawn({ clientName: 'loop' }); c.conn.close(); } catch {} await new Promise((r) => setTimeout(r, 5)); }` +
      `});`;
    const looper = startNode(['--input-type=module', '-e', loop], env);
    try {
      const lines = jsonLines(eager);
      await lines.next((l) => (l as { ready?: string }).ready === first.instanceId, 20_000);
      const r = await runCli(['daemon', 'restart'], { ...env, ASTRA_CHAT_API_KEY: 'new-key' }, 40_000);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(/already running/);
      const m = /daemon started \(pid (\d+), instance ([\w-]+)\)/.exec(r.stdout);
      expect(m, r.stdout).not.toBeNull();
      const second = readRecordFile(h)!;
      expect(second.pid).toBe(Number(m![1]));
      expect(second.instanceId).not.toBe(first.instanceId);
      expect(daemonEnv(second.pid).ASTRA_CHAT_API_KEY).toBe('new-key');
      const back = (await lines.next((l) => (l as { reconnected?: string }).reconnected !== undefined, 30_000)) as { reconnected: string };
      expect(back.reconnected).toBe(second.instanceId);
      expect(fs.existsSync(path.join(h, 'run', 'restart.json'))).toBe(false);
    } finally {
      eager.kill('SIGKILL');
      looper.kill('SIGKILL');
    }
  });

  it('a daemon a client starts on demand gets none of the client\'s engine settings (ASTRA_CHAT_*, OPENAI_API_KEY); `daemon start` passes them', async () => {
    const h = home();
    const env = envFor(h, { ASTRA_CHAT_API_KEY: 'client-key', OPENAI_API_KEY: 'client-openai', ASTRA_CHAT_BASE_URL: 'http://127.0.0.1:9/v1' });
    const made = await runCli(['new'], env);
    expect(made.code, made.stderr).toBe(0);
    const onDemand = daemonEnv(readRecordFile(h)!.pid);
    expect(onDemand.ASTRA_HOME).toBe(h);
    expect(onDemand.ASTRA_CHAT_API_KEY).toBeUndefined();
    expect(onDemand.OPENAI_API_KEY).toBeUndefined();
    expect(onDemand.ASTRA_CHAT_BASE_URL).toBeUndefined();
    expect((await runCli(['daemon', 'stop'], env)).code).toBe(0);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    expect(daemonEnv(readRecordFile(h)!.pid)).toMatchObject({ ASTRA_CHAT_API_KEY: 'client-key', OPENAI_API_KEY: 'client-openai' });
  });

  it('start --foreground while a daemon runs answers like the background form and exits 1', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const record = readRecordFile(h)!;
    const r = await runCli(['daemon', 'start', '--foreground'], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`the daemon is already running \\(pid ${record.pid}, instance ${record.instanceId}\\)`));
    expect(r.stderr).toMatch(/astra daemon stop/);
    expect(r.stderr).not.toMatch(/Ctrl-C stops it/);
    expect(isAlive(record.pid)).toBe(true);
  });

  it('start --foreground prints the log lines on the terminal, readable', async () => {
    const h = home();
    const env = envFor(h, { NO_COLOR: '1' });
    const fg = startNode([CLI, 'daemon', 'start', '--foreground', '--idle-timeout', '0'], env);
    let stderr = '';
    fg.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => fg.on('exit', (code) => resolve(code)));
    await waitFor('the daemon started line on the terminal', () => /INFO  \[\d+\] daemon started/.test(stderr), 15_000);
    expect(stderr).not.toMatch(/"level":/);
    fg.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/daemon stopped/);
  });

  it('status puts connections under their own heading, counts sessions loaded and on disk, and shows the controller\'s pid', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const d = await attach(env, 'controller');
    const { session } = await d.call('session/create', { title: 'watched' });
    await d.call('lease/acquire', { sessionId: session.id });
    const r = await runCli(['daemon', 'status'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/sessions\s+1 loaded, 1 on disk/);
    const lines = r.stdout.split('\n');
    const connHeading = lines.indexOf('connections');
    const sessHeading = lines.indexOf('sessions (loaded)');
    expect(connHeading).toBeGreaterThan(0);
    expect(sessHeading).toBeGreaterThan(connHeading);
    const connRows = lines.slice(connHeading + 1, sessHeading).filter((l) => l.trim());
    expect(connRows.some((l) => l.includes(`controller 1  pid ${d.pid}`))).toBe(true);
    expect(lines.slice(sessHeading + 1).find((l) => l.includes(session.id))).toContain(`controller controller (pid ${d.pid})`);
  });

  it('status after a crash says the last daemon died, and quotes the log', async () => {
    const h = home();
    const env = envFor(h);
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const record = readRecordFile(h)!;
    process.kill(record.pid, 'SIGKILL');
    await waitFor('daemon death', () => !isAlive(record.pid));
    const r = await runCli(['daemon', 'status'], env);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(new RegExp(`the last daemon \\(pid ${record.pid}\\) died without stopping cleanly`));
    expect(r.stdout).toMatch(/last log line: /);
    // A clean stop is not a death.
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    expect((await runCli(['daemon', 'stop'], env)).code).toBe(0);
    const clean = await runCli(['daemon', 'status'], env);
    expect(clean.stdout).not.toMatch(/died|did not stop cleanly/);
  });

  it('status does not call a live daemon dead while its record carries another token', async () => {
    const h = home();
    // The daemon puts its record right at its next self-check, and status waits that long (and 0.5 s
    // more) for it: every 200 ms here rather than the default 2 s.
    const env = envFor(h, { ASTRA_SELF_CHECK_MS: '200' });
    expect((await runCli(['daemon', 'start'], env)).code).toBe(0);
    const record = readRecordFile(h)!;
    const tmp = `${recordPath(h)}.tamper.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...record, token: 'C'.repeat(43) }), { mode: 0o600 });
    fs.renameSync(tmp, recordPath(h));
    const r = await runCli(['daemon', 'status'], env);
    expect(r.stdout).not.toMatch(/not running/);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/status\s+running/);
  });

  it('a record with a token the daemon refuses for good: connect fails with unauthorized and the fix (no spawn_failed), status says it runs but refuses, restart mends it', async () => {
    const h = home();
    // A daemon that does not put its record right soon (self-check every 10 min); the commands below
    // are told of a 100 ms self-check, so each waits 0.6 s for a repair that does not come, not 10.5 s.
    expect((await runCli(['daemon', 'start'], envFor(h, { ASTRA_SELF_CHECK_MS: '600000' }))).code).toBe(0);
    const env = envFor(h, { ASTRA_SELF_CHECK_MS: '100' });
    const record = readRecordFile(h)!;
    expect(daemonEnv(record.pid).ASTRA_SELF_CHECK_MS).toBe('600000');
    const tmp = `${recordPath(h)}.tamper.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...record, token: 'D'.repeat(43) }), { mode: 0o600 });
    fs.renameSync(tmp, recordPath(h));
    const r = await runCli(['sessions'], env, 30_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toMatch(/spawn_failed|did not answer within/);
    expect(r.stderr).toContain(`refuses the token in ${recordPath(h)}`);
    expect(r.stderr).toContain('astra daemon restart');
    const st = await runCli(['daemon', 'status'], env, 30_000);
    expect(st.code).toBe(1);
    expect(st.stdout).toMatch(/running but not answering/);
    expect(st.stdout).not.toMatch(/not running/);
    const again = await runCli(['daemon', 'restart'], env, 40_000);
    expect(again.code, again.stderr).toBe(0);
    expect(readRecordFile(h)!.pid).not.toBe(record.pid);
    expect((await runCli(['sessions'], env)).code).toBe(0);
  });

  it('help shows default durations as durations', async () => {
    const h = home();
    const stop = await runCli(['daemon', 'stop', '--help'], envFor(h));
    expect(stop.stdout).toMatch(/default:? 5s/);
    expect(stop.stdout).not.toMatch(/"5000"/);
    const start = await runCli(['daemon', 'start', '--help'], envFor(h));
    expect(start.stdout).toMatch(/default 10m/);
  });
});
