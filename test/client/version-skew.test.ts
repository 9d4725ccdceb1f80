// A daemon that speaks another protocol version: the client says so clearly (both versions and the
// fix), at connect and when its daemon is replaced while it is connected.
import { describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { AstraError, PROTOCOL_VERSION } from '../../protocol/index.js';
import { readRecordFile, startNode } from '../helpers/processes.js';
import { FAKE_DAEMON, isAlive, testHome, waitFor } from './helpers.js';

function expectClearIncompatible(e: unknown): void {
  expect(e).toBeInstanceOf(AstraError);
  const err = e as AstraError;
  expect(err.reason).toBe('incompatible_protocol');
  expect(err.message).toContain(`protocol ${PROTOCOL_VERSION}`);
  expect(err.message).toContain('protocol 2');
  expect(err.message).toContain('astra daemon restart');
  expect(err.data).toMatchObject({ clientProtocolVersion: PROTOCOL_VERSION, daemonProtocolVersion: 2 });
}

describe('protocol version skew', () => {
  it('connect rejects with incompatible_protocol naming both versions and `astra daemon restart`', async () => {
    const t = testHome();
    const fake = startNode([FAKE_DAEMON], t.env);
    t.pids.push(fake.pid!);
    await waitFor('the fake daemon to publish its record', () => readRecordFile(t.home)?.pid === fake.pid);
    const err = await AstraClient.connect({ clientName: 'skew', env: t.env, autoStart: false }).catch((e: unknown) => e);
    expectClearIncompatible(err);
  });

  it('replaceIdleIncompatibleDaemon stops an idle daemon of another version and starts one of ours; a busy one is left alone', async () => {
    const busy = testHome({ FAKE_DAEMON_IDLE: '0' });
    const busyFake = startNode([FAKE_DAEMON], busy.env);
    busy.pids.push(busyFake.pid!);
    await waitFor('the busy fake daemon', () => readRecordFile(busy.home)?.pid === busyFake.pid);
    const refused = await AstraClient.connect({ clientName: 'skew', env: busy.env, replaceIdleIncompatibleDaemon: true }).catch((e: unknown) => e);
    expectClearIncompatible(refused);
    expect(isAlive(busyFake.pid!)).toBe(true);

    const idle = testHome({ FAKE_DAEMON_IDLE: '1' });
    const idleFake = startNode([FAKE_DAEMON], idle.env);
    idle.pids.push(idleFake.pid!);
    await waitFor('the idle fake daemon', () => readRecordFile(idle.home)?.pid === idleFake.pid);
    const client = await idle.client({ clientName: 'skew', replaceIdleIncompatibleDaemon: true });
    expect(isAlive(idleFake.pid!)).toBe(false);
    expect(client.serverInfo.protocolVersion).toBe(PROTOCOL_VERSION);
    expect(client.daemonPid).not.toBe(idleFake.pid);
    await client.ping();
  });

  it('a connected client whose daemon is replaced by a newer protocol reports incompatible_protocol and stops reconnecting', async () => {
    const t = testHome();
    // The real daemon first; any daemon the client starts later is the newer (fake) one.
    await (await t.client({ clientName: 'starter' })).close();
    const client = await t.client({
      clientName: 'skew',
      env: { ...t.env, ASTRA_DAEMON_ENTRY: FAKE_DAEMON },
      reconnect: { initialDelayMs: 10, maxDelayMs: 100, maxElapsedMs: 15_000 },
    });
    const errors: AstraError[] = [];
    client.on('error', (e) => errors.push(e));
    const { session } = await client.session.create({});
    const sub = await client.subscribe(session.id);
    const iterating = (async () => {
      for await (const _ of sub) void _;
    })().catch((e: unknown) => e);
    const oldPid = client.daemonPid;
    process.kill(oldPid, 'SIGKILL');
    await waitFor('the client to give up', () => client.state === 'closed', 15_000);
    const fakePid = readRecordFile(t.home)?.pid;
    if (fakePid) t.pids.push(fakePid);
    expect(fakePid).not.toBe(oldPid);
    expect(errors).toHaveLength(1);
    expectClearIncompatible(errors[0]);
    // The stream and later calls fail with the same clear error.
    expectClearIncompatible(await iterating);
    expectClearIncompatible(await client.ping().catch((e: unknown) => e));
    expect(isAlive(oldPid)).toBe(false);
  });
});
