// What `--help` and error messages look like: durations as typed, lines that fit, one message style.
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/processes.js';
import { newSession, setup, useCliCleanup } from './cli-helpers.js';

useCliCleanup();

const COMMANDS = ['', 'new', 'sessions', 'attach', 'send', 'cancel', 'take', 'rename', 'archive', 'unarchive', 'rm', 'log', 'daemon', 'daemon start', 'daemon stop', 'daemon status', 'daemon logs', 'daemon restart'];

describe('astra --help', () => {
  it('the top-level help names ASTRA_HOME, how sessions are named, and every exit code', async () => {
    const { env } = setup();
    const r = await runCli(['--help'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Environment:\n {2}ASTRA_HOME {3}keep every Astra file/m);
    expect(r.stdout).toMatch(/^Exit codes:\n {2}0 {2}done\n {2}1 {2}failed[^\n]*\n {2}2 {2}usage error[^\n]*\n {2}3 {2}`astra daemon status`: no daemon is running\n/m);
    expect(r.stdout).toMatch(/130 when the\s+turn was cancelled/);
    expect(r.stdout).toMatch(/unique prefix of the id \(`ses_` may be left out\)\s+or by a unique\s+title/);
    for (const c of ['rename <session> <title>', 'archive <session>', 'rm [options] <session>', 'log [options] <session>', 'attach [options] [session]']) expect(r.stdout).toContain(c);
  });

  it('every command\'s help fits in 100 columns and shows duration defaults as durations', async () => {
    const { env } = setup();
    for (const c of COMMANDS) {
      const r = await runCli([...c.split(' ').filter(Boolean), '--help'], env);
      expect(r.code, c).toBe(0);
      for (const line of r.stdout.split('\n')) expect(line.length, `astra ${c} --help: ${line}`).toBeLessThanOrEqual(100);
      expect(r.stdout, c).not.toMatch(/default: "\d+"\)/); // numbers unquoted, durations as durations
    }
    expect((await runCli(['daemon', 'stop', '--help'], env)).stdout).toMatch(/--timeout <duration> +how long to wait for a graceful exit \(default: 5s\)/);
    expect((await runCli(['daemon', 'logs', '--help'], env)).stdout).toMatch(/how many lines from the end \(default: 50\)/);
  });
});

describe('error messages', () => {
  it('start with "astra: " and a lower-case word, also when the daemon wrote the message', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    expect((await runCli(['send', id, 'sleep 30'], env)).code).toBe(0);
    const busy = await runCli(['archive', id], env);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(new RegExp(`^astra: session ${id} has a running turn; cancel it before archiving\\.\\n$`));
    expect((await runCli(['cancel', id, '--wait'], env)).code).toBe(0);
  });
});
