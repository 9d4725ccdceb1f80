// session/subscribe `textFromDeltas`: a live message's text crosses the socket once. The real daemon
// (dist/) with the chat engine and the fake model server (a child process on loopback); raw client
// processes (test/fixtures/driver.mjs) to see the wire; an embedded daemon whose engine completes with
// other text than it streamed; and the client library, which always asks for it and hands the app
// every message.completed whole.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { createDaemon, type Daemon, type Engine } from '../../daemon/index.js';
import type { SessionEvent } from '../../protocol/index.js';
import { Driver, type Line } from '../helpers/driver.js';
import { startChatDaemon } from '../helpers/chat-daemon.js';
import { startModelServerProcess } from '../helpers/model-server-process.js';
import { cleanupHome, envFor, makeHome } from '../helpers/processes.js';

const homes: string[] = [];
const drivers: Driver[] = [];
const children: ChildProcess[] = [];
const clients: AstraClient[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await Promise.all(daemons.splice(0).map((d) => d.stop('shutdown')));
  for (const d of drivers.splice(0)) d.kill();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

/** A daemon whose chat engine talks to a fake model server answering with `script`, in order. */
async function setup(script: string[]) {
  const server = await startModelServerProcess(script, children);
  return startChatDaemon(server.baseUrl, {}, homes, drivers);
}

const turnEnd = (d: Driver, turnId: string) => d.next((l) => l.note === 'session/event' && l.params.type === 'turn.completed' && l.params.data.turnId === turnId, 20_000);
const replayed = (d: Driver) => d.next((l) => l.note === 'session/replayed', 20_000);

/**
 * Per message.completed in `events`, the concatenated text of the message.delta events of its turn
 * since the turn's start or its previous message.completed, and the event itself.
 */
function messages(events: Line[]): { streamed: string; completed: Line }[] {
  const since = new Map<string, string>();
  const out: { streamed: string; completed: Line }[] = [];
  for (const e of events) {
    const turnId = e.data?.turnId as string;
    if (e.type === 'turn.started') since.set(turnId, '');
    else if (e.type === 'message.delta') since.set(turnId, (since.get(turnId) ?? '') + (e.data.text as string));
    else if (e.type === 'message.completed') {
      out.push({ streamed: since.get(turnId) ?? '', completed: e });
      since.set(turnId, '');
    }
  }
  return out;
}

describe('session/subscribe textFromDeltas', () => {
  it('a message.completed whose text the subscription streamed comes without it; one that did not ask, began mid-message or streamed nothing gets it whole', async () => {
    // Turn 1: a tool call (a message with no text), then a two-part answer; turn 2: a fast stream.
    const { driver } = await setup(['tool-call', 'final-answer', 'fast-stream']);
    const [ctl, whole, once] = await Promise.all([driver('controller'), driver('whole'), driver('once')]);
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    const sessionId = session.id as string;
    await whole.call('session/subscribe', { sessionId, sinceSeq: 0 });
    await once.call('session/subscribe', { sessionId, sinceSeq: 0, textFromDeltas: true });
    const lease = await ctl.call('lease/acquire', { sessionId });
    const turns: string[] = [];
    for (const [i, text] of ['list the files', 'and now?'].entries()) {
      const { turnId } = await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text }, idempotencyKey: `k${i}` });
      turns.push(turnId as string);
      expect((await turnEnd(whole, turnId)).params.data.status).toBe('completed');
      await turnEnd(once, turnId);
    }

    // What the journal holds: every message.completed with its text.
    const { events: journal } = await ctl.call('session/read', { sessionId, sinceSeq: 0 });
    const stored = messages(journal as Line[]);
    expect(stored.map((m) => m.completed.data.text)).toEqual(['', 'The directory has two files.', stored[2]!.streamed]);
    expect(stored[2]!.streamed.length).toBeGreaterThan(40);
    expect(stored.every((m) => m.completed.data.textFromDeltas === undefined)).toBe(true);

    // Without the option: the events as stored, byte for byte the same data.
    expect(messages(whole.events(sessionId)).map((m) => m.completed)).toEqual(stored.map((m) => m.completed));

    /** The messages a textFromDeltas subscriber got: each with text (the streamed ones without it). */
    const expectCompact = (events: Line[]) => {
      const got = messages(events);
      expect(got.map((m) => m.completed.seq)).toEqual(stored.map((m) => m.completed.seq));
      got.forEach((m, i) => {
        const s = stored[i]!.completed;
        if (s.data.text === '') expect(m.completed.data).toEqual(s.data); // nothing streamed: nothing left out
        else {
          expect(m.completed.data).toEqual({ turnId: s.data.turnId, text: '', finishReason: s.data.finishReason, textFromDeltas: true });
          expect(m.streamed).toBe(s.data.text);
          expect(m.completed.ts).toBe(s.ts);
        }
      });
    };
    expectCompact(once.events(sessionId));

    // A backlog (read back, not live) comes whole: a late subscriber replaying both turns from their start.
    const late = await driver('late');
    await late.call('session/subscribe', { sessionId, sinceSeq: 0, textFromDeltas: true });
    await replayed(late);
    expect(messages(late.events(sessionId)).map((m) => m.completed)).toEqual(stored.map((m) => m.completed));

    // A subscriber that begins after the second answer's first delta never saw it: the text comes whole.
    const deltas2 = (journal as Line[]).filter((e) => e.type === 'message.delta' && e.data.turnId === turns[1]);
    expect(deltas2.length).toBeGreaterThan(1);
    const mid = await driver('mid');
    await mid.call('session/subscribe', { sessionId, sinceSeq: deltas2[0].seq, textFromDeltas: true });
    await replayed(mid);
    const midCompleted = mid.events(sessionId).filter((e) => e.type === 'message.completed');
    expect(midCompleted).toEqual([stored[2]!.completed]);
  });

  it('a subscriber whose backlog held the turn\'s start and first delta, then live, gets that turn\'s message whole', async () => {
    // held-answer: a first delta, a pause, a second one, then the server waits for /__release.
    const server = await startModelServerProcess(['held-answer'], children);
    const { driver } = await startChatDaemon(server.baseUrl, {}, homes, drivers);
    const [ctl, live] = await Promise.all([driver('controller'), driver('live')]);
    const { session } = await ctl.call('session/create', { engine: 'chat', approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    const sessionId = session.id as string;
    await live.call('session/subscribe', { sessionId, sinceSeq: 0, textFromDeltas: true });
    const lease = await ctl.call('lease/acquire', { sessionId });
    const { turnId } = await ctl.call('turn/start', { sessionId, epoch: lease.epoch, input: { text: 'hold on' }, idempotencyKey: 'k' });
    await live.next((l) => l.note === 'session/event' && l.params.type === 'message.delta' && /answer/.test(l.params.data.text), 20_000);
    // Joins now: its backlog (read back) has turn.started and the deltas so far; the rest comes live.
    const late = await driver('late');
    await late.call('session/subscribe', { sessionId, sinceSeq: 0, textFromDeltas: true });
    await replayed(late);
    await fetch(server.baseUrl.replace(/\/v1$/, '/__release'), { method: 'POST' });
    await turnEnd(live, turnId);
    await turnEnd(late, turnId);
    const completedOf = (d: Driver) => d.events(sessionId).filter((e) => e.type === 'message.completed');
    const text = 'Partial answer never seen.';
    expect(completedOf(live).map((e) => e.data)).toEqual([{ turnId, text: '', finishReason: 'stop', textFromDeltas: true }]);
    expect(messages(live.events(sessionId))[0]!.streamed).toBe(text);
    expect(completedOf(late).map((e) => e.data)).toEqual([{ turnId, text, finishReason: 'stop' }]);
  });

  it('a message.completed whose text is not what its deltas streamed comes whole, even when the lengths agree', async () => {
    // An embedded engine: it streams "abcd" and completes with "wxyz", then streams and completes "same".
    const engine: Engine = {
      async runTurn(ctx) {
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'ab' });
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'cd' });
        ctx.emit('message.completed', { turnId: ctx.turnId, text: 'wxyz' });
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'sa' });
        ctx.emit('message.delta', { turnId: ctx.turnId, text: 'me' });
        ctx.emit('message.completed', { turnId: ctx.turnId, text: 'same' });
        return { status: 'completed' };
      },
    };
    const home = makeHome();
    homes.push(home);
    const env = envFor(home);
    const daemon = createDaemon({ env, engine, idleTimeoutMs: 0 });
    daemons.push(daemon);
    expect(await daemon.start()).toBe(true);
    const client = await AstraClient.connect({ clientName: 'embedder', env, autoStart: false });
    clients.push(client);
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const sub = await client.subscribe(session.id);
    await client.turn.start({ sessionId: session.id, input: { text: 'go' } });
    const texts: string[] = [];
    for await (const e of sub) {
      if (e.type === 'message.completed') texts.push(e.data.text);
      if (e.type === 'turn.completed') break;
    }
    expect(texts).toEqual(['wxyz', 'same']);
  });

  it('the client library asks for it and hands the app every message.completed with its text, live and replayed', async () => {
    const { home, env } = await setup(['fast-stream', 'final-answer']);
    const connect = async (name: string) => {
      const c = await AstraClient.connect({ clientName: name, home, env, autoStart: false });
      clients.push(c);
      return c;
    };
    const ctl = await connect('controller');
    const { session } = await ctl.session.create({ engine: 'chat', approvalPolicy: 'auto', engineOptions: { model: 'llama3.1' } });
    await ctl.acquireController(session.id);
    const live: SessionEvent[] = [];
    let ended = false;
    let turnEnded: (turnId: string) => void = () => undefined;
    const sub = await ctl.subscribe(session.id, {
      onEvent: (e) => {
        live.push(e);
        if (e.type === 'turn.completed') turnEnded(e.data.turnId);
      },
      onEnd: () => (ended = true),
    });
    expect(sub.subscribeParams().textFromDeltas).toBe(true);
    for (const text of ['hello', 'again']) {
      const done = new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the turn did not end within 20 s')), 20_000);
        turnEnded = (turnId) => {
          clearTimeout(timer);
          resolve(turnId);
        };
      });
      const { turnId } = await ctl.turn.start({ sessionId: session.id, input: { text } });
      expect(await done).toBe(turnId);
    }
    const { events: journal } = await ctl.session.read({ sessionId: session.id, sinceSeq: 0 });
    const completedOf = (events: SessionEvent[]) => events.filter((e) => e.type === 'message.completed');
    expect(completedOf(journal).map((e) => (e.data as { text: string }).text)).toEqual([messages(journal as Line[])[0]!.streamed, 'The directory has two files.']);
    expect(completedOf(live)).toEqual(completedOf(journal));

    const replay: SessionEvent[] = [];
    const other = await connect('observer');
    await new Promise<void>((resolve) => void other.subscribe(session.id, { onEvent: (e) => void replay.push(e), onReplayed: () => resolve() }));
    expect(replay).toEqual(journal);
    expect(ended).toBe(false);
  });
});
