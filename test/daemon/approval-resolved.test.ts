// approval/resolved (issue 29): the connection an approval/request was sent to hears when the approval
// was settled another way — answered by a later controller, expired, or withdrawn with its cancelled
// turn — and the one that answered it hears nothing more; and the default expiry of approvals (a
// daemon setting, 1 h; 0 = never), which a session's own approvalTimeoutMs overrides. A real daemon,
// raw socket clients.
import { describe, expect, it } from 'vitest';
import { envFor, readRecordFile, runCli, useTempHomes, waitFor, type RecordShape } from '../helpers/processes.js';
import { neverAnswer, rawClient, type Note } from '../helpers/raw-client.js';

const home = useTempHomes();

/** A client that is asked approvals and never answers them by response (a prompt left open). */
const client = (rec: RecordShape, name: string, notes: Note[], asked: Note[]) =>
  rawClient(rec, name, notes, (method, params) => {
    asked.push({ method, params });
    return neverAnswer();
  });

const resolvedOf = (notes: Note[], approvalId: string) => notes.find((n) => n.method === 'approval/resolved' && n.params.approvalId === approvalId)?.params;

describe('approval/resolved', () => {
  it('tells the asked client when a new controller answers, when the approval expires and when its turn is cancelled; not the one that answered', async () => {
    const h = home();
    expect((await runCli(['daemon', 'start'], envFor(h))).code).toBe(0);
    const rec = readRecordFile(h)!;
    const aNotes: Note[] = [];
    const aAsked: Note[] = [];
    const bNotes: Note[] = [];
    const bAsked: Note[] = [];
    const a = await client(rec, 'first', aNotes, aAsked);
    const b = await client(rec, 'second', bNotes, bAsked);
    try {
      const { session } = (await a.request('session/create', { cwd: h, approvalPolicy: 'ask', approvalTimeoutMs: 1000 })) as { session: { id: string } };
      const sessionId = session.id;
      let { epoch } = (await a.request('lease/acquire', { sessionId })) as { epoch: number };

      // Answered by a later controller: the first one was asked, then lost control.
      await a.request('turn/start', { sessionId, epoch, input: { text: 'echo one' }, idempotencyKey: 'k1' });
      const first = (await waitFor('the first ask', () => aAsked.find((r) => r.method === 'approval/request'))).params;
      ({ epoch } = (await b.request('lease/acquire', { sessionId, takeover: true })) as { epoch: number });
      await waitFor('the ask of the new controller', () => bAsked.find((r) => r.params.approvalId === first.approvalId));
      await b.request('approval/answer', { sessionId, epoch, approvalId: first.approvalId, decision: 'approve' });
      expect(await waitFor('approval/resolved to the first', () => resolvedOf(aNotes, first.approvalId))).toEqual({
        sessionId,
        approvalId: first.approvalId,
        decision: 'approve',
        reason: 'answered',
      });

      // Expired: nobody answered within approvalTimeoutMs (1 s).
      await waitFor('the first turn to end', async () => !((await b.request('session/read', { sessionId })) as { session: { runningTurnId?: string } }).session.runningTurnId);
      await b.request('turn/start', { sessionId, epoch, input: { text: 'echo two' }, idempotencyKey: 'k2' });
      const second = (await waitFor('the second ask', () => bAsked.find((r) => r.params.approvalId !== first.approvalId))).params;
      expect(await waitFor('approval/resolved: expired', () => resolvedOf(bNotes, second.approvalId))).toMatchObject({ decision: 'deny', reason: 'expired' });

      // Cancelled with its turn.
      await waitFor('the second turn to end', async () => !((await b.request('session/read', { sessionId })) as { session: { runningTurnId?: string } }).session.runningTurnId);
      const third = (await b.request('turn/start', { sessionId, epoch, input: { text: 'echo three' }, idempotencyKey: 'k3' })) as { turnId: string };
      const ask3 = (await waitFor('the third ask', () => bAsked.find((r) => r.params.turnId === third.turnId))).params;
      await b.request('turn/cancel', { sessionId, epoch, turnId: third.turnId });
      expect(await waitFor('approval/resolved: cancelled', () => resolvedOf(bNotes, ask3.approvalId))).toMatchObject({ decision: 'deny', reason: 'cancelled' });

      // The controller that answered the first by approval/answer was not told about its own answer.
      expect(resolvedOf(bNotes, first.approvalId)).toBeUndefined();
      expect(resolvedOf(aNotes, second.approvalId)).toBeUndefined();
    } finally {
      a.close();
      b.close();
    }
  });

  it('expire by default after the daemon\'s approvalTimeoutMs (1 h; ASTRA_APPROVAL_TIMEOUT_MS, 0 = never); a session\'s own overrides it', async () => {
    const ask = async (env: Record<string, string>, create: Record<string, unknown>) => {
      const h = home();
      expect((await runCli(['daemon', 'start'], envFor(h, env))).code).toBe(0);
      const notes: Note[] = [];
      const conn = await client(readRecordFile(h)!, 'asker', notes, []);
      const { session } = (await conn.request('session/create', { cwd: h, approvalPolicy: 'ask', ...create })) as { session: { id: string } };
      const sessionId = session.id;
      const { epoch } = (await conn.request('lease/acquire', { sessionId })) as { epoch: number };
      await conn.request('session/subscribe', { sessionId, sinceSeq: 0 });
      await conn.request('turn/start', { sessionId, epoch, input: { text: 'echo x' }, idempotencyKey: 'k' });
      const asked = await waitFor('approval.requested', () => notes.find((n) => n.params?.type === 'approval.requested')?.params);
      return { conn, notes, asked, sessionId };
    };
    const daemonDefault = await ask({}, {});
    try {
      expect(daemonDefault.asked.data.expiresAt - daemonDefault.asked.ts).toBeGreaterThanOrEqual(3_600_000 - 1000);
      expect(daemonDefault.asked.data.expiresAt - daemonDefault.asked.ts).toBeLessThanOrEqual(3_600_000 + 1000);
    } finally {
      daemonDefault.conn.close();
    }
    const short = await ask({ ASTRA_APPROVAL_TIMEOUT_MS: '1000' }, {});
    try {
      const resolved = await waitFor('approval.resolved', () => short.notes.find((n) => n.params?.type === 'approval.resolved')?.params);
      expect(resolved.data.reason).toBe("expired: nobody answered within 1 s (the daemon's default approvalTimeoutMs)");
    } finally {
      short.conn.close();
    }
    const own = await ask({ ASTRA_APPROVAL_TIMEOUT_MS: '1000' }, { approvalTimeoutMs: 3_000_000 });
    try {
      expect(own.asked.data.expiresAt - own.asked.ts).toBeGreaterThan(3_000_000 - 1000);
    } finally {
      own.conn.close();
    }
    const never = await ask({ ASTRA_APPROVAL_TIMEOUT_MS: '0' }, {});
    try {
      expect(never.asked.data.expiresAt).toBeUndefined();
    } finally {
      never.conn.close();
    }
  });
});
