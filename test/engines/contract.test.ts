// The engine contract is closed (issue 27): the core (runtime/, and daemon/ but for its composition)
// names no engine, and an engine the core has never heard of, registered at composition, works end
// to end through a real Runtime — its declared events, the history it reads back (live and after a
// reopen), what its interrupted turn leaves, and the refusal of an event it may not emit.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, sourceFiles } from '../architecture/source-files.js';
import { AstraError, type SessionEvent } from '../../protocol/index.js';
import { Runtime, type Engine, type EngineContext, type RecordedEvent } from '../../runtime/index.js';
import { tempDir, waitFor } from '../runtime/helpers.js';



/** The files where an engine may be named: the daemon's composition and its public exports. */
const COMPOSITION = new Set(['daemon/daemon.ts', 'daemon/index.ts']);

describe('the core names no engine', () => {
  it('no file of runtime/ or daemon/ (but its composition) imports an engine or compares an engine name', () => {
    const found: string[] = [];
    for (const room of ['runtime', 'daemon']) {
      for (const file of sourceFiles(path.join(ROOT, room))) {
        const rel = path.relative(ROOT, file).split(path.sep).join('/');
        if (COMPOSITION.has(rel)) continue;
        const src = fs.readFileSync(file, 'utf8');
        for (const m of src.matchAll(/\b(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
          const spec = m[1] ?? m[2]!;
          if (/(^|\/)(engines|chat)(\/|$)|shell-engine|synthetic-engine/.test(spec)) found.push(`${rel} imports ${spec}`);
        }
        for (const m of src.matchAll(/engine\s*[!=]==?\s*['"](\w+)['"]|['"](chat|synthetic|shell)['"]\s*[!=]==?\s*\S*engine/gi)) found.push(`${rel} compares an engine name: ${m[0]}`);
      }
    }
    expect(found).toEqual([]);
  });
});

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * `notes`: an engine the core knows nothing of. A turn answers with the number of earlier notes it
 * reads back (its declared history); input `hang` runs until cancelled; `emit TYPE` emits an event it
 * did not declare (or the runtime's own). What an interrupted turn leaves: one message.completed.
 */
function notesEngine(seen: RecordedEvent[][]): Engine {
  return {
    events: ['message.completed'],
    history: ['message.user', 'message.completed'],
    interrupted: ({ turnId, history }) => [{ type: 'message.completed', data: { turnId, text: `interrupted after ${history.length} notes`, finishReason: 'interrupted' } }],
    async runTurn(ctx: EngineContext) {
      const history = (await ctx.history!()).filter((e) => (e.data as { turnId?: string }).turnId !== ctx.turnId);
      seen.push(history);
      const text = ctx.input.text;
      if (text === 'hang') {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        return { status: 'cancelled' };
      }
      if (text.startsWith('emit ')) {
        const type = text.slice(5) as 'command.output';
        ctx.emit(type, { turnId: ctx.turnId, stream: 'stdout', data: Buffer.from('x') });
        return { status: 'completed' };
      }
      ctx.emit('message.completed', { turnId: ctx.turnId, text: `${history.length} earlier notes` });
      return { status: 'completed' };
    },
  };
}

async function setup() {
  const dataDir = tempDir();
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const seen: RecordedEvent[][] = [];
  const open = async (engines: Record<string, Engine> = { notes: notesEngine(seen) }) => {
    const rt = await Runtime.open({ dataDir, engines });
    const ended = new Map<string, string>();
    rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
    return { rt, ended };
  };
  return { dataDir, seen, open };
}

async function turn(rt: Runtime, ended: Map<string, string>, id: string, text: string, key: string): Promise<string> {
  const { turnId } = await rt.startTurn(id, { text }, key);
  await waitFor(`turn ${text}`, () => ended.get(turnId), 10_000);
  return turnId;
}

async function eventsOf(rt: Runtime, id: string): Promise<SessionEvent[]> {
  return (await rt.readSession(id, { limit: 100_000 })).events;
}

describe('an engine registered at composition, through a real Runtime', () => {
  it('reads back the history it declared, live and after a reopen', async () => {
    const { seen, open, dataDir } = await setup();
    const first = await open();
    const s = await first.rt.createSession({ cwd: dataDir });
    await turn(first.rt, first.ended, s.id, 'one', 'k1');
    await turn(first.rt, first.ended, s.id, 'two', 'k2');
    expect(seen[1]!.map((e) => e.type)).toEqual(['message.user', 'message.completed']);
    await first.rt.close();

    const again = await open();
    cleanups.push(() => again.rt.close());
    await turn(again.rt, again.ended, s.id, 'three', 'k3');
    // Only the declared types, folded from the journal at load: turn.* and session.* are left out.
    expect(seen[2]!.map((e) => [e.type, (e.data as { text: string }).text])).toEqual([
      ['message.user', 'one'],
      ['message.completed', '0 earlier notes'],
      ['message.user', 'two'],
      ['message.completed', '2 earlier notes'],
    ]);
    const last = (await eventsOf(again.rt, s.id)).filter((e) => e.type === 'message.completed').pop()!;
    expect(last.data).toMatchObject({ text: '4 earlier notes' });
  });

  it('appends what its interrupted turn leaves before the turn ends interrupted', async () => {
    const { open, dataDir } = await setup();
    const first = await open();
    const s = await first.rt.createSession({ cwd: dataDir });
    await turn(first.rt, first.ended, s.id, 'one', 'k1');
    const { turnId } = await first.rt.startTurn(s.id, { text: 'hang' }, 'k2');
    await first.rt.close(); // cancels nothing: the turn is still running in the journal

    const again = await open();
    cleanups.push(() => again.rt.close());
    const tail = (await eventsOf(again.rt, s.id)).slice(-2);
    expect(tail.map((e) => e.type)).toEqual(['message.completed', 'turn.completed']);
    expect(tail[0]!.data).toEqual({ turnId, text: 'interrupted after 3 notes', finishReason: 'interrupted' });
    expect(tail[1]!.data).toMatchObject({ turnId, status: 'interrupted' });
  });

  it('ends an interrupted turn whose engine this runtime does not have, leaving nothing of the engine', async () => {
    const { open, dataDir } = await setup();
    const first = await open();
    const s = await first.rt.createSession({ cwd: dataDir });
    const { turnId } = await first.rt.startTurn(s.id, { text: 'hang' }, 'k1');
    await first.rt.close();

    const other = await open({});
    cleanups.push(() => other.rt.close());
    const events = await eventsOf(other.rt, s.id);
    expect(events.map((e) => e.type)).toEqual(['session.created', 'turn.started', 'message.user', 'turn.completed']);
    expect(events[3]!.data).toMatchObject({ turnId, status: 'interrupted' });
    const none = await other.rt.createSession({}).catch((e: Error) => e);
    expect(none).toMatchObject({ reason: 'invalid_params', message: expect.stringMatching(/no engines/) });
  });

  it.each([
    ['command.output', /not among the events the engine declared/],
    ['turn.completed', /only the runtime appends it/],
  ])('refuses a %s it may not emit: the turn fails naming the engine, nothing is appended', async (type, why) => {
    const { open, dataDir } = await setup();
    const { rt, ended } = await open();
    cleanups.push(() => rt.close());
    const s = await rt.createSession({ cwd: dataDir });
    const turnId = await turn(rt, ended, s.id, `emit ${type}`, 'k1');
    expect(ended.get(turnId)).toBe('failed');
    const events = await eventsOf(rt, s.id);
    expect(events.map((e) => e.type)).toEqual(['session.created', 'turn.started', 'message.user', 'turn.completed']);
    const error = (events[3]!.data as { error: string }).error;
    expect(error).toMatch(new RegExp(`The notes engine emitted a '${type}' event`));
    expect(error).toMatch(why);
  });
});

describe('an engine that prepares at session/create', () => {
  /** `ready`: parses {n}, and prepare adds what it learned (n + 1), or refuses when n is 0. */
  const ready = (calls: { cwd: string }[]): Engine => ({
    parseOptions: (raw) => ({ n: Number(raw?.n ?? 1) }),
    async prepare(options, session) {
      calls.push(session);
      const n = (options as { n: number }).n;
      if (n === 0) throw new AstraError('invalid_params', 'the thing cannot start', { field: 'engineOptions.n' });
      return { n, learned: n + 1 };
    },
    events: ['message.completed'],
    async runTurn(ctx) {
      ctx.emit('message.completed', { turnId: ctx.turnId, text: JSON.stringify(ctx.engineOptions) });
      return { status: 'completed' };
    },
  });

  it('keeps what prepare returned and hands it to each turn; a refusal creates nothing', async () => {
    const { open, dataDir } = await setup();
    const calls: { cwd: string }[] = [];
    const { rt, ended } = await open({ ready: ready(calls) });
    cleanups.push(() => rt.close());
    const s = await rt.createSession({ cwd: dataDir, engineOptions: { n: 4 } });
    expect(calls).toEqual([{ cwd: path.resolve(dataDir) }]);
    await turn(rt, ended, s.id, 'go', 'k1');
    const done = (await eventsOf(rt, s.id)).find((e) => e.type === 'message.completed')!;
    expect(done.data).toMatchObject({ text: '{"n":4,"learned":5}' });

    const refused = await rt.createSession({ cwd: dataDir, engineOptions: { n: 0 } }).catch((e: AstraError) => e);
    expect(refused).toMatchObject({ reason: 'invalid_params', message: 'the thing cannot start', data: { field: 'engineOptions.n' } });
    expect((await rt.listSessions()).sessions.map((x) => x.id)).toEqual([s.id]);

    // A create repeated with its idempotency key answers the first session without preparing again.
    const keyed = await rt.createSession({ cwd: dataDir, engineOptions: { n: 2 }, idempotencyKey: 'c1' });
    const again = await rt.createSession({ cwd: dataDir, engineOptions: { n: 2 }, idempotencyKey: 'c1' });
    expect(again.id).toBe(keyed.id);
    expect(calls).toHaveLength(3); // n: 4, n: 0, and the keyed one once
  });
});

describe('an engine that says whether it is available', () => {
  it('is asked at session/create with its parsed options, before prepare: unavailable refuses with engine_unavailable and creates nothing; a keyed repeat is not asked again', async () => {
    const { open, dataDir } = await setup();
    const asked: unknown[] = [];
    let prepared = 0;
    let up = false;
    const gated: Engine = {
      parseOptions: (raw) => ({ n: Number(raw?.n ?? 1) }),
      async availability(options) {
        asked.push(options);
        return up ? { available: true } : { available: false, reason: 'the gate is closed' };
      },
      async prepare(options) {
        prepared++;
        return options;
      },
      async runTurn() {
        return { status: 'completed' };
      },
    };
    const { rt } = await open({ gated });
    cleanups.push(() => rt.close());
    const refused = await rt.createSession({ cwd: dataDir, engineOptions: { n: 3 } }).catch((e: AstraError) => e);
    expect(refused).toMatchObject({ reason: 'engine_unavailable', data: { engine: 'gated' } });
    expect((refused as AstraError).message).toContain('the gate is closed');
    expect(asked).toEqual([{ n: 3 }]);
    expect(prepared).toBe(0);
    expect((await rt.listSessions()).sessions).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'sessions')) ? fs.readdirSync(path.join(dataDir, 'sessions')) : []).toEqual([]);

    up = true;
    const s = await rt.createSession({ cwd: dataDir, idempotencyKey: 'c1' });
    up = false;
    const again = await rt.createSession({ cwd: dataDir, idempotencyKey: 'c1' });
    expect(again.id).toBe(s.id);
    expect(asked).toHaveLength(2);
    expect(prepared).toBe(1);
  });
});
