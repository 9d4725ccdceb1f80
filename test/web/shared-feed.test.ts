// The shared feed of a session (docs/http.md "Many tabs of one session"), over raw HTTP against a
// real gateway and daemon: many tabs' streams of one session ride one daemon subscription, each gets
// every event once and in order wherever it joined, and a stream that stops reading lags alone.
import { afterEach, describe, expect, it } from 'vitest';
import { envFor, runCli, useTempHomes, waitFor } from '../helpers/processes.js';
import { openSse, pair, request, startWeb, stopAllWebs, type GatewayProc, type SseStream } from './gateway-helpers.js';

const newHome = useTempHomes('awf');
// Registered after useTempHomes, so it runs first: gateways stop before their homes are cleaned up.
afterEach(stopAllWebs);

async function setup(engine: 'synthetic' | 'shell'): Promise<{ env: NodeJS.ProcessEnv; g: GatewayProc; cookie: string; id: string }> {
  const env = envFor(newHome());
  const g = await startWeb(env);
  const cookie = await pair(g.port, g.link);
  const r = await request(g.port, 'POST', '/v1/sessions', { cookie, tab: 'a', body: { title: 'feed', engine, approvalPolicy: 'auto', cwd: process.cwd() } });
  expect(r.status, r.text).toBe(201);
  const id = r.body.session.id as string;
  expect((await request(g.port, 'POST', `/v1/sessions/${id}/lease`, { cookie, tab: 'a', body: {} })).status).toBe(200);
  return { env, g, cookie, id };
}

function seqsOf(s: SseStream): number[] {
  return s.frames.filter((f) => f.id !== undefined).map((f) => {
    expect(Number(f.id)).toBe(f.data.seq);
    return f.data.seq as number;
  });
}

/** Every seq from `from` through `to`, once, in order. */
function expectContiguous(s: SseStream, from: number, to: number): void {
  const seqs = seqsOf(s);
  expect(seqs[0]).toBe(from);
  expect(seqs.at(-1)).toBe(to);
  expect(seqs).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i));
}

interface StatusConnection {
  id: string;
  clientName: string;
  subscriptions: string[];
}

async function connections(env: NodeJS.ProcessEnv): Promise<StatusConnection[]> {
  const r = await runCli(['daemon', 'status', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).connections as StatusConnection[];
}

describe('astra web: the shared feed of a session', () => {
  it('gives many tabs of a session one daemon subscription; each stream gets every event once, in order, wherever it joined', async () => {
    const { env, g, cookie, id } = await setup('shell');
    const open = async (tab: string, query = ''): Promise<SseStream> => {
      const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=${tab}${query}`, { cookie });
      expect(s.status).toBe(200);
      await s.next((f) => f.event === 'replayed');
      return s;
    };
    const early = await Promise.all(['a', 'b', 'c'].map((t) => open(t)));
    // Once they joined, the tabs' own connections hold no subscription: the feed's connection does.
    await waitFor('the streams to join the feed', async () => {
      const cs = await connections(env);
      const feed = cs.filter((c) => c.clientName === 'astra web feed');
      const tabs = cs.filter((c) => c.clientName.startsWith('astra web tab'));
      return feed.length === 1 && feed[0]!.subscriptions.includes(id) && tabs.length === 3 && tabs.every((c) => c.subscriptions.length === 0) ? true : undefined;
    });

    // Output for a few seconds, so that streams join while events flow.
    const lines = 600;
    const script = `i=0; while [ $i -lt ${lines} ]; do echo line$i; i=$((i+1)); sleep 0.005; done`;
    const started = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 'a', body: { text: script, idempotencyKey: 'k1' } });
    expect(started.status, started.text).toBe(202);
    // Joining mid-turn: one from the start (it catches up from the journal first), one from where another stream stands.
    await waitFor('output to flow', () => (early[0]!.frames.filter((f) => f.event === 'command.output').length > 20 ? true : undefined), 20_000);
    const fromStart = await open('d', '&since=0');
    const midSeq = seqsOf(early[1]!).at(-1)!;
    const mid = await openSse(g.port, `/v1/sessions/${id}/events?tab=e`, { cookie, headers: { 'Last-Event-ID': String(midSeq) } });
    const all = [...early, fromStart, mid];
    const done = await Promise.all(all.map((s) => s.next((f) => f.event === 'turn.completed', 30_000, 'the turn to complete')));
    const last = done[0]!.data.seq as number;
    for (const d of done) expect(d.data.seq).toBe(last);
    for (const s of [...early, fromStart]) expectContiguous(s, 1, last);
    expectContiguous(mid, midSeq + 1, last);
    expect(mid.frames.some((f) => f.event === 'command.output')).toBe(true);
    const text = Buffer.concat(early[2]!.frames.filter((f) => f.event === 'command.output').map((f) => Buffer.from(f.data.data.data, 'base64'))).toString();
    expect(text).toContain(`line${lines - 1}`);
    for (const s of all) expect(s.frames.some((f) => f.event === 'lagged')).toBe(false);

    // Every stream ends up on the feed, and the page's observers count still counts the tabs (all but the controller's).
    await waitFor('every stream on the feed', async () => {
      const cs = await connections(env);
      return cs.filter((c) => c.clientName.startsWith('astra web tab')).every((c) => c.subscriptions.length === 0) ? true : undefined;
    });
    const view = await request(g.port, 'GET', `/v1/sessions/${id}`, { cookie, tab: 'b' });
    expect(view.body.session.observers).toBe(4);
    for (const s of all) s.close();
    // With no stream left the feed unsubscribes.
    await waitFor('the feed to unsubscribe', async () => ((await connections(env)).every((c) => !c.subscriptions.includes(id)) ? true : undefined));
  });

  it('a stream that stops reading lags alone: the other streams go on, and it resyncs with nothing lost or repeated', async () => {
    const { g, cookie, id } = await setup('synthetic');
    const streams: SseStream[] = [];
    for (const tab of ['a', 'b', 'c']) {
      const s = await openSse(g.port, `/v1/sessions/${id}/events?tab=${tab}`, { cookie });
      await s.next((f) => f.event === 'replayed');
      streams.push(s);
    }
    const [reading, other, stuck] = streams as [SseStream, SseStream, SseStream];
    stuck.pause();
    // 24 MiB of output: far more than the socket buffers hold for the stuck reader.
    const started = await request(g.port, 'POST', `/v1/sessions/${id}/messages`, { cookie, tab: 'a', body: { text: 'count=24576 size=1024 batch=256', idempotencyKey: 'k1' } });
    expect(started.status, started.text).toBe(202);
    const done = await reading.next((f) => f.event === 'turn.completed', 30_000, 'the reading stream to get the whole turn');
    await other.next((f) => f.event === 'turn.completed', 30_000, 'the second reading stream to get the whole turn');
    expect(stuck.frames.some((f) => f.event === 'turn.completed')).toBe(false);
    for (const s of [reading, other]) {
      expectContiguous(s, 1, done.data.seq);
      expect(s.frames.some((f) => f.event === 'lagged')).toBe(false);
    }
    stuck.resume();
    await stuck.next((f) => f.event === 'turn.completed', 30_000, 'the stuck stream to catch up');
    expect(stuck.frames.some((f) => f.event === 'lagged')).toBe(true);
    expect(stuck.frames.some((f) => f.event === 'resynced')).toBe(true);
    expectContiguous(stuck, 1, done.data.seq);
    for (const s of streams) s.close();
  });
});
