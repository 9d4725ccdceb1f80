// The daemon dies mid-stream: every client reconnects on its own to a new daemon, sees the turn
// interrupted, and its event stream has no gap and no duplicate across the crash.
import { describe, expect, it } from 'vitest';
import { expectContiguous, line, testHome, waitFor, isAlive } from './helpers.js';

const LOOP = 'for i in $(seq 1 400); do echo line $i; sleep 0.005; done';

describe('a daemon crash during a streaming turn', () => {
  it('two subscribed client processes reconnect to a new daemon, see the turn interrupted, and deliver contiguous seqs', async () => {
    const t = testHome();
    const driver = await t.client({ clientName: 'driver', reconnect: { initialDelayMs: 50, maxDelayMs: 500, maxElapsedMs: 30_000 } });
    const { session } = await driver.session.create({ title: 'crash', approvalPolicy: 'auto' });
    await driver.acquireController(session.id);

    const watchers = [t.child({ sessionId: session.id, name: 'w1' }), t.child({ sessionId: session.id, name: 'w2' })];
    for (const w of watchers) await w.out.next(line('subscribed'));

    const firstDaemon = driver.daemonPid;
    const firstInstance = driver.instanceId;
    await driver.turn.start({ sessionId: session.id, input: { text: LOOP } });
    // Both watchers are mid-stream when the daemon dies.
    for (const w of watchers) {
      const started = (await w.out.next(line('event', (l) => l.type === 'command.started'))) as { pid: number };
      t.pids.push(started.pid);
      await w.out.next(line('event', (l) => l.type === 'command.output'));
    }
    process.kill(firstDaemon, 'SIGKILL');
    await waitFor('the first daemon to die', () => !isAlive(firstDaemon));

    for (const w of watchers) {
      const done = (await w.out.next(line('event', (l) => l.type === 'turn.completed'), 30_000)) as { status: string };
      expect(done.status).toBe('interrupted');
      const re = (await w.out.next(line('reconnected'))) as { instanceId: string; daemonRestarted: boolean };
      expect(re.instanceId).not.toBe(firstInstance);
      expect(re.daemonRestarted).toBe(true);
      const seqs = w.events().map((e) => e.seq);
      expectContiguous(seqs, 1);
      // Output streamed before the crash, and the stream went on after the reconnect.
      const lines = w.out.lines as { ev: string; type?: string }[];
      const cut = lines.findIndex(line('disconnected'));
      expect(cut).toBeGreaterThan(0);
      expect(lines.slice(0, cut).some((l) => l.ev === 'event' && l.type === 'command.output')).toBe(true);
      expect(lines.slice(cut).some((l) => l.ev === 'event')).toBe(true);
    }
    // Both watchers and the driver ended on the same new daemon: exactly one was started.
    const instances = new Set(watchers.map((w) => (w.out.lines.find(line('reconnected')) as { instanceId: string }).instanceId));
    expect(instances.size).toBe(1);
    await waitFor('the driver to reconnect', () => driver.connected && driver.instanceId !== firstInstance, 15_000);
    expect(instances.has(driver.instanceId)).toBe(true);
    // The driver reclaimed its lease on the new daemon and can write again.
    const renamed = await driver.session.rename({ sessionId: session.id, title: 'after the crash' });
    expect(renamed.session.title).toBe('after the crash');
  });
});
