// The acp engine's mapping of ACP session updates to Astra events, its permission choice, and its
// options check — no process, no daemon.
import { describe, expect, it } from 'vitest';
import { chooseOption, cutText, opaque, parseAcpOptions, permissionText, TurnMapper } from '../../../engines/acp/index.js';
import { AstraError, sessionEventSchema } from '../../../protocol/index.js';

function mapper(max = { text: 1000, opaque: 1000 }) {
  const out: { type: string; data: Record<string, unknown> }[] = [];
  const m = new TurnMapper('turn_1', (type, data) => out.push({ type, data: data as Record<string, unknown> }) > 0, max);
  return { m, out };
}
const text = (t: string) => ({ type: 'text', text: t });

/** Every event the mapper made is valid on the wire (the protocol's own check). */
function expectValid(out: { type: string; data: unknown }[]) {
  out.forEach((e, i) => expect(sessionEventSchema.check({ sessionId: 'ses_1', seq: i + 1, ts: 0, type: e.type, data: e.data }, '$')).toBeUndefined());
}

describe('TurnMapper', () => {
  it('streams message chunks as message.delta and completes the message when something else comes, and at the end', () => {
    const { m, out } = mapper();
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('Hel') });
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('lo') });
    m.update({ sessionUpdate: 'agent_thought_chunk', content: text('hmm') });
    m.update({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read', kind: 'read', status: 'pending' });
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('Bye') });
    m.end('end_turn');
    expect(out.map((e) => e.type)).toEqual(['message.delta', 'message.delta', 'thought.delta', 'message.completed', 'tool.call', 'message.delta', 'message.completed']);
    expect(out[3]!.data).toEqual({ turnId: 'turn_1', text: 'Hello' });
    expect(out[4]!.data).toEqual({ turnId: 'turn_1', callId: 'c1', name: 'read', arguments: '', kind: 'read', title: 'Read', status: 'pending' });
    expect(out[6]!.data).toEqual({ turnId: 'turn_1', text: 'Bye', finishReason: 'end_turn' });
    expectValid(out);
  });

  it('cuts a message past the bound with a marker; message.completed is exactly the deltas joined', () => {
    const { m, out } = mapper({ text: 10, opaque: 1000 });
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('0123456') });
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('789abcdef') });
    m.update({ sessionUpdate: 'agent_message_chunk', content: text('never kept') });
    m.end('end_turn');
    const deltas = out.filter((e) => e.type === 'message.delta').map((e) => e.data.text as string);
    expect(deltas).toHaveLength(2);
    expect(deltas[1]).toMatch(/^789\n\[… cut by Astra: the message passed 10 characters/);
    expect(out.at(-1)!.data.text).toBe(deltas.join(''));
  });

  it('maps a plan, and a tool call update with a diff whose sides are bounded', () => {
    const { m, out } = mapper({ text: 8, opaque: 1000 });
    m.update({ sessionUpdate: 'plan', entries: [{ content: 'step one', priority: 'low', status: 'pending' }, 'junk'] });
    m.update({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', locations: [{ path: '/a' }, { nopath: 1 }], content: [{ type: 'diff', path: '/a', oldText: null, newText: 'x'.repeat(50) }, { type: 'content', content: text('ok') }, { type: 'terminal', terminalId: 'term1' }] });
    expect(out[0]).toEqual({ type: 'plan.updated', data: { turnId: 'turn_1', entries: [{ content: 'step one', priority: 'low', status: 'pending' }] } });
    const upd = out[1]!.data as { content: { type: string; newText?: string; oldText?: string | null; text?: string; terminalId?: string }[]; locations: unknown[] };
    expect(upd.locations).toEqual([{ path: '/a' }]);
    expect(upd.content[0]).toMatchObject({ type: 'diff', path: '/a', oldText: null });
    expect(upd.content[0]!.newText).toBe('xxxxxxxx\n[… cut by Astra: 42 more characters]');
    expect(upd.content[1]).toEqual({ type: 'text', text: 'ok' });
    expect(upd.content[2]).toEqual({ type: 'terminal', terminalId: 'term1' });
    expectValid(out);
  });

  it('keeps an unknown kind, a malformed update and non-text content as acp.update, never throwing', () => {
    const { m, out } = mapper({ text: 1000, opaque: 60 });
    m.update({ sessionUpdate: 'usage_update', used: 5, size: 10 });
    m.update('not an object');
    m.update({ noKind: true });
    m.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'AAAA', mimeType: 'image/png' } });
    m.update({ sessionUpdate: 'tool_call' }); // no toolCallId
    m.update({ sessionUpdate: 'future', blob: 'y'.repeat(100) });
    expect(out.map((e) => [e.type, e.data.kind])).toEqual([
      ['acp.update', 'usage_update'], ['acp.update', 'malformed'], ['acp.update', 'malformed'], ['acp.update', 'agent_message_chunk'], ['acp.update', 'tool_call'], ['acp.update', 'future'],
    ]);
    expect(out[0]!.data.update).toEqual({ sessionUpdate: 'usage_update', used: 5, size: 10 });
    expect((out[5]!.data.update as { json: string }).json).toMatch(/cut by Astra/);
    expectValid(out);
  });

  it('keeps an update with a forbidden key as its JSON text, not as a value', () => {
    const v = JSON.parse('{"sessionUpdate":"x","__proto__":{"polluted":true}}');
    expect(opaque(v, 1000)).toEqual({ json: '{"sessionUpdate":"x","__proto__":{"polluted":true}}' });
  });
});

