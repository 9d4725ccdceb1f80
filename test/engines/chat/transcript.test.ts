import { describe, expect, it } from 'vitest';
import { INTERRUPTED_RESULT_OUTPUT, buildTranscript, interruptedToolResult, unansweredToolCalls, type RecordedEvent } from '../../../engines/chat/index.js';

const ev = (type: string, data: Record<string, unknown>): RecordedEvent => ({ type, data });

describe('the transcript rebuilt from a session\'s events', () => {
  const twoTurns = [
    ev('session.created', { title: '', cwd: '/w', engine: 'chat', approvalPolicy: 'ask' }),
    ev('turn.started', { turnId: 't1', input: { text: 'list files' } }),
    ev('message.user', { turnId: 't1', text: 'list files' }),
    ev('message.delta', { turnId: 't1', text: 'Let me look.' }),
    ev('message.completed', { turnId: 't1', text: 'Let me look.', finishReason: 'tool_calls' }),
    ev('tool.call', { turnId: 't1', callId: 'c1', name: 'shell', arguments: '{"command":"ls"}' }),
    ev('approval.requested', { turnId: 't1', approvalId: 'a1', command: 'ls', cwd: '/w' }),
    ev('command.started', { turnId: 't1', command: 'ls', cwd: '/w' }),
    ev('command.output', { turnId: 't1', stream: 'stdout', data: Buffer.from('a\nb\n') }),
    ev('tool.result', { turnId: 't1', callId: 'c1', status: 'succeeded', exitCode: 0, output: 'a\nb\n\n[exit code 0]' }),
    ev('message.completed', { turnId: 't1', text: 'Two files: a and b.', finishReason: 'stop' }),
    ev('usage', { turnId: 't1', promptTokens: 1, completionTokens: 1 }),
    ev('turn.completed', { turnId: 't1', status: 'completed' }),
    ev('message.user', { turnId: 't2', text: 'thanks' }),
  ];

  it('holds the system prompt, the user messages, assistant messages with their tool calls and the tool results, in order', () => {
    expect(buildTranscript(twoTurns, 'sys')).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'list files' },
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'a\nb\n\n[exit code 0]' },
      { role: 'assistant', content: 'Two files: a and b.' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('answers a tool call left without a result (a crash) with an interrupted result, so the request stays valid', () => {
    const crashed = [
      ev('message.user', { turnId: 't1', text: 'build it' }),
      ev('message.completed', { turnId: 't1', text: '', finishReason: 'tool_calls' }),
      ev('tool.call', { turnId: 't1', callId: 'c1', name: 'shell', arguments: '{"command":"make"}' }),
      ev('tool.call', { turnId: 't1', callId: 'c2', name: 'shell', arguments: '{"command":"make test"}' }),
      ev('tool.result', { turnId: 't1', callId: 'c1', status: 'succeeded', exitCode: 0, output: 'ok' }),
      ev('turn.completed', { turnId: 't1', status: 'interrupted' }),
      ev('message.user', { turnId: 't2', text: 'again' }),
    ];
    expect(unansweredToolCalls(crashed)).toEqual([{ turnId: 't1', callId: 'c2' }]);
    const t = buildTranscript(crashed, 's');
    expect(t.slice(2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [expect.objectContaining({ id: 'c1' }), expect.objectContaining({ id: 'c2' })] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'tool', tool_call_id: 'c2', content: INTERRUPTED_RESULT_OUTPUT },
      { role: 'user', content: 'again' },
    ]);
    expect(interruptedToolResult('t1', 'c2')).toEqual({ turnId: 't1', callId: 'c2', status: 'interrupted', output: INTERRUPTED_RESULT_OUTPUT });
    expect(unansweredToolCalls([...crashed, ev('tool.result', interruptedToolResult('t1', 'c2'))])).toEqual([]);
  });

  it('keeps a cancelled partial answer and drops an empty one', () => {
    const t = buildTranscript(
      [
        ev('message.user', { turnId: 't1', text: 'q1' }),
        ev('message.completed', { turnId: 't1', text: 'Half an ans', finishReason: 'cancelled' }),
        ev('message.user', { turnId: 't2', text: 'q2' }),
        ev('message.completed', { turnId: 't2', text: '', finishReason: 'cancelled' }),
        ev('message.user', { turnId: 't3', text: 'q3' }),
      ],
      's',
    );
    expect(t.map((m) => [m.role, m.content])).toEqual([
      ['system', 's'],
      ['user', 'q1'],
      ['assistant', 'Half an ans'],
      ['user', 'q2'],
      ['user', 'q3'],
    ]);
  });

  it('skips events it does not know and data of the wrong shape', () => {
    const t = buildTranscript([ev('message.user', { turnId: 't', text: 7 }), { type: 'tool.call', data: null }, ev('lease.changed', { epoch: 1 })], 's');
    expect(t).toEqual([{ role: 'system', content: 's' }]);
  });
});
