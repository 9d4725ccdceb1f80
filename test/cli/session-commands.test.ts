// `astra new`, `sessions`, `send`, `cancel`, `take` against a real daemon, a temp ASTRA_HOME each.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, waitFor } from '../helpers/processes.js';
import { listJson, newSession, sessionRows, setup, startCli, useCliCleanup } from './cli-helpers.js';

useCliCleanup();

describe('astra new and sessions', () => {
  it('new prints only the id, and sessions --json lists it with what was asked for', async () => {
    const { home, env } = setup();
    const dir = fs.mkdtempSync(path.join(home, 'work-'));
    const r = await runCli(['new', '--title', 'first one', '--cwd', dir, '--approval', 'auto'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ses_[\w-]+\n$/);
    const id = r.stdout.trim();
    const second = await newSession(env);

    const list = await listJson(env);
    expect(list.map((s) => s.id).sort()).toEqual([id, second].sort());
    expect(list.find((s) => s.id === id)).toMatchObject({ id, title: 'first one', cwd: dir, approvalPolicy: 'auto', state: 'idle', observers: 0 });
    expect(list.find((s) => s.id === second)).toMatchObject({ approvalPolicy: 'ask', cwd: process.cwd() });

    const table = await runCli(['sessions'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+TITLE\s+ENGINE\s+STATE\s+CONTROLLER\s+OBSERVERS\s+LAST ACTIVITY$/m);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+first one\\s+shell\\s+idle\\s+-\\s+0\\s+\\d+s ago$`, 'm'));
  });

  it("a session shows the engine's options it kept (no long system prompt) and its approval timeout: sessions --json and the table's ENGINE column", async () => {
    const { env } = setup();
    const prompt = 'You are terse. '.repeat(40);
    const r = await runCli(['new', '--model', 'llama3.1', '--base-url', 'http://127.0.0.1:11434/v1', '--max-steps', '3', '--system-prompt', prompt, '--approval-timeout', '90'], env);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();
    const s = (await listJson(env)).find((x) => x.id === id)!;
    expect(s).toMatchObject({ engine: 'chat', engineOptions: { model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', maxSteps: 3 }, approvalTimeoutMs: 90_000 });
    expect(JSON.stringify(s)).not.toContain('You are terse');
    const shell = await newSession(env);
    const plain = (await listJson(env)).find((x) => x.id === shell)!;
    expect(plain.engineOptions).toBeUndefined();
    expect(plain.approvalTimeoutMs).toBeUndefined();
    const table = await runCli(['sessions'], env);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+chat llama3\\.1\\s+idle`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${shell}\\s+.*\\s+shell\\s+idle`, 'm'));
  });

  it('the sessions table lines up CJK and emoji titles by display columns', async () => {
    const { env } = setup();
    await runCli(['new', '--title', '会话标题 🚀'], env);
    await runCli(['new', '--title', 'plain title'], env);
    await runCli(['new', '--title', '很长很长很长很长很长很长很长很长的标题'], env);
    const table = await runCli(['sessions'], env);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    // Where STATE starts, in display columns, is the same on every line.
    const { displayWidth } = await import('../../cli/view/width.js');
    const stateAt = (l: string) => displayWidth(l.slice(0, l.search(/ (idle|STATE) /) + 1));
    const columns = new Set(lines.map(stateAt));
    expect(columns.size, table.stdout).toBe(1);
    expect(table.stdout).toMatch(/ (很长){7}…  shell   idle/); // cut within 30 columns, whole characters
  });

  it('a bad --approval value is a usage error that creates nothing', async () => {
    const { env } = setup();
    const r = await runCli(['new', '--approval', 'sometimes'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Allowed choices are ask, auto/);
    expect(await listJson(env)).toEqual([]);
  });
});

describe('astra send', () => {
  it('--wait exits with the command\'s exit code and passes its stdout and stderr through (on pipes: a terminal has one stream)', async () => {
    const { env } = setup('scli', { ASTRA_TERMINAL: 'pipes' });
    const id = await newSession(env, ['--approval', 'auto']);
    const r = await runCli(['send', id, `sh -c 'echo out; echo err >&2; exit 3'`, '--wait'], env);
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toBe('err\n');
    expect(r.code).toBe(3);
    // The lease was released: control is free again.
    expect((await listJson(env))[0]!.controller).toBeNull();
  });

  it('--wait --json prints the turn\'s events as JSON lines, output as text; a unique id prefix is enough', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    const r = await runCli(['send', id.slice(0, 10), 'printf "a\\nb"', '--wait', '--json'], env);
    expect(r.code).toBe(0);
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; sessionId: string; data: Record<string, unknown> });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['turn.started', 'command.started', 'command.output', 'command.completed', 'turn.completed']));
    expect(events.every((e) => e.sessionId === id)).toBe(true);
    const output = events.filter((e) => e.type === 'command.output').map((e) => e.data.data).join('');
    expect(output).toMatch(/^a\r?\nb$/); // \r\n from a pseudo-terminal
    expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { status: 'completed', exitCode: 0 } });
  });

  it('on an ask session it needs --yes: without, it says so and exits non-zero; with, it runs', async () => {
    const { env } = setup();
    const id = await newSession(env);
    const refused = await runCli(['send', id, 'echo never', '--wait'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/approval needed: .*astra attach ses_\w+.*or pass --yes/);
    // The turn waits for an approval; control is free for whoever attaches to give it.
    const waiting = (await listJson(env))[0]!;
    expect(waiting.runningTurnId).toEqual(expect.any(String));
    expect(waiting.controller).toBeNull();

    const cancelled = await runCli(['cancel', id, '--wait'], env);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(/turn cancelled/);

    const yes = await runCli(['send', id, 'echo approved', '--wait', '--yes'], env);
    expect(yes.stderr).toBe('');
    expect(yes.stdout).toMatch(/^approved\r?\n$/);
    expect(yes.code).toBe(0);
  });

  it('fails with lease_held naming the holder while another client controls; take frees control and the holder is told', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    // A non-terminal attach: no footer, plain lines.
    const holder = startCli(['attach', id], env);
    await waitFor('the attach to take control', async () => ((await sessionRows(env))[0]!.controller ? true : undefined));
    expect(holder.out()).not.toMatch(/\x1b\[/);

    const r = await runCli(['send', id, 'echo hi', '--wait'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`lease_held: session ${id} is controlled by astra attach \\(pid ${holder.child.pid}\\).*astra take ${id}`));

    const take = await runCli(['take', id], env);
    expect(take.code).toBe(0);
    expect(take.stdout).toMatch(new RegExp(`took control of ${id} from astra attach \\(pid ${holder.child.pid}\\); control is now free`));
    await waitFor('the attach to be told', () => /control taken over by astra take \(pid \d+\); now observing/.test(holder.out()) || undefined);

    const sent = await runCli(['send', id, 'echo hi', '--wait'], env);
    expect(sent.stdout).toMatch(/^hi\r?\n$/);
    expect(sent.code).toBe(0);
    // The attached observer streamed it too.
    await waitFor('the observer to see the output', () => /^hi$/m.test(holder.out()) || undefined);

    holder.child.stdin!.end(); // end of input detaches
    expect(await holder.exited).toBe(0);
    expect(holder.out()).toMatch(/detached from ses_\w+ \(end of input\)/);
  });

  it('cancel stops a running turn and send --wait then exits 130; send without --wait prints the turn id', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    const waiting = startCli(['send', id, 'echo started; sleep 30', '--wait'], env);
    await waitFor('the command to start', () => /started\r?\n/.test(waiting.out()) || undefined);
    // send lets go of control once the turn is underway; its output can arrive a moment before that.
    await waitFor('send to release control', async () => ((await sessionRows(env))[0]!.controller === null ? true : undefined));

    const c = await runCli(['cancel', id, '--wait'], env);
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(/^cancelling turn turn_\w+ of ses_\w+$/m);
    expect(c.stdout).toMatch(/^turn cancelled/m);
    expect(await waiting.exited).toBe(130);
    expect(waiting.err()).toMatch(/turn cancelled/);

    const nothing = await runCli(['cancel', id], env);
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toMatch(/no turn is running/);

    const bg = await runCli(['send', id, 'echo bg'], env);
    expect(bg.code).toBe(0);
    expect(bg.stdout).toMatch(/^turn_[\w-]+\n$/);
  });

  it('names an unknown or ambiguous session clearly', async () => {
    const { env } = setup();
    const missing = await runCli(['send', 'ses_nope', 'true'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no session has the id, id prefix or title "ses_nope".*astra sessions/);
    await newSession(env);
    await newSession(env);
    const ambiguous = await runCli(['attach', 'ses_'], env);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(/"ses_" matches 2 sessions; give more of the id:\n {2}ses_\w+\n {2}ses_\w+\n/);
  });
});
