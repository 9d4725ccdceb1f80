// The restart marker (issue 26, docs/operations.md "restart"): while `<runtime dir>/restart.json` names a
// live writer and its deadline is ahead, a client that finds no daemon starts none — it waits for the
// daemon the restart starts. The test plays the restart itself: it writes the marker naming a `sleep`
// it owns, so nothing races and each step waits for a state, not for time.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { envFor, isAlive, jsonLines, processesOfHome, readRecordFile, ROOT, runCli, startNode, useTempHomes, waitFor, CLI } from '../helpers/processes.js';

const home = useTempHomes();

/** A live process the test owns (outside any ASTRA_HOME), killed by pid when the test ends. */
function liveWriter(): ChildProcess {
  const child = spawn('sleep', ['120'], { stdio: 'ignore' });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** A pid that has exited: a `true` the test started and saw exit. */
async function deadPid(): Promise<number> {
  const child = spawn('true', [], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  await waitFor('the exited process to be gone', () => !isAlive(child.pid!), 10_000);
  return child.pid!;
}

function writeMarker(h: string, marker: { pid: number; until: number }): void {
  fs.mkdirSync(path.join(h, 'run'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(h, 'run', 'restart.json'), `${JSON.stringify(marker)}\n`, { mode: 0o600 });
}

/** A library client in its own process: prints {restartWait} when it waits for a restart, then {connected}. */
function libraryClient(env: NodeJS.ProcessEnv): { child: ChildProcess; lines: ReturnType<typeof jsonLines> } {
  const script =
    `import(${JSON.stringify(path.join(ROOT, 'dist', 'client', 'connect.js'))}).then(async ({ connectOrSpawn }) => {` +
    `  const c = await connectOrSpawn({ clientName: 'marker-test', startTimeoutMs: 20000,` +
    `    onRestartWait: (w) => console.log(JSON.stringify({ restartWait: w.pid })) });` +
    `  console.log(JSON.stringify({ connected: c.init.instanceId, pid: c.init.daemon.pid, spawned: c.spawned }));` +
    `  c.conn.close();` +
    `}).catch((e) => { console.log(JSON.stringify({ failed: String(e && e.message) })); process.exit(1); });`;
  const child = startNode(['--input-type=module', '-e', script], env);
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, lines: jsonLines(child) };
}

type Line = { restartWait?: number; connected?: string; pid?: number; spawned?: boolean; failed?: string };

/** The daemons of this home: its processes other than the given clients. */
function daemonsOf(h: string, clients: number[]): number[] {
  return processesOfHome(h).filter((p) => !clients.includes(p));
}

function daemonEnv(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

describe('the restart marker', () => {
  it('a client that finds no daemon while a live restart marker holds starts none, and connects to the daemon `astra daemon start` starts', async () => {
    const h = home();
    const env = envFor(h);
    const writer = liveWriter();
    writeMarker(h, { pid: writer.pid!, until: Date.now() + 60_000 });
    const client = libraryClient(env);
    // Whichever comes first: the client says it waits for the restart, or a daemon appears (the
    // client started one: the race the marker closes). With the marker logic it is always the first.
    const first = (await client.lines.next((l) => {
      const v = l as Line;
      return v.restartWait !== undefined || v.connected !== undefined || v.failed !== undefined;
    }, 30_000)) as Line;
    expect(first, 'the client connected (it started a daemon) instead of waiting for the restart').toEqual({ restartWait: writer.pid });
    expect(readRecordFile(h), 'a daemon published its record while the restart marker held').toBeUndefined();
    expect(daemonsOf(h, [client.child.pid!])).toEqual([]);

    // The restart's daemon: started explicitly, with an engine setting the client does not have.
    const started = await runCli(['daemon', 'start'], { ...env, ASTRA_CHAT_BASE_URL: 'http://127.0.0.1:9/marker-test' }, 30_000);
    expect(started.code, started.stderr).toBe(0);
    const m = /daemon started \(pid (\d+), instance ([\w-]+)\)/.exec(started.stdout);
    expect(m, started.stdout).not.toBeNull();
    const joined = (await client.lines.next((l) => (l as Line).connected !== undefined || (l as Line).failed !== undefined, 30_000)) as Line;
    expect(joined).toEqual({ connected: m![2], pid: Number(m![1]), spawned: false });
    expect(daemonEnv(Number(m![1])).ASTRA_CHAT_BASE_URL).toBe('http://127.0.0.1:9/marker-test');
    await waitFor('the client to exit', () => client.child.exitCode !== null, 15_000);
    expect(daemonsOf(h, [])).toEqual([Number(m![1])]);
  });

  it('the CLI says it waits for the restart, and starts the daemon itself once the marker\'s writer dies', async () => {
    const h = home();
    const env = envFor(h);
    const writer = liveWriter();
    writeMarker(h, { pid: writer.pid!, until: Date.now() + 60_000 });
    const cli = startNode([CLI, 'sessions', '--json'], env);
    onTestFinished(() => {
      if (cli.exitCode === null) cli.kill('SIGKILL');
    });
    let stderr = '';
    cli.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));
    let exitCode: number | null | undefined;
    void exited.then((c) => (exitCode = c));
    const seen = await waitFor(
      'the CLI to say it waits for the restart (or to start a daemon)',
      () => (stderr.includes('is starting the daemon; waiting for it') ? 'waiting' : readRecordFile(h) || exitCode !== undefined ? 'went on' : false),
      30_000,
    );
    expect(seen, `stderr: ${stderr}`).toBe('waiting');
    expect(stderr).toContain(`\`astra daemon restart\` (pid ${writer.pid}) is starting the daemon`);
    expect(readRecordFile(h)).toBeUndefined();
    expect(daemonsOf(h, [cli.pid!])).toEqual([]);

    // The restart died without starting a daemon: its marker counts for nothing, the CLI starts one.
    writer.kill('SIGKILL');
    expect(await waitFor('the CLI to finish', () => (exitCode !== undefined ? { code: exitCode } : false), 30_000)).toEqual({ code: 0 });
    const record = readRecordFile(h);
    expect(record).toBeDefined();
    expect(daemonsOf(h, [])).toEqual([record!.pid]);
  });

  it('a stale marker does not hold a client back: its writer is gone, or its deadline has passed', async () => {
    for (const stale of ['writer gone', 'deadline passed'] as const) {
      const h = home();
      const env = envFor(h);
      const marker =
        stale === 'writer gone' ? { pid: await deadPid(), until: Date.now() + 60_000 } : { pid: liveWriter().pid!, until: Date.now() - 1 };
      writeMarker(h, marker);
      const client = libraryClient(env);
      const first = (await client.lines.next((l) => Object.keys(l as object).length > 0, 30_000)) as Line;
      expect(first.restartWait, `${stale}: the client waited for a restart`).toBeUndefined();
      expect(first, stale).toMatchObject({ spawned: true });
      expect(readRecordFile(h)?.pid, stale).toBe(first.pid);
    }
  });
});
