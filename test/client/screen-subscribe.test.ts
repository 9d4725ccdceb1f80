// Screen subscriptions end to end (a real daemon, real pseudo-terminals, the client library):
// `screen: true` gets the running program's current screen instead of its old output, then live
// bytes with no gap or duplicate; `historyLines` cuts a long session at a turn and says where.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import type { ScreenSnapshot } from '../../client/index.js';
import { testHome } from './helpers.js';
import { waitFor } from '../helpers/processes.js';

const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');

async function render(cols: number, rows: number, writes: Uint8Array[]): Promise<string[]> {
  const t = new Terminal({ cols, rows, allowProposedApi: true });
  for (const w of writes) t.write(w);
  await new Promise<void>((r) => t.write('', r));
  const b = t.buffer.active;
  const out: string[] = [];
  for (let y = 0; y < rows; y++) out.push(b.getLine(b.viewportY + y)?.translateToString(true) ?? '');
  t.dispose();
  return out;
}

const outputOf = (events: SessionEvent[], turnId: string) =>
  events.filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output' && e.data.turnId === turnId);

describe('screen subscriptions through the daemon', () => {
  it('an observer attaching mid-redraw gets the current screen, not the old output, then every later byte once', async () => {
    const t = testHome({ ASTRA_TERMINAL: 'auto' });
    const controller = await t.client({ clientName: 'controller' });
    const { session } = await controller.session.create({ approvalPolicy: 'auto' });
    await controller.acquireController(session.id);
    const all: SessionEvent[] = [];
    const full = await controller.subscribe(session.id, { onEvent: (e) => void all.push(e) });
    // A full-screen redraw loop: it clears and draws a counter until it reads a line.
    const { turnId } = await controller.turn.start({
      sessionId: session.id,
      input: { text: `i=0; while [ $i -lt 300 ]; do i=$((i+1)); printf '\\033[H\\033[2J\\033[1mcounter\\033[0m %d\\nsecond line' $i; done; read x; printf '\\033[H\\033[2Jbye %s' "$x"` },
    });
    await waitFor('300 frames', () => Buffer.concat(outputOf(all, turnId).map((e) => e.data.data)).includes('counter\x1b[0m 300'));
    const observer = await t.client({ clientName: 'observer' });
    const got: SessionEvent[] = [];
    const screens: ScreenSnapshot[] = [];
    const order: string[] = [];
    await observer.subscribe(session.id, {
      screen: true,
      onEvent: (e) => {
        got.push(e);
        order.push('event');
      },
      onScreen: (s) => {
        screens.push(s);
        order.push('screen');
      },
      onReplayed: () => void order.push('replayed'),
    });
    await waitFor('the backlog', () => order.includes('replayed'));
    expect(screens).toHaveLength(1);
    const screen = screens[0]!;
    expect([screen.sessionId, screen.turnId, screen.cols, screen.rows, screen.alternate]).toEqual([session.id, turnId, 80, 24, false]);
    expect(order.slice(-2)).toEqual(['screen', 'replayed']);
    expect(outputOf(got, turnId)).toEqual([]);
    expect((await render(screen.cols, screen.rows, [screen.data])).slice(0, 2)).toEqual(['counter 300', 'second line']);
    await controller.command.input({ sessionId: session.id, turnId, data: Buffer.from('done\r') });
    await waitFor('the end, seen by both', () => got.some((e) => e.type === 'turn.completed') && all.some((e) => e.type === 'turn.completed'));
    const reference = await render(80, 24, outputOf(all, turnId).map((e) => e.data.data));
    expect(reference[0]).toBe('bye done');
    expect(outputOf(got, turnId).every((e) => e.seq > screen.atSeq)).toBe(true);
    expect(await render(screen.cols, screen.rows, [screen.data, ...outputOf(got, turnId).map((e) => e.data.data)])).toEqual(reference);
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => !(e.type === 'command.output' && e.seq <= screen.atSeq)).map((e) => e.seq));
    await full.close();
  });

  it('a resize reaches the screen: the snapshot has the new size; without screen every event comes', async () => {
    const t = testHome({ ASTRA_TERMINAL: 'auto' });
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const { turnId } = await client.turn.start({ sessionId: session.id, input: { text: `printf 'ready\\n'; read x; stty size` } });
    const plain: SessionEvent[] = [];
    await client.subscribe(session.id, { onEvent: (e) => void plain.push(e) });
    await waitFor('ready', () => Buffer.concat(outputOf(plain, turnId).map((e) => e.data.data)).includes('ready'));
    expect(await client.command.resize({ sessionId: session.id, turnId, cols: 120, rows: 40 })).toEqual({ applied: true });
    const other = await t.client({ clientName: 'other' });
    let screen: ScreenSnapshot | undefined;
    await other.subscribe(session.id, { screen: true, onEvent: () => {}, onScreen: (s) => (screen = s) });
    await waitFor('the screen', () => screen);
    expect([screen!.cols, screen!.rows]).toEqual([120, 40]);
    expect((await render(120, 40, [screen!.data]))[0]).toBe('ready');
    await client.command.input({ sessionId: session.id, turnId, data: Buffer.from('\r') });
    await waitFor('the end', () => plain.some((e) => e.type === 'turn.completed'));
    expect(Buffer.concat(outputOf(plain, turnId).map((e) => e.data.data)).toString()).toContain('40 120');
    // The plain subscriber got every event of the session, in order.
    const { events } = await client.session.read({ sessionId: session.id });
    expect(plain.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
  });

  it('historyLines cuts a many-turn session at a turn and onReplayed says historyFromSeq; a resubscription does not ask again', async () => {
    const t = testHome({ ASTRA_TERMINAL: 'auto' });
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const done = new Set<string>();
    const all: SessionEvent[] = [];
    await client.subscribe(session.id, { onEvent: (e) => {
      all.push(e);
      if (e.type === 'turn.completed') done.add(e.data.turnId);
    } });
    const starts: number[] = [];
    for (let i = 0; i < 30; i++) {
      const { turnId } = await client.turn.start({ sessionId: session.id, input: { text: `seq 1 9` } });
      await waitFor(`turn ${i}`, () => done.has(turnId));
      starts.push(all.find((e) => e.type === 'turn.started' && e.data.turnId === turnId)!.seq);
    }
    // A turn prints 10 lines (its input and 9 of output): 100 lines keep the last 10 turns.
    const other = await t.client({ clientName: 'other' });
    const got: SessionEvent[] = [];
    let info: { historyFromSeq?: number } | undefined;
    const sub = await other.subscribe(session.id, { historyLines: 100, onEvent: (e) => void got.push(e), onReplayed: (_t, i) => (info = i) });
    await waitFor('the backlog', () => info);
    expect(info).toEqual({ historyFromSeq: starts[20] });
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => e.seq >= starts[20]!).map((e) => e.seq));
    expect(sub.subscribeParams()).toEqual({ sessionId: session.id, sinceSeq: sub.lastSeq, textFromDeltas: true });
    await expect(other.subscribe('ses_x', { historyLines: 0 })).rejects.toThrow(/historyLines/);
  });

  it('on pipes (ASTRA_TERMINAL=pipes): command.started says tty: false, no screen comes, and the output arrives as events', async () => {
    const t = testHome({ ASTRA_TERMINAL: 'pipes' });
    const client = await t.client();
    const { session } = await client.session.create({ approvalPolicy: 'auto' });
    await client.acquireController(session.id);
    const { turnId } = await client.turn.start({ sessionId: session.id, input: { text: `printf 'out\\n'; printf 'err\\n' >&2; sleep 30` } });
    const other = await t.client({ clientName: 'other' });
    const got: SessionEvent[] = [];
    let screens = 0;
    let replayed = false;
    await waitFor('both outputs', async () => ((await client.session.read({ sessionId: session.id })).events.filter((e) => e.type === 'command.output').length >= 2 ? true : undefined));
    await other.subscribe(session.id, { screen: true, onEvent: (e) => void got.push(e), onScreen: () => void screens++, onReplayed: () => (replayed = true) });
    await waitFor('the backlog', () => replayed);
    expect(screens).toBe(0);
    expect(got.find((e): e is SessionEvent<'command.started'> => e.type === 'command.started')!.data.tty).toBe(false);
    expect(outputOf(got, turnId).map((e) => `${e.data.stream}:${Buffer.from(e.data.data).toString()}`).sort()).toEqual(['stderr:err\n', 'stdout:out\n']);
    await client.turn.cancel({ sessionId: session.id, turnId });
  });
});
