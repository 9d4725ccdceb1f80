// The acp engine from the terminal, with real processes: `astra new --engine acp --agent …` on a real
// daemon (its own ASTRA_HOME) running the fake ACP agent of test/engines/acp/, `astra send --wait`,
// `astra log`, and `astra attach` (on pipes, typing as a user would) showing the agent's thought,
// plan, tool call and diff, and answering its permission request by the option's number.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, waitFor } from '../helpers/processes.js';
import { listJson, setup, startCli, useCliCleanup } from './cli-helpers.js';

const cleanup = useCliCleanup();
const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
/** The agent's command line as a user types it: node, then the script (quoted, as a path may need). */
const AGENT_LINE = `${process.execPath} '${AGENT}'`;

async function acpSession(env: NodeJS.ProcessEnv, extra: string[] = []): Promise<string> {
  const r = await runCli(['new', '--engine', 'acp', '--agent', AGENT_LINE, '--title', 'agent', ...extra], env, 40_000);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

async function stopDaemon(env: NodeJS.ProcessEnv): Promise<void> {
  await runCli(['daemon', 'stop'], env);
}

describe('astra new --engine acp', () => {
  it('creates a session running the agent; sessions shows "acp <program>"; send --wait prints the answer', async () => {
    const { env } = setup('acpn');
    cleanup(() => stopDaemon(env));
    const id = await acpSession(env, ['--agent-env', 'FAKE_NOTE=x=y']);
    const [row] = await listJson(env);
    expect(row).toMatchObject({ id, engine: 'acp', engineOptions: { command: process.execPath, args: [AGENT], env: { FAKE_NOTE: 'x=y' } } });
    const table = await runCli(['sessions'], env);
    expect(table.stdout).toMatch(new RegExp(`${id}\\s+agent\\s+acp ${path.basename(process.execPath)}\\s+idle`));

    const sent = await runCli(['send', id, 'hello there', '--wait'], env, 30_000);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toBe('echo: hello there\n');
  });

  it('refuses an empty or unbalanced --agent before anything is sent: no daemon was even started', async () => {
    const { env } = setup('acpb');
    for (const agent of ['', '   ', `node "unclosed`]) {
      const r = await runCli(['new', '--engine', 'acp', '--agent', agent], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^astra: --agent (is empty|has an unbalanced " quote)/);
    }
    const noAgent = await runCli(['new', '--engine', 'acp'], env);
    expect(noAgent.stderr).toMatch(/the acp engine needs the agent to run: --agent/);
    const wrongEngine = await runCli(['new', '--engine', 'chat', '--agent', 'opencode acp'], env);
    expect(wrongEngine.stderr).toMatch(/--agent and --agent-env are options of the acp engine/);
    expect((await runCli(['daemon', 'status'], env)).code).toBe(3);
  });
});

describe('what an agent sends, in the terminal', () => {
  it('send --wait, log and attach show the thought, the plan as a checklist, the tool call with its title and the diff', async () => {
    const { env } = setup('acpr');
    cleanup(() => stopDaemon(env));
    const id = await acpSession(env);
    const sent = await runCli(['send', id, 'rich 5', '--wait'], env, 30_000);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toBe('done\n');
    const shown = [
      'thinking: thinking…',
      'plan (0/1 done)',
      '  [~] edit a.txt (high)',
      '┌ edit  Edit a.txt  [pending]  (t1)',
      '│ at /w/a.txt:1',
      '├ Edit a.txt  [completed]',
      '│ diff /w/a.txt',
      '│ --- /w/a.txt',
      '│ +++ /w/a.txt',
      '│ @@ -1,1 +1,1 @@',
      '│ -old',
      '│ +xxxxx',
    ].join('\n');
    expect(sent.stderr).toContain(shown);

    const log = await runCli(['log', id], env);
    expect(log.stdout).toContain(`❯ rich 5\n${log.stdout.match(/agent .*: a new session\n/)![0]}${shown}\ndone\n✔ turn completed`);

    // An attach replays the same, and shows a new turn's plan again as it arrives.
    const a = startCli(['attach', id], env);
    await waitFor('the attach to take control', () => /took control/.test(a.out()) || undefined, 20_000);
    expect(a.out()).toContain(shown);
    a.child.stdin!.write('rich 2\n');
    await waitFor('the second turn to end', () => (a.out().match(/✔ turn completed/g)?.length === 2 ? true : undefined), 20_000);
    expect(a.out()).toContain('│ +xx\n');
    expect(a.out().split('plan (0/1 done)')).toHaveLength(3);
    a.child.stdin!.end();
    expect(await a.exited).toBe(0);
  });

  it("an approval lists the agent's options; the controller picks one by number and its optionId is sent", async () => {
    const { env } = setup('acpa');
    cleanup(() => stopDaemon(env));
    const id = await acpSession(env);
    const a = startCli(['attach', id], env);
    await waitFor('the attach to take control', () => /took control/.test(a.out()) || undefined, 20_000);
    a.child.stdin!.write('permission\n');
    await waitFor('the prompt', () => /approve `Run rm -rf build`\? press 1 Allow once · 2 Always allow · 3 Reject; or y or n/.test(a.out()) || undefined, 20_000);
    expect(a.out()).toContain('approval requested: run `Run rm -rf build` in');
    a.child.stdin!.write('2');
    await waitFor('the answer', () => /✔ turn completed/.test(a.out()) || undefined, 20_000);
    expect(a.out()).toMatch(/approved by astra attach[^\n]*\(option always\)/);
    expect(a.out()).toMatch(/^chose always$/m);

    // A number that is no option is not sent; y then picks the first allow option.
    a.child.stdin!.write('permission\n');
    await waitFor('the second prompt', () => (a.out().match(/press 1 Allow once/g)?.length === 2 ? true : undefined), 20_000);
    a.child.stdin!.write('7');
    await waitFor('the hint', () => /answer the approval first/.test(a.out()) || undefined);
    a.child.stdin!.write('y');
    await waitFor('the second answer', () => (a.out().match(/✔ turn completed/g)?.length === 2 ? true : undefined), 20_000);
    expect(a.out()).toMatch(/^chose once$/m);
    a.child.stdin!.end();
    await a.exited;
  });
});
