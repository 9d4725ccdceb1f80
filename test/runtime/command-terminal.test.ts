// The shell engine's commands in a pseudo-terminal, through the runtime: command/input and
// command/resize reach the running command; a turn that is not running says so, typed.
import * as fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { isAstraError } from '../../protocol/index.js';
import { Runtime } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { tempDir, waitFor } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(terminal: 'auto' | 'pipes' = 'auto') {
  const dir = tempDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal }) } });
  cleanups.push(() => rt.close());
  const events: SessionEvent[] = [];
  rt.on('event', (e) => events.push(e));
  const ended = new Map<string, string>();
  rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
  const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
  const output = (turnId: string) =>
    Buffer.concat(
      events.filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output' && e.data.turnId === turnId).map((e) => Buffer.from(e.data.data)),
    ).toString();
  return { rt, id: s.id, events, ended, output };
}

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isAstraError(e)) return e.reason;
    throw e;
  }
  return 'resolved';
}

describe('commands in a pseudo-terminal', () => {
  it('runs a command with a terminal (tty: true, one stream) that reads the input the controller sends', async () => {
    const { rt, id, events, ended, output } = await setup();
    const { turnId } = await rt.startTurn(id, { text: 'test -t 0 && echo TTY; read line; echo "got:$line" >&2' }, 'k1');
    const started = await waitFor('command.started', () => events.find((e): e is SessionEvent<'command.started'> => e.type === 'command.started'));
    expect(started.data.tty).toBe(true);
    await waitFor('TTY printed', () => output(turnId).includes('TTY'));
    await rt.commandInput(id, turnId, Buffer.from('hello\r'));
    await waitFor('the turn to end', () => ended.get(turnId));
    expect(output(turnId)).toContain('got:hello');
    // A terminal has one stream: what went to stderr came out as stdout.
    expect(events.some((e) => e.type === 'command.output' && (e as SessionEvent<'command.output'>).data.stream === 'stderr')).toBe(false);
  });

  it('starts commands at the size the controller last sent, and resizes the running one', async () => {
    const { rt, id, ended, output } = await setup();
    const first = await rt.startTurn(id, { text: 'stty size; read x; stty size' }, 'k1');
    await waitFor('the default size', () => output(first.turnId).includes('24 80'));
    expect(await rt.commandResize(id, first.turnId, 100, 30)).toEqual({ applied: true });
    await rt.commandInput(id, first.turnId, Buffer.from('\r'));
    await waitFor('the first turn to end', () => ended.get(first.turnId));
    expect(output(first.turnId)).toContain('30 100');
    const second = await rt.startTurn(id, { text: 'stty size' }, 'k2');
    await waitFor('the second turn to end', () => ended.get(second.turnId));
    expect(output(second.turnId)).toContain('30 100');
  });

  it('starts the first command of a session at the size turn/start carries, and keeps it for the next', async () => {
    const { rt, id, ended, output } = await setup();
    const first = await rt.startTurn(id, { text: 'stty size' }, 'k1', { cols: 132, rows: 41 });
    await waitFor('the first turn to end', () => ended.get(first.turnId));
    expect(output(first.turnId)).toMatch(/^41 132\r?$/m);
    const second = await rt.startTurn(id, { text: 'stty size' }, 'k2');
    await waitFor('the second turn to end', () => ended.get(second.turnId));
    expect(output(second.turnId)).toMatch(/^41 132\r?$/m);
  });

  it('answers input to an ended turn invalid_state and to an unknown turn not_found', async () => {
    const { rt, id, ended } = await setup();
    const { turnId } = await rt.startTurn(id, { text: 'true' }, 'k1');
    await waitFor('the turn to end', () => ended.get(turnId));
    expect(await reason(rt.commandInput(id, turnId, Buffer.from('x')))).toBe('invalid_state');
    expect(await reason(rt.commandResize(id, turnId, 90, 20))).toBe('invalid_state');
    expect(await reason(rt.commandInput(id, 'turn_nope', Buffer.from('x')))).toBe('not_found');
  });

  it('on pipes (ASTRA_TERMINAL=pipes) says tty: false, keeps stderr apart, and gives the command end-of-input at once, as before terminals', async () => {
    const { rt, id, events, ended, output } = await setup('pipes');
    const { turnId } = await rt.startTurn(id, { text: 'read line; echo "got:[$line]"; echo err >&2' }, 'k1');
    const started = await waitFor('command.started', () => events.find((e): e is SessionEvent<'command.started'> => e.type === 'command.started'));
    expect(started.data.tty).toBe(false);
    // Nobody can type into a command on pipes yet (astra attach does not send input): a command that
    // reads stdin must not wait for input that cannot come.
    await waitFor('the turn to end', () => ended.get(turnId));
    expect(output(turnId)).toContain('got:[]');
    expect(events.some((e) => e.type === 'command.output' && (e as SessionEvent<'command.output'>).data.stream === 'stderr')).toBe(true);
    expect(await rt.commandResize(id, turnId, 90, 20).catch((e: Error) => e.message)).toMatch(/ended/);
  });
});
