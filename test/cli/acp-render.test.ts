// The acp engine in the terminal, in-process: `--agent` split as a shell splits words, the engine
// column, the line diff, and how an agent's plan, tool calls and thoughts read (cli/acp-*.ts).
import { describe, expect, it } from 'vitest';
import { acpEngineOptions, engineText, splitCommandLine } from '../../cli/acp-options.js';
import { AgentThought, diffLines } from '../../cli/acp-render.js';
import { renderEvent } from '../../cli/event-render.js';
import { unifiedDiff } from '../../cli/line-diff.js';
import { AstraError, type Session, type SessionEvent } from '../../protocol/index.js';

const ev = <T extends SessionEvent['type']>(type: T, data: SessionEvent<T>['data']): SessionEvent => ({ seq: 1, ts: 0, type, data }) as unknown as SessionEvent;
const texts = (e: SessionEvent, ctx = {}) => renderEvent(e, false, ctx).map((r) => r.text);

describe('--agent', () => {
  it('splits as sh does: blanks, single and double quotes, backslashes; nothing expanded', () => {
    expect(splitCommandLine('opencode acp')).toEqual(['opencode', 'acp']);
    expect(splitCommandLine(`  npx  '@zed-industries/codex-acp' --flag="a b" it\\'s "\\"q\\" \\$HOME" $HOME ''`)).toEqual([
      'npx',
      '@zed-industries/codex-acp',
      '--flag=a b',
      "it's",
      '"q" $HOME',
      '$HOME',
      '',
    ]);
  });

  it('refuses an empty command line, an unbalanced quote, a lone backslash and a bad --agent-env, with a typed error', () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(AstraError);
        return (e as AstraError).message;
      }
      throw new Error('no error');
    };
    expect(err(() => acpEngineOptions('   ', undefined))).toMatch(/--agent is empty/);
    expect(err(() => acpEngineOptions("''", undefined))).toMatch(/--agent is empty/);
    expect(err(() => acpEngineOptions(`opencode "acp`, undefined))).toMatch(/unbalanced " quote/);
    expect(err(() => acpEngineOptions(`opencode 'acp`, undefined))).toMatch(/unbalanced ' quote/);
    expect(err(() => acpEngineOptions('opencode \\', undefined))).toMatch(/lone backslash/);
    expect(err(() => acpEngineOptions(undefined, undefined))).toMatch(/needs the agent to run/);
    expect(err(() => acpEngineOptions('a', ['NOEQUALS']))).toMatch(/--agent-env takes NAME=value/);
    expect(err(() => acpEngineOptions('a', ['1X=y']))).toMatch(/--agent-env takes NAME=value/);
    expect(acpEngineOptions('"/opt/my agent/bin" acp --x', ['A=1', 'B=x=y'])).toEqual({ command: '/opt/my agent/bin', args: ['acp', '--x'], env: { A: '1', B: 'x=y' } });
  });

  it('shows an acp session as "acp <program>" in the engine column', () => {
    const s = { engine: 'acp', engineOptions: { command: '/usr/local/bin/opencode', args: ['acp'], env: {} } } as unknown as Session;
    expect(engineText(s)).toBe('acp opencode');
    expect(engineText({ engine: 'chat', engineOptions: { model: 'llama3.1' } } as unknown as Session)).toBe('chat llama3.1');
    expect(engineText({ engine: 'shell' } as unknown as Session)).toBe('shell');
  });
});

describe('the line diff', () => {
  it('prints hunks with context, removals before additions, and a new file against /dev/null', () => {
    const a = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12'].join('\n') + '\n';
    const b = a.replace('2\n', 'two\n').replace('11\n', '');
    expect(unifiedDiff('src/x.ts', a, b)).toEqual([
      '--- a/src/x.ts',
      '+++ b/src/x.ts',
      '@@ -1,5 +1,5 @@',
      '1',
      '-2',
      '+two',
      ' 3',
      ' 4',
      ' 5',
      '@@ -8,5 +8,4 @@',
      ' 8',
      ' 9',
      ' 10',
      '-11',
      ' 12',
    ].map((l) => (l === '1' ? ' 1' : l)));
    expect(unifiedDiff('/w/new.txt', null, 'hello\nworld\n')).toEqual(['--- /dev/null', '+++ /w/new.txt', '@@ -0,0 +1,2 @@', '+hello', '+world']);
    expect(unifiedDiff('same', 'x\n', 'x\n')).toEqual([]);
  });

  it('colours removed lines red and added lines green, and cuts a long diff with a count', () => {
    const lines = diffLines('f', 'old\n', 'new\n', true);
    expect(lines).toContain('\x1b[31m-old\x1b[0m');
    expect(lines).toContain('\x1b[32m+new\x1b[0m');
    const long = diffLines('f', null, Array.from({ length: 500 }, (_, i) => `l${i}`).join('\n'), false);
    expect(long).toHaveLength(201);
    expect(long[200]).toMatch(/^… 303 more diff lines/);
  });
});

describe("an agent's events as terminal lines", () => {
  it('a plan as a checklist, a tool call and its update with the title it had, a thought dimmed and its line ended', () => {
    expect(
      texts(
        ev('plan.updated', {
          turnId: 't',
          entries: [
            { content: 'read', priority: 'low', status: 'completed' },
            { content: 'edit', priority: 'high', status: 'in_progress' },
            { content: 'test', priority: 'medium', status: 'pending' },
          ],
        }),
      ),
    ).toEqual(['plan (1/3 done)', '  [x] read', '  [~] edit (high)', '  [ ] test']);
    const toolTitles = new Map<string, string>();
    expect(texts(ev('tool.call', { turnId: 't', callId: 'c1', name: 'edit', arguments: '{}', kind: 'edit', title: 'Edit a.txt', status: 'pending' }), { toolTitles })).toEqual([
      '┌ edit  Edit a.txt  [pending]  (c1)',
    ]);
    expect(texts(ev('tool.updated', { turnId: 't', callId: 'c1', status: 'completed', content: [{ type: 'diff', path: 'a.txt', oldText: 'a\n', newText: 'b\n' }] }), { toolTitles })).toEqual([
      '├ Edit a.txt  [completed]',
      '│ diff a.txt',
      '│ --- a/a.txt',
      '│ +++ b/a.txt',
      '│ @@ -1,1 +1,1 @@',
      '│ -a',
      '│ +b',
    ]);
    const thought = new AgentThought();
    expect(texts(ev('thought.delta', { turnId: 't', text: 'let me ' }), { thought })).toEqual(['thinking: let me ']);
    expect(texts(ev('thought.delta', { turnId: 't', text: 'see' }), { thought })).toEqual(['see']);
    expect(texts(ev('message.delta', { turnId: 't', text: 'Done.' }), { thought })).toEqual(['\n', 'Done.']);
    expect(renderEvent(ev('thought.delta', { turnId: 't', text: 'x' }), true, { thought: new AgentThought() })[0]!.text).toContain('\x1b[2m');
  });

  it('an approval with options lists them by number', () => {
    const e = ev('approval.requested', {
      turnId: 't',
      approvalId: 'a',
      command: 'Run rm -rf build',
      cwd: '/w',
      options: [
        { optionId: 'once', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'no', name: 'Reject', kind: 'reject_once' },
      ],
    });
    expect(texts(e)).toEqual(['approval requested: run `Run rm -rf build` in /w — 1 Allow once · 2 Reject']);
  });
});
