// approval/answer: the controller answers a pending approval by request, naming the revision, and
// hears a typed approval_expired for a stale revision or an expired approval — the refusal a
// response to approval/request cannot carry (issue 16).
import { describe, expect, it } from 'vitest';
import { AstraError } from '../../protocol/index.js';
import { envFor, readRecordFile, runCli, useTempHomes, waitFor, type RecordShape } from '../helpers/processes.js';
import { neverAnswer, rawClient, type Note } from '../helpers/raw-client.js';

const home = useTempHomes();

// A UI that answers by approval/answer: the server request is left unanswered.
const client = (rec: RecordShape, notes: Note[]) => rawClient(rec, 'answerer', notes, neverAnswer);


async function refusal(p: Promise<unknown>): Promise<AstraError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AstraError) return e;
    throw e;
  }
  throw new Error('the request was accepted; a refusal was expected');
}

describe('approval/answer', () => {
  it('approves the current revision, refuses a stale one and an expired approval with approval_expired, and refuses an observer', async () => {
    const h = home();
    expect((await runCli(['daemon', 'start'], envFor(h))).code).toBe(0);
    const rec = readRecordFile(h)!;
    const notes: Note[] = [];
    const conn = await client(rec, notes);
    const observer = await client(rec, []);
    try {
      const { session } = (await conn.request('session/create', { cwd: h, approvalPolicy: 'ask', approvalTimeoutMs: 1000 })) as { session: { id: string } };
      const sessionId = session.id;
      const { epoch } = (await conn.request('lease/acquire', { sessionId })) as { epoch: number };
      await conn.request('session/subscribe', { sessionId, sinceSeq: 0 });
      const event = (type: string, turnId: string, pred: (d: any) => boolean = () => true) => // eslint-disable-line @typescript-eslint/no-explicit-any
        waitFor(`${type} of ${turnId}`, () => notes.find((n) => n.method === 'session/event' && n.params.type === type && n.params.data.turnId === turnId && pred(n.params.data))?.params);

      const first = (await conn.request('turn/start', { sessionId, epoch, input: { text: 'echo answered' }, idempotencyKey: 'k1' })) as { turnId: string };
      const asked = await event('approval.requested', first.turnId);
      expect(asked.data.revision).toBe(1);
      const approvalId = asked.data.approvalId as string;

      const stale = await refusal(conn.request('approval/answer', { sessionId, epoch, approvalId, revision: 2, decision: 'approve' }));
      expect(stale.reason).toBe('approval_expired');
      expect(stale.data.revision).toBe(1);
      expect((await refusal(observer.request('approval/answer', { sessionId, epoch, approvalId, revision: 1, decision: 'approve' }))).reason).toBe('not_controller');

      expect(await conn.request('approval/answer', { sessionId, epoch, approvalId, revision: 1, decision: 'approve' })).toEqual({});
      await event('command.started', first.turnId);
      expect((await event('turn.completed', first.turnId)).data.status).toBe('completed');
      // Answered: a second answer finds nothing pending.
      expect((await refusal(conn.request('approval/answer', { sessionId, epoch, approvalId, decision: 'deny' }))).reason).toBe('not_found');

      const second = (await conn.request('turn/start', { sessionId, epoch, input: { text: 'echo never' }, idempotencyKey: 'k2' })) as { turnId: string };
      const asked2 = await event('approval.requested', second.turnId);
      expect(asked2.data.expiresAt).toBeGreaterThan(asked2.ts);
      await event('approval.resolved', second.turnId, (d) => d.decision === 'deny' && /expired/.test(d.reason ?? ''));
      const late = await refusal(conn.request('approval/answer', { sessionId, epoch, approvalId: asked2.data.approvalId, revision: 1, decision: 'approve' }));
      expect(late.reason).toBe('approval_expired');
      const end = (await event('turn.completed', second.turnId)).data;
      expect(end.status).toBe('cancelled');
      expect(end.reason).toMatch(/^denied: the approval expired, nobody answered within 1 s \(the session's approvalTimeoutMs\); the command was not run$/);
      expect(notes.some((n) => n.method === 'session/event' && n.params.type === 'command.started' && n.params.data.turnId === second.turnId)).toBe(false);
    } finally {
      conn.close();
      observer.close();
    }
  });
});