describe('permissions', () => {
  const options = [
    { optionId: 'once', name: 'Allow once', kind: 'allow_once' },
    { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
    { optionId: 'no', name: 'Reject', kind: 'reject_once' },
  ];
  it('approve picks the first allow option, deny the first reject option; none fitting is undefined', () => {
    expect(chooseOption(options, 'approve')).toBe('once');
    expect(chooseOption(options, 'deny')).toBe('no');
    expect(chooseOption(options.slice(0, 2), 'deny')).toBeUndefined();
    expect(chooseOption(['junk', null], 'approve')).toBeUndefined();
  });
  it('the approval names the tool call and the agent\'s options', () => {
    expect(permissionText({ toolCall: { toolCallId: 't', title: 'Run ls', kind: 'execute' }, options }, 1000)).toEqual({
      command: 'Run ls',
      reason: 'the agent asks permission (execute); its options: Allow once [allow_once], Always allow [allow_always], Reject [reject_once]',
    });
  });
});

describe('parseAcpOptions', () => {
  const field = (raw: Record<string, unknown> | undefined) => {
    try {
      parseAcpOptions(raw);
    } catch (e) {
      expect(e).toBeInstanceOf(AstraError);
      expect((e as AstraError).reason).toBe('invalid_params');
      return (e as AstraError).data.field;
    }
    return undefined;
  };
  it('takes {command, args?, env?} and refuses anything else naming the field', () => {
    expect(parseAcpOptions({ command: 'opencode', args: ['acp'], env: { A_B: '1' } })).toEqual({ command: 'opencode', args: ['acp'], env: { A_B: '1' } });
    expect(field(undefined)).toBe('engineOptions.command');
    expect(field({ command: '' })).toBe('engineOptions.command');
    expect(field({ command: 'x', args: 'acp' })).toBe('engineOptions.args');
    expect(field({ command: 'x', args: ['ok', 2] })).toBe('engineOptions.args[1]');
    expect(field({ command: 'x', env: { '1A': 'v' } })).toBe('engineOptions.env.1A');
    expect(field({ command: 'x', env: { A: 1 } })).toBe('engineOptions.env.A');
    expect(field({ command: 'x', acpSessionId: 'mine' })).toBe('engineOptions.acpSessionId');
  });
  it('cuts a long text with a marker saying how much was left out', () => {
    expect(cutText('abcdef', 3)).toBe('abc\n[… cut by Astra: 3 more characters]');
    expect(cutText('abc', 3)).toBe('abc');
  });
});
