// A desktop app that crashed: a new process with the persisted {resumeToken, lastSeq} reclaims the
// controller lease within grace and continues the stream exactly after lastSeq.
import { describe, expect, it } from 'vitest';
import { expectContiguous, isAlive, line, testHome, waitFor } from './helpers.js';

const LOOP = 'for i in $(seq 1 150); do echo line $i; sleep 0.01; done';

describe('a controller process that is SIGKILLed', () => {
  it('is replaced by a new process that reclaims control with the persisted resume token and resumes right after the persisted seq', async () => {
    const t = testHome();
    const observer = await t.client({ clientName: 'observer' });
    const { session } = await observer.session.create({ title: 'resume', approvalPolicy: 'auto' });

    const a = t.child({ sessionId: session.id, name: 'app-1', acquire: true, startTurn: LOOP });
    const leaseA = (await a.out.next(line('lease'))) as { resumeToken: string; epoch: number };
    await a.out.next(line('event', (l) => l.type === 'command.output'));
    a.proc.kill('SIGKILL');
    await waitFor('the first app to die', () => !isAlive(a.proc.pid!));
    // What the app had persisted: the last seq it processed, and its resume token.
    const seqsA = a.events().map((e) => e.seq);
    expectContiguous(seqsA, 1);
    const lastSeq = seqsA[seqsA.length - 1]!;
    const started = a.events().find((e) => e.type === 'command.started');
    if (started?.pid) t.pids.push(started.pid);

    // Nobody else can take control without takeover while the lease is in grace.
    await expect(observer.acquireController(session.id)).rejects.toMatchObject({ reason: 'lease_held' });

    const b = t.child({ sessionId: session.id, name: 'app-2', acquire: true, resumeToken: leaseA.resumeToken, sinceSeq: lastSeq, renameAfterTurn: 'renamed by app-2' });
    const leaseB = (await b.out.next(line('lease'))) as { resumeToken: string; epoch: number };
    expect(leaseB.epoch).toBeGreaterThan(leaseA.epoch);
    expect(leaseB.resumeToken).not.toBe(leaseA.resumeToken);
    const done = (await b.out.next(line('event', (l) => l.type === 'turn.completed'), 20_000)) as { status: string };
    // Reclaimed within grace: the running turn was not cancelled.
    expect(done.status).toBe('completed');
    const seqsB = b.events().map((e) => e.seq);
    expect(seqsB[0]).toBe(lastSeq + 1);
    expectContiguous(seqsB, lastSeq + 1);
    const reclaimed = b.out.lines.find(line('event', (l) => l.type === 'lease.changed' && l.reason === 'reclaimed'));
    expect(reclaimed).toBeDefined();
    // And it really controls the session.
    await b.out.next(line('renamed'));
    const { session: now } = await observer.session.read({ sessionId: session.id, limit: 1 });
    expect(now.title).toBe('renamed by app-2');
    expect(now.controller?.clientName).toBe('app-2');
  });

  it('a client whose lease was taken over while it was disconnected reports leaseLost after reconnecting', async () => {
    // The daemon closes a silent connection after 1.5 s, which puts the frozen client's lease in grace.
    const t = testHome({ ASTRA_SILENT_CONNECTION_MS: '1500' });
    const other = await t.client({ clientName: 'other' });
    const { session } = await other.session.create({});
    const a = t.child({ sessionId: session.id, name: 'frozen', acquire: true, pingIntervalMs: 200 });
    await a.out.next(line('subscribed'));
    process.kill(a.proc.pid!, 'SIGSTOP');
    try {
      await waitFor(
        'the frozen client\'s lease to enter grace',
        async () => (await other.daemon.status()).sessions.find((s) => s.id === session.id)?.controller?.graceUntil !== undefined,
        10_000,
      );
      await other.acquireController(session.id, { takeover: true });
    } finally {
      process.kill(a.proc.pid!, 'SIGCONT');
    }
    const lost = (await a.out.next(line('leaseLost'))) as { reason: string; sessionId: string };
    expect(lost).toMatchObject({ sessionId: session.id, reason: 'lease_held' });
    await a.out.next(line('reconnected'));
    expect(other.heldLeases.get(session.id)?.held).toBe(true);
  });
});
