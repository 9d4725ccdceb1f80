// The chat engine wired into the Runtime: engineOptions checked at create and kept with the session,
// the transcript read back from the journal (across a reopen), tool commands run as shell turns run
// them, and an orphaned tool call answered 'interrupted' when a crashed turn is found.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SessionEvent } from '../../../protocol/index.js';
import { isAstraError } from '../../../protocol/index.js';
import { INTERRUPTED_RESULT_OUTPUT } from '../../../engines/chat/index.js';
import { Packr } from 'msgpackr';
import { JOURNAL_FILE, RecordKind, Runtime, encodeRecord, type RuntimeOptions } from '../../../runtime/index.js';
import { createChatEngine, createShellEngine } from '../../../engines/index.js';
import { SessionJournal } from '../../../journal/journal.js';
import { SessionHost } from '../../../runtime/session-host.js';
import { startModelServer, type ModelServer } from '../../fixtures/model-server/server.mjs';
import { tempDir, waitFor } from '../../runtime/helpers.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(script: string[]) {
  const server: ModelServer = await startModelServer({ script });
  cleanups.push(() => server.close());
  const dataDir = tempDir();
  const cwd = tempDir('astra-chat-cwd-');
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  cleanups.push(() => fs.rmSync(cwd, { recursive: true, force: true }));
  fs.writeFileSync(path.join(cwd, 'a.txt'), 'a');
  const env = { ASTRA_CHAT_BASE_URL: server.baseUrl };
  const open = async (extra: Partial<RuntimeOptions> = {}) => {
    const rt = await Runtime.open({ dataDir, engines: { shell: createShellEngine(), chat: createChatEngine({}, env) }, ...extra });
    const ended = new Map<string, string>();
    rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
    return { rt, ended };
  };
  return { server, dataDir, cwd, open };
}

async function events(rt: Runtime, id: string): Promise<SessionEvent[]> {
  return (await rt.readSession(id, { limit: 100_000 })).events;
}

