// What the client does when the daemon goes in ways only a scripted daemon can show on cue: a
// deliberate stop (no respawn until resume()), a restart (reconnect as usual), a session whose head
// is behind the client's cursor (resync), and a daemon that dies at every start (back off, give up).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AstraError, type SessionEvent } from '../../protocol/index.js';
import { ROOT, processesOfHome } from '../helpers/processes.js';
import { isAlive, testHome, waitFor } from './helpers.js';

const SCRIPTED = path.join(ROOT, 'test', 'client', 'fixtures', 'scripted-daemon.mjs');
const SESSION = 'ses_scripted';
const FAST_RECONNECT = { initialDelayMs: 10, maxDelayMs: 50, maxElapsedMs: 20_000 };

function starts(home: string): { pid: number; at: number }[] {
  const file = path.join(home, 'starts');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const [pid, at] = l.split(' ').map(Number);
      return { pid: pid!, at: at! };
    });
}

describe('a deliberate daemon stop', () => {
  it("stays a stop: state 'stopped', a 'stopped' event, calls fail at once, nothing respawned; resume() starts a daemon and resubscribes", async () => {
    const t = testHome({ ASTRA_DAEMON_ENTRY: SCRIPTED, FAKE_SHUTDOWN_REASON: 'stopped', FAKE_HEAD: '0' });
    const client = await t.client({ reconnect: FAST_RECONNECT });
    const seen: SessionEvent[] = [];
    await client.subscribe(SESSION, { onEvent: (e) => seen.push(e) });
    await waitFor('the first two events', () => seen.length === 2);
    const events: string[] = [];
    client.on('disconnected', () => events.push('disconnected'));
    client.on('reconnected', () => events.push('reconnected'));
    const stopped = new Promise<{ message: string }>((resolve) => client.once('stopped', resolve));

    const first = client.daemonPid;
    process.kill(first, 'SIGUSR1');
    expect((await stopped).message).toContain('stopped');
    expect(client.state).toBe('stopped');
    await waitFor('the stopped daemon to exit', () => !isAlive(first));
    const err = await client.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AstraError);
    expect((err as AstraError).reason).toBe('daemon_not_running');
    expect((err as AstraError).message).toContain('client.resume()');
    expect(client.state).toBe('stopped');
    expect(processesOfHome(t.home)).toEqual([]);
    expect(starts(t.home)).toHaveLength(1);
    expect(events).toEqual([]);

    await client.resume({ timeoutMs: 15_000 });
    expect(client.state).toBe('connected');
    expect(client.daemonPid).not.toBe(first);
    expect(starts(t.home)).toHaveLength(2);
    expect(events).toEqual(['reconnected']);
    // The subscription was restored on the new daemon, from lastSeq: its new events follow 1 and 2.
    await waitFor('the new daemon\'s events', () => seen.length === 4);
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it("'restarting' (and any reason but 'stopped') keeps today's reconnect: the client starts a daemon by itself", async () => {
    const t = testHome({ ASTRA_DAEMON_ENTRY: SCRIPTED, FAKE_SHUTDOWN_REASON: 'restarting' });
    const client = await t.client({ reconnect: FAST_RECONNECT });
    const disconnected = new Promise<{ daemonShuttingDown: boolean; shutdownReason?: string }>((resolve) => client.once('disconnected', resolve));
    const reconnected = new Promise<{ daemonRestarted: boolean }>((resolve) => client.once('reconnected', resolve));
    let stoppedSeen = false;
    client.on('stopped', () => (stoppedSeen = true));
    const first = client.daemonPid;
    process.kill(first, 'SIGUSR1');
    expect(await disconnected).toMatchObject({ daemonShuttingDown: true, shutdownReason: 'restarting' });
    expect((await reconnected).daemonRestarted).toBe(true);
    expect(client.daemonPid).not.toBe(first);
    expect(stoppedSeen).toBe(false);
  });
});

describe('a subscription whose cursor is ahead of the session head (cursor_ahead)', () => {
  it('resyncs from the head, tells the application both seqs, and delivers the events after the head', async () => {
    const t = testHome({ ASTRA_DAEMON_ENTRY: SCRIPTED, FAKE_HEAD: '5' });
    const client = await t.client();
    const resynced: unknown[] = [];
    client.on('resynced', (r) => resynced.push(r));
    const seen: number[] = [];
    const onResync: { lastSeq: number; headSeq: number }[] = [];
    const sub = await client.subscribe(SESSION, { sinceSeq: 10, onEvent: (e) => seen.push(e.seq), onResync: (r) => onResync.push(r) });
    expect(onResync).toEqual([{ lastSeq: 10, headSeq: 5 }]);
    expect(resynced).toEqual([{ sessionId: SESSION, lastSeq: 10, headSeq: 5 }]);
    expect(sub.headSeq).toBe(5);
    await waitFor('the events after the head', () => seen.length === 2);
    expect(seen).toEqual([6, 7]);
    expect(sub.lastSeq).toBe(7);
  });
});

describe('a daemon that dies at every start', () => {
  it('is started at most 3 times, with growing waits between, then the client fails with spawn_failed naming the log and its last lines', async () => {
    const t = testHome({ ASTRA_DAEMON_ENTRY: SCRIPTED });
    const client = await t.client({ reconnect: { initialDelayMs: 10, maxDelayMs: 100, maxElapsedMs: 30_000 } });
    const failed = new Promise<AstraError>((resolve) => client.once('error', resolve));
    // From now on every start dies before answering, as with a full log disk.
    fs.writeFileSync(path.join(t.home, 'fail-start'), '');
    process.kill(client.daemonPid, 'SIGKILL');

    const err = await failed;
    expect(client.state).toBe('closed');
    expect(err.reason).toBe('spawn_failed');
    expect(err.message).toContain('died at start 3 times');
    expect(err.message).toContain(path.join(t.home, 'logs', 'daemon.log'));
    expect(err.message).toContain('no space left on device (simulated)');
    const dead = starts(t.home).slice(1);
    expect(dead).toHaveLength(3);
    // Each wait at least doubles from 0.5 s (less what the start itself took, which is added on top).
    expect(dead[1]!.at - dead[0]!.at).toBeGreaterThanOrEqual(500);
    expect(dead[2]!.at - dead[1]!.at).toBeGreaterThanOrEqual(1_000);
  });
});
