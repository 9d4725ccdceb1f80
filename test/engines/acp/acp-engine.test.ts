// The acp engine on its own (no daemon): a context of our own, the fake agent as a real process, and
// bounds shortened through the engine's config.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAcpEngine } from '../../../engines/acp/index.js';
import type { EngineContext, RecordedEvent } from '../../../runtime/index.js';
import { isAlive, ROOT, tempDir, waitFor } from '../../helpers/processes.js';

const AGENT = path.join(ROOT, 'test', 'engines', 'acp', 'fixtures', 'fake-agent.mjs');
const engines: ReturnType<typeof createAcpEngine>[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});

/** A turn's context over a journal of our own (`journal`), folded as the runtime would for history. */
function context(journal: RecordedEvent[], engineOptions: object, text: string, turnId: string): EngineContext {
  return {
    sessionId: 'ses_1',
    turnId,
    cwd: ROOT,
    input: { text },
    approvalPolicy: 'auto',
    engineOptions,
    signal: new AbortController().signal,
    emit: (type, data) => journal.push({ type, data }) > 0,
    history: async () => journal.filter((e) => e.type === 'acp.session'),
    drained: async () => {},
    requestApproval: async () => 'approve',
  };
}

describe('createAcpEngine', () => {
  it('stops an agent idle past its bound; the next turn starts it again and loads its ACP session', async () => {
    const engine = createAcpEngine({ idleAgentMs: 100 });
    engines.push(engine);
    const options = await engine.prepare!(engine.parseOptions!({ command: process.execPath, args: [AGENT] }), { cwd: ROOT });
    expect(options).toMatchObject({ acpSessionId: expect.stringMatching(/^fake-/) });
    const journal: RecordedEvent[] = [];
    expect(await engine.runTurn(context(journal, options!, 'pid', 't1'))).toEqual({ status: 'completed' });
    const said = journal.find((e) => e.type === 'message.completed')!.data as { text: string };
    const pid = Number(said.text.split(' ')[1]);
    await waitFor('the idle agent stopped', () => !isAlive(pid));

    expect(await engine.runTurn(context(journal, options!, 'hello', 't2'))).toEqual({ status: 'completed' });
    const sessions = journal.filter((e) => e.type === 'acp.session').map((e) => e.data as { how: string; acpSessionId: string });
    expect(sessions.map((s) => s.how)).toEqual(['new', 'loaded']);
    expect(sessions[1]!.acpSessionId).toBe((options as { acpSessionId: string }).acpSessionId);
  });

  it('while the journal is behind, the agent is not read on: it waits on its pipe, and nothing is lost', async () => {
    const engine = createAcpEngine();
    engines.push(engine);
    const options = await engine.prepare!(engine.parseOptions!({ command: process.execPath, args: [AGENT] }), { cwd: ROOT });
    const journal: RecordedEvent[] = [];
    let release!: () => void;
    const drained = new Promise<void>((r) => (release = r));
    let behind = true;
    const marker = path.join(tempDir(), 'sent');
    const ctx = context(journal, options!, `stream 20000 ${marker}`, 't1');
    ctx.emit = (type, data) => {
      journal.push({ type, data });
      return !behind;
    };
    ctx.drained = () => drained;
    let done = false;
    const turn = engine.runTurn(ctx).then((r) => ((done = true), r));
    await waitFor('the first delta', () => journal.length > 0);
    // 20,000 chunks are about 2 MB: far more than the pipe and the streams between hold, so the agent
    // cannot have sent them all (given ample time to, were it read on).
    await new Promise((r) => setTimeout(r, 1500));
    expect(fs.existsSync(marker)).toBe(false);
    expect(done).toBe(false);
    expect(journal.length).toBeLessThan(20_000);
    behind = false;
    release();
    expect(await turn).toEqual({ status: 'completed' });
    expect(journal.filter((e) => e.type === 'message.delta')).toHaveLength(20_000);
    fs.rmSync(path.dirname(marker), { recursive: true, force: true });
  });

  it('a session with approvalPolicy auto answers a permission with the first allow option without asking', async () => {
    const engine = createAcpEngine();
    engines.push(engine);
    const options = await engine.prepare!(engine.parseOptions!({ command: process.execPath, args: [AGENT] }), { cwd: ROOT });
    const journal: RecordedEvent[] = [];
    const ctx = context(journal, options!, 'permission', 't1');
    ctx.requestApproval = async () => {
      throw new Error('asked');
    };
    expect(await engine.runTurn(ctx)).toEqual({ status: 'completed' });
    expect(journal.filter((e) => e.type === 'message.completed').map((e) => (e.data as { text: string }).text)).toEqual(['chose once']);
  });
});