describe('the chat engine in the runtime', () => {
  it('refuses a chat session without a model and a malformed base URL with invalid_params naming the field', async () => {
    const { open, cwd } = await setup([]);
    const { rt } = await open();
    cleanups.push(() => rt.close());
    const noModel = await rt.createSession({ engine: 'chat', cwd }).catch((e: unknown) => e);
    expect(isAstraError(noModel) && noModel.reason).toBe('invalid_params');
    expect((noModel as Error).message).toMatch(/needs a model: pass --model NAME/);
    const badUrl = await rt.createSession({ engine: 'chat', cwd, engineOptions: { model: 'm', baseUrl: 'not a url' } }).catch((e: unknown) => e);
    expect(isAstraError(badUrl) && badUrl.reason).toBe('invalid_params');
    expect((badUrl as { data?: { field?: string } }).data?.field).toBe('engineOptions.baseUrl');
  });

  it('refuses engineOptions for an engine that takes none', async () => {
    const { open, cwd } = await setup([]);
    const { rt } = await open();
    cleanups.push(() => rt.close());
    const err = await rt.createSession({ engine: 'shell', cwd, engineOptions: { model: 'x' } }).catch((e: unknown) => e);
    expect(isAstraError(err) && err.reason).toBe('invalid_params');
    expect((err as Error).message).toMatch(/takes no engineOptions/);
    expect((await rt.listSessions()).sessions).toHaveLength(0);
  });

  it('runs an auto-approved tool call as a shell command in the stream, and a second turn after a reopen sends the first', async () => {
    const { open, cwd, server } = await setup(['tool-call', 'final-answer', 'plain-answer']);
    let { rt, ended } = await open();
    const s = await rt.createSession({ engine: 'chat', cwd, approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    const { turnId } = await rt.startTurn(s.id, { text: 'what is here?' }, 'k1');
    await waitFor('the first turn to end', () => ended.get(turnId));
    expect(ended.get(turnId)).toBe('completed');
    const first = (await events(rt, s.id)).map((e) => e.type).filter((t) => t !== 'message.delta');
    expect(first).toEqual([
      'session.created', 'turn.started', 'message.user', 'message.completed', 'usage', 'tool.call',
      'command.started', 'command.output', 'command.completed', 'tool.result', 'message.completed', 'usage', 'turn.completed',
    ]);
    const result = (await events(rt, s.id)).find((e) => e.type === 'tool.result')!;
    expect(result.data).toMatchObject({ callId: 'call_abc123', status: 'succeeded', exitCode: 0 });
    expect((result.data as { output: string }).output).toContain('a.txt');
    await rt.close();

    ({ rt, ended } = await open());
    cleanups.push(() => rt.close());
    const second = await rt.startTurn(s.id, { text: 'thanks' }, 'k2');
    await waitFor('the second turn to end', () => ended.get(second.turnId));
    const sent = server.requests[2]!.body as { model: string; messages: { role: string; content: string | null; tool_call_id?: string }[] };
    expect(sent.model).toBe('llama3.1');
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(sent.messages[1]!.content).toBe('what is here?');
    expect(sent.messages[3]!.tool_call_id).toBe('call_abc123');
    expect(sent.messages[4]!.content).toBe('The directory has two files.');
    expect(sent.messages[5]!.content).toBe('thanks');
  });

  it('a 200-turn session\'s next turn reads nothing of the journal (the transcript is folded as events are appended), and after a reopen the model is sent the same conversation', async () => {
    const TURNS = 200;
    const { open, cwd, server } = await setup(['tool-call', 'final-answer', ...Array.from({ length: TURNS + 1 }, () => 'one-chunk-answer')]);
    let { rt, ended } = await open();
    const s = await rt.createSession({ engine: 'chat', cwd, approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    const turn = async (i: number) => {
      const { turnId } = await rt.startTurn(s.id, { text: `message ${i}` }, `k${i}`);
      await waitFor(`turn ${i} to end`, () => ended.get(turnId));
      expect(ended.get(turnId), `turn ${i}`).toBe('completed');
    };
    for (let i = 1; i <= TURNS; i++) await turn(i);
    type Sent = { messages: { role: string; content: string | null }[] };
    const sent = (n: number) => server.requests[n]!.body as Sent;

    // Every way a turn could read the journal: the journal's record reader, and the host's page reader.
    const journalReads = vi.spyOn(SessionJournal.prototype, 'readRecords');
    const pageReads = vi.spyOn(SessionHost.prototype, 'readPublished');
    try {
      await turn(TURNS + 1);
      expect(journalReads).not.toHaveBeenCalled();
      expect(pageReads).not.toHaveBeenCalled();
    } finally {
      journalReads.mockRestore();
      pageReads.mockRestore();
    }
    // TURNS + 1 turns, one of which made two requests.
    const before = sent(TURNS + 1);
    expect(before.messages).toHaveLength(1 + 2 * TURNS + 2 + 1);
    expect(before.messages.at(-1)).toEqual({ role: 'user', content: `message ${TURNS + 1}` });
    await rt.close();

    ({ rt, ended } = await open());
    cleanups.push(() => rt.close());
    const { turnId } = await rt.startTurn(s.id, { text: 'after the restart' }, 'k-after');
    await waitFor('the turn after the reopen to end', () => ended.get(turnId));
    const after = sent(TURNS + 2);
    // The conversation rebuilt from the journal is the one kept in memory before, plus the last answer.
    expect(after.messages.slice(0, before.messages.length)).toEqual(before.messages);
    expect(after.messages.slice(before.messages.length)).toEqual([
      { role: 'assistant', content: 'All in one chunk.' },
      { role: 'user', content: 'after the restart' },
    ]);
  }, 60_000);

  it('answers a tool call left without a result by a crash with an interrupted tool.result before the turn is marked interrupted', async () => {
    const { open, cwd, dataDir } = await setup([]);
    const { rt } = await open();
    const s = await rt.createSession({ engine: 'chat', cwd, engineOptions: { model: 'llama3.1' } });
    await rt.close();
    // A journal as a daemon killed during an approved command leaves it: tool.call, command.started, no result.
    const file = path.join(dataDir, 'sessions', s.id, JOURNAL_FILE);
    const packr = new Packr({ useRecords: false, variableMapSize: true });
    const ts = Date.now();
    const add = (seq: number, type: string, data: object) => fs.appendFileSync(file, encodeRecord(RecordKind.event, packr.pack({ seq, ts, type, data })));
    add(2, 'turn.started', { turnId: 't1', input: { text: 'go' } });
    add(3, 'message.user', { turnId: 't1', text: 'go' });
    add(4, 'message.completed', { turnId: 't1', text: '', finishReason: 'tool_calls' });
    add(5, 'tool.call', { turnId: 't1', callId: 'call_x', name: 'shell', arguments: '{"command":"sleep 30"}' });
    add(6, 'command.started', { turnId: 't1', command: 'sleep 30', cwd, pid: 999_999_999 });

    const again = await open();
    cleanups.push(() => again.rt.close());
    const tail = (await events(again.rt, s.id)).slice(-2);
    expect(tail.map((e) => e.type)).toEqual(['tool.result', 'turn.completed']);
    expect(tail[0]!.data).toEqual({ turnId: 't1', callId: 'call_x', status: 'interrupted', output: INTERRUPTED_RESULT_OUTPUT });
    expect(tail[1]!.data).toMatchObject({ turnId: 't1', status: 'interrupted' });
  });

  it('an approval nobody answers within approvalTimeoutMs resolves as denied with reason expired, the model is told, and a late answer is approval_expired', async () => {
    const { open, cwd, server } = await setup(['tool-call', 'final-answer']);
    const { rt, ended } = await open();
    cleanups.push(() => rt.close());
    const asked: { approvalId: string; revision: number; expiresAt?: number }[] = [];
    rt.on('approvalRequested', (a) => asked.push(a));
    const s = await rt.createSession({ engine: 'chat', cwd, approvalTimeoutMs: 300, engineOptions: { model: 'llama3.1' } });
    const before = Date.now();
    const { turnId } = await rt.startTurn(s.id, { text: 'list it' }, 'k1');
    await waitFor('the turn to end', () => ended.get(turnId));
    expect(asked).toHaveLength(1);
    expect(asked[0]!.revision).toBe(1);
    expect(asked[0]!.expiresAt).toBeGreaterThanOrEqual(before + 300);
    const evs = await events(rt, s.id);
    const resolved = evs.find((e) => e.type === 'approval.resolved')!;
    expect(resolved.data).toMatchObject({ decision: 'deny', reason: expect.stringMatching(/^expired: nobody answered/) });
    const result = evs.find((e) => e.type === 'tool.result')!;
    expect(result.data).toMatchObject({ status: 'denied', output: expect.stringMatching(/approval expired/) });
    expect(ofRole(server.requests[1]!.body, 'tool')).toEqual([(result.data as { output: string }).output]);
    expect(evs.filter((e) => e.type === 'command.started')).toHaveLength(0);
    const late = await rt.resolveApproval(s.id, asked[0]!.approvalId, 'approve').catch((e: unknown) => e);
    expect(isAstraError(late) && late.reason).toBe('approval_expired');
  });

  it('an answer naming another revision is refused with approval_expired and the current revision is still answerable', async () => {
    const { open, cwd } = await setup(['tool-call', 'final-answer']);
    const { rt, ended } = await open();
    cleanups.push(() => rt.close());
    const asked: { approvalId: string }[] = [];
    rt.on('approvalRequested', (a) => asked.push(a));
    const s = await rt.createSession({ engine: 'chat', cwd, engineOptions: { model: 'llama3.1' } });
    const { turnId } = await rt.startTurn(s.id, { text: 'list it' }, 'k1');
    await waitFor('the approval request', () => asked[0]);
    expect((await events(rt, s.id)).find((e) => e.type === 'approval.requested')!.data).not.toHaveProperty('expiresAt');
    const stale = await rt.resolveApproval(s.id, asked[0]!.approvalId, 'approve', undefined, 2).catch((e: unknown) => e);
    expect(isAstraError(stale) && stale.reason).toBe('approval_expired');
    await rt.resolveApproval(s.id, asked[0]!.approvalId, 'approve', undefined, 1);
    await waitFor('the turn to end', () => ended.get(turnId));
    expect((await events(rt, s.id)).find((e) => e.type === 'tool.result')!.data).toMatchObject({ status: 'succeeded' });
  });
});

function ofRole(body: unknown, role: string): (string | null)[] {
  return (body as { messages: { role: string; content: string | null }[] }).messages.filter((m) => m.role === role).map((m) => m.content);
}
