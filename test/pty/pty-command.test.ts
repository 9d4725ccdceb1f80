import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { startPtyCommand, type PtyCommand, type PtyCommandOptions } from '../../pty/pty-command.js';
import { LIMITS, isAstraError } from '../../protocol/index.js';
import { skipWithout, type SystemTool } from '../helpers/system-tools.js';

const PYTHON3: SystemTool = { name: 'python3', pkg: 'python3', probe: () => spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0 };

const started: PtyCommand[] = [];

afterEach(async () => {
  // Every command a test started is gone before the next test: cancel it and wait for its end.
  for (const c of started.splice(0)) {
    c.cancel();
    await c.done;
  }
});

interface Run {
  cmd: PtyCommand;
  text(): string;
  chunks: { data: Buffer; stream: string }[];
  /** Resolves when the output so far contains `needle` (with a deadline). */
  waitFor(needle: string | RegExp, timeoutMs?: number): Promise<string>;
}

function run(command: string, extra: Partial<PtyCommandOptions> = {}): Run {
  const chunks: { data: Buffer; stream: string }[] = [];
  const waiters: (() => void)[] = [];
  const text = () => Buffer.concat(chunks.map((c) => c.data)).toString('utf8');
  const cmd = startPtyCommand({
    command,
    cwd: os.tmpdir(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), LANG: 'C.UTF-8' },
    cols: 80,
    rows: 24,
    onOutput(data, stream) {
      chunks.push({ data, stream });
      for (const w of waiters.splice(0)) w();
      return true;
    },
    drained: () => Promise.resolve(),
    killGraceMs: 300,
    ...extra,
  });
  started.push(cmd);
  const waitFor = (needle: string | RegExp, timeoutMs = 10_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${String(needle)} in output within ${timeoutMs} ms; got ${JSON.stringify(text())}`)), timeoutMs);
      const check = () => {
        const t = text();
        if (typeof needle === 'string' ? t.includes(needle) : needle.test(t)) {
          clearTimeout(timer);
          resolve(t);
        } else waiters.push(check);
      };
      check();
    });
  return { cmd, text, chunks, waitFor };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a command in a pseudo-terminal', () => {
  it.skipIf(skipWithout(PYTHON3))('reads a line typed into its terminal and prints it', async () => {
    const r = run(`python3 -c "print('got:' + input('name? '))"`);
    expect(r.cmd.tty).toBe(true);
    await r.waitFor('name? ');
    expect(r.cmd.write(Buffer.from('astra\r'))).toBe(true);
    const result = await r.cmd.done;
    expect(result).toMatchObject({ exitCode: 0, signal: null, tty: true, cancelled: false });
    expect(r.text()).toContain('got:astra');
    // A terminal has one stream: the echo and the program's output both arrive as stdout.
    expect(new Set(r.chunks.map((c) => c.stream))).toEqual(new Set(['stdout']));
  });

  it('reports its size to the program and a resize reaches it', async () => {
    const r = run('stty size; read line; stty size', { cols: 100, rows: 30 });
    await r.waitFor('30 100');
    expect(r.cmd.resize(120, 40)).toBe(true);
    expect([r.cmd.cols, r.cmd.rows]).toEqual([120, 40]);
    r.cmd.write(Buffer.from('\r'));
    await r.waitFor('40 120');
    expect((await r.cmd.done).exitCode).toBe(0);
  });

  it('echoes input through cat and ends on Ctrl-D', async () => {
    const r = run('cat');
    r.cmd.write(Buffer.from('hello 世界\r'));
    // Once from the terminal's echo, once from cat.
    await r.waitFor(/hello 世界[\s\S]*hello 世界/);
    r.cmd.write(Buffer.from([4]));
    expect((await r.cmd.done).exitCode).toBe(0);
  });

  it('runs in its own process group and a cancel kills the whole group', async () => {
    const r = run('sleep 300 & echo "child:$!"; wait');
    const out = await r.waitFor(/child:\d+/);
    const childPid = Number(/child:(\d+)/.exec(out)![1]);
    expect(processAlive(childPid)).toBe(true);
    r.cmd.cancel();
    const result = await r.cmd.done;
    expect(result.cancelled).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(result.signal).not.toBeNull();
    await waitUntil(() => !processAlive(childPid), 5000, `sleep ${childPid} still alive after cancel`);
  });

  it('reports a non-zero exit code', async () => {
    const r = run('exit 3');
    expect(await r.cmd.done).toMatchObject({ exitCode: 3, signal: null, cancelled: false });
  });

  it('stops the program while the consumer is behind and loses no byte', async () => {
    let release: (() => void) | undefined;
    let behind = true;
    let calls = 0;
    const chunks: Buffer[] = [];
    const cmd = startPtyCommand({
      command: 'seq 1 200000',
      cwd: os.tmpdir(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      cols: 80,
      rows: 24,
      readAheadBytes: 64 * 1024,
      onOutput(data) {
        calls++;
        chunks.push(data);
        return !behind;
      },
      drained: () => new Promise<void>((r) => (release = r)),
    });
    started.push(cmd);
    await waitUntil(() => release !== undefined, 5000, 'never asked to wait for a drain');
    // Held: no further calls, and the program (1.3 MB to write) cannot finish while reading is paused.
    let finished = false;
    void cmd.done.then(() => (finished = true));
    const deadline = Date.now() + 300;
    while (Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(finished).toBe(false);
    expect(calls).toBe(1);
    behind = false;
    release!();
    const result = await cmd.done;
    expect(result.exitCode).toBe(0);
    const lines = Buffer.concat(chunks).toString().split('\r\n').filter(Boolean);
    expect(lines.length).toBe(200000);
    expect(lines[199999]).toBe('200000');
  });

  it('delivers a streaming program\'s output whole and in order, however its reads were gathered into chunks', async () => {
    // A terminal hands out at most 4095 bytes a read on Linux: once a chunk says the program streams,
    // the next ones gather reads for a millisecond (output-coalescer.ts). How many reads a chunk gets
    // depends on how fast this machine ran the program: output-coalescer.test.ts checks the gathering
    // with a fake clock, and `npm run bench` (terminal) counts the chunks of a real flood.
    const r = run('seq 1 300000');
    expect((await r.cmd.done).exitCode).toBe(0);
    const lines = Buffer.concat(r.chunks.map((c) => c.data)).toString().split('\r\n').filter(Boolean);
    expect(lines.length).toBe(300000);
    expect(lines[0]).toBe('1');
    expect(lines[299999]).toBe('300000');
    for (const c of r.chunks) expect(c.data.length).toBeLessThanOrEqual(LIMITS.maxOutputChunkBytes);
  });

  it('delivers every byte a program wrote before it exited, even to a consumer that stays behind', async () => {
    for (let round = 0; round < 3; round++) {
      const chunks: Buffer[] = [];
      const cmd = startPtyCommand({
        command: 'seq 1 200000',
        cwd: os.tmpdir(),
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        cols: 80,
        rows: 24,
        onOutput(data) {
          chunks.push(data);
          // A busy event loop: the reader lags the program, which exits with output still buffered.
          const until = Date.now() + 1;
          while (Date.now() < until);
          return false;
        },
        drained: () => new Promise<void>((r) => setTimeout(r, 1)),
      });
      started.push(cmd);
      expect((await cmd.done).exitCode).toBe(0);
      const text = Buffer.concat(chunks).toString();
      expect(text.split('\r\n').filter(Boolean).length).toBe(200000);
      expect(text).not.toContain('astra-drain');
    }
  });

  it('rejects a size that is not a terminal size with a typed error', () => {
    expect(() => run('true', { cols: 0 })).toThrow(/cols must be an integer/);
    const r = run('sleep 5');
    try {
      r.cmd.resize(80, 1.5);
      expect.unreachable();
    } catch (e) {
      expect(isAstraError(e, 'invalid_params')).toBe(true);
    }
  });

  it('refuses input after the command ended', async () => {
    const r = run('true');
    await r.cmd.done;
    expect(r.cmd.write(Buffer.from('x'))).toBe(false);
    expect(r.cmd.resize(90, 20)).toBe(false);
  });
});

describe('the pipe fallback', () => {
  it('runs on pipes when forced and says so', async () => {
    const r = run('echo out; echo err >&2; read x; echo "in:$x"', { mode: 'pipes' });
    expect(r.cmd.tty).toBe(false);
    expect(r.cmd.fallbackReason).toMatch(/turned off/);
    await r.waitFor('err');
    r.cmd.write(Buffer.from('typed\n'));
    const result = await r.cmd.done;
    expect(result).toMatchObject({ exitCode: 0, tty: false });
    expect(r.text()).toContain('in:typed');
    // Without a terminal stderr stays its own stream.
    expect(r.chunks.find((c) => c.data.toString().includes('err'))!.stream).toBe('stderr');
    expect(r.cmd.resize(100, 30)).toBe(false);
  });

  it('falls back to pipes when the native module does not load', async () => {
    const r = run('test -t 1 && echo tty || echo notty', {
      loadPty: () => {
        throw new Error('Cannot find module pty.node');
      },
    });
    expect(r.cmd.tty).toBe(false);
    expect(r.cmd.fallbackReason).toMatch(/did not load: Cannot find module pty.node/);
    expect((await r.cmd.done).tty).toBe(false);
    expect(r.text()).toBe('notty\n');
  });

  it('falls back to pipes when opening a terminal fails', async () => {
    const r = run('echo fine', {
      loadPty: () => ({
        spawn: () => {
          throw new Error('openpty failed');
        },
      }),
    });
    expect(r.cmd.fallbackReason).toMatch(/openpty failed/);
    expect((await r.cmd.done).exitCode).toBe(0);
    expect(r.text()).toBe('fine\n');
  });

  it('without a fallback reason a real terminal is what the program sees', async () => {
    const r = run('test -t 1 && echo tty || echo notty');
    await r.cmd.done;
    expect(r.text()).toBe('tty\r\n');
  });
});

async function waitUntil(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(what);
    await new Promise((r) => setTimeout(r, 10));
  }
}
