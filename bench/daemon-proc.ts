// A real Astra daemon for the suite: spawned with its own temp ASTRA_HOME, waited for until it answers,
// killed by its pid at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { AstraClient, DAEMON_NODE_FLAGS } from '../client/index.js';
import { DAEMON, tempDir, waitFor } from './lib.js';

export class DaemonProc {
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  private proc: ChildProcess | undefined;

  constructor(extraEnv: Record<string, string> = {}) {
    this.home = tempDir('astra-bench-');
    this.env = { ...process.env, ASTRA_HOME: this.home, ASTRA_IDLE_TIMEOUT_MS: '0', ...extraEnv };
  }

  get pid(): number {
    if (!this.proc?.pid) throw new Error('bench: the daemon is not running');
    return this.proc.pid;
  }

  async start(nodeArgs: string[] = []): Promise<void> {
    // As `astra` starts it (connect-or-spawn): the same node flags.
    // BENCH_DAEMON_NODE_FLAGS adds flags, to try one before proposing it for DAEMON_NODE_FLAGS.
    const extra = process.env.BENCH_DAEMON_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
    this.proc = spawn(process.execPath, [...DAEMON_NODE_FLAGS, ...extra, ...nodeArgs, DAEMON], { env: this.env, stdio: ['ignore', 'ignore', 'inherit'] });
    const proc = this.proc;
    await waitFor('the bench daemon answering', 15_000, async () => {
      if (proc.exitCode !== null) throw new Error(`bench: the daemon exited with ${proc.exitCode}; see ${this.home}/logs/daemon.log`);
      try {
        const c = await AstraClient.connect({ clientName: 'bench-probe', home: this.home, autoStart: false, reconnect: false });
        await c.close();
        return true;
      } catch {
        return undefined;
      }
    }, 20);
  }

  client(name: string): Promise<AstraClient> {
    return AstraClient.connect({ clientName: name, home: this.home, autoStart: false, reconnect: false });
  }

  /** SIGTERM, then SIGKILL if it has not exited within 5 s; removes the temp home. */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    this.proc = undefined;
    fs.rmSync(this.home, { recursive: true, force: true });
  }
}
