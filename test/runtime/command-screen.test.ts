// The running command's screen in the runtime (real pseudo-terminals): a subscriber asking for it
// gets the screen instead of the output so far, and the output after it with no gap or duplicate;
// historyLines cuts a long session at a turn; without either, every event comes.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { Runtime, StoredEvent, silentLogger, type ScreenCapture } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { SubscriptionFeed, type FeedSource } from '../../runtime/feed/subscription-feed.js';
import { defaultPackEventBody, peekType } from '../../runtime/event-body.js';
import { packEventBody } from '../../ipc/wire-bytes.js';
import { tempDir, waitFor } from './helpers.js';

const requireCjs = createRequire(import.meta.url);
const { Terminal } = requireCjs('@xterm/headless') as typeof import('@xterm/headless');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const dir = tempDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal: 'auto' }) } });
  cleanups.push(() => rt.close());
  const all: SessionEvent[] = [];
  rt.on('event', (e) => all.push(e));
  const ended = new Map<string, string>();
  rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
  const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
  return { rt, id: s.id, all, ended };
}

/** What a terminal of cols × rows shows after these writes (each a size change or bytes). */
async function render(cols: number, rows: number, writes: Uint8Array[]): Promise<string[]> {
  const t = new Terminal({ cols, rows, allowProposedApi: true });
  for (const w of writes) t.write(w);
  await new Promise<void>((r) => t.write('', r));
  const out: string[] = [];
  const b = t.buffer.active;
  for (let y = 0; y < rows; y++) out.push(b.getLine(b.viewportY + y)?.translateToString(true) ?? '');
  t.dispose();
  return out;
}

const outputOf = (events: SessionEvent[], turnId: string) =>
  events.filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output' && e.data.turnId === turnId);

describe('a subscription with screen: true', () => {
  it('gets the running program\'s current screen instead of its old output, then every later byte once', async () => {
    const { rt, id, all, ended } = await setup();
    // A full-screen redraw: clear, home, a counter — 400 frames, then it waits for input.
    const { turnId } = await rt.startTurn(id, { text: `i=0; while [ $i -lt 400 ]; do i=$((i+1)); printf '\\033[H\\033[2Jcounter %d\\nof the loop' $i; done; read x; printf '\\033[H\\033[2Jbye'` }, 'k1');
    // All 400 drawn, the last one whole (its bytes may come in two events).
    await waitFor('400 frames drawn', () => outputOf(all, turnId).length > 0 && /counter 400\r?\nof the loop$/.test(Buffer.concat(outputOf(all, turnId).map((e) => e.data.data)).toString('latin1')));
    const got: SessionEvent[] = [];
    const screens: ScreenCapture[] = [];
    const order: string[] = [];
    let replayed = false;
    const sub = await rt.subscribe(id, 0, {
      onEvent: (e) => {
        got.push(e);
        order.push(`e${e.seq}`);
      },
      onScreen: (s) => {
        screens.push(s);
        order.push('screen');
      },
      onReplayed: () => {
        replayed = true;
        order.push('replayed');
      },
    }, { screen: true });
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => replayed);
    expect(screens).toHaveLength(1);
    const screen = screens[0]!;
    expect(screen.turnId).toBe(turnId);
    expect(order.indexOf('screen')).toBeLessThan(order.indexOf('replayed'));
    // None of the output the screen stands for came as events.
    expect(outputOf(got, turnId).filter((e) => e.seq <= screen.atSeq)).toEqual([]);
    const shown = await render(screen.cols, screen.rows, [screen.data]);
    expect(shown.slice(0, 2)).toEqual(['counter 400', 'of the loop']);
    // Live bytes follow: the program's last frame.
    await rt.commandInput(id, turnId, Buffer.from('\r'));
    await waitFor('the turn to end', () => ended.get(turnId));
    await waitFor('the subscriber to see the end', () => got.some((e) => e.type === 'turn.completed'));
    const after = outputOf(got, turnId);
    expect(after.every((e) => e.seq > screen.atSeq)).toBe(true);
    const reference = await render(80, 24, outputOf(all, turnId).map((e) => e.data.data));
    const mine = await render(screen.cols, screen.rows, [screen.data, ...after.map((e) => e.data.data)]);
    expect(mine).toEqual(reference);
    expect(reference[0]).toBe('bye');
    // Every event that is not the left-out output came, once, in order.
    const expected = all.filter((e) => !(e.type === 'command.output' && e.seq <= screen.atSeq && e.seq > 0)).map((e) => e.seq);
    expect(got.map((e) => e.seq)).toEqual(expected);
  });

  it('attaching while the program redraws as fast as it can: the screen, then the rest with no gap or duplicate', async () => {
    const { rt, id, all, ended } = await setup();
    const dir = (await rt.getSession(id)).cwd;
    const { turnId } = await rt.startTurn(id, { text: `i=0; while [ ! -e stop ]; do i=$((i+1)); printf '\\033[H\\033[2Jframe %d\\n\\033[7mstatus\\033[0m %d' $i $i; done; printf '\\033[H\\033[2Jstopped at %d' $i` }, 'k1');
    await waitFor('frames', () => outputOf(all, turnId).length > 20);
    const got: SessionEvent[] = [];
    const screens: ScreenCapture[] = [];
    // In arrival order: output bytes, and screens (each drawn on a cleared terminal).
    const drawn: Uint8Array[] = [];
    let replayed = false;
    const sub = await rt.subscribe(
      id,
      0,
      {
        onEvent: (e) => {
          got.push(e);
          if (e.type === 'command.output') drawn.push(e.data.data);
        },
        onScreen: (s) => {
          screens.push(s);
          drawn.push(Buffer.from('\x1bc'), s.data);
        },
        onReplayed: () => (replayed = true),
      },
      { screen: true },
    );
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => replayed);
    // More of the program's frames: as bytes, or (a flood: docs/protocol.md "Catching up") as screens.
    await waitFor('more frames after the screen', () => outputOf(got, turnId).length + screens.length > 20);
    fs.writeFileSync(`${dir}/stop`, '');
    await waitFor('the turn to end', () => ended.get(turnId));
    await waitFor('the subscriber to see the end', () => got.some((e) => e.type === 'turn.completed'));
    // The first screen, then (the program floods its terminal) more frames of it.
    expect(screens.length).toBeGreaterThanOrEqual(1);
    const screen = screens[0]!;
    // Exactly what the output through atSeq drew: a frame, or one being drawn (the program is mid-write).
    expect((await render(screen.cols, screen.rows, [screen.data]))[0]).toMatch(/^(f(r(a(m(e( \d*)?)?)?)?)?)?$/);
    expect((await render(screen.cols, screen.rows, [screen.data])).join('\n')).not.toMatch(/frame \d+[^]*frame \d+/);
    const after = outputOf(got, turnId);
    expect(after.every((e) => e.seq > screen.atSeq)).toBe(true);
    const reference = await render(80, 24, outputOf(all, turnId).map((e) => e.data.data));
    expect(reference[0]).toMatch(/^stopped at \d+$/);
    expect(await render(screen.cols, screen.rows, drawn)).toEqual(reference);
    // Every event but the output the screens stand for came, once, in order.
    const others = (es: SessionEvent[]) => es.filter((e) => e.type !== 'command.output').map((e) => e.seq);
    expect(others(got)).toEqual(others(all));
  });

  it('a subscriber that falls behind while the program runs catches up with its current screen, not every byte it missed', async () => {
    const { rt, id, all, ended } = await setup();
    const got: SessionEvent[] = [];
    const screens: ScreenCapture[] = [];
    let replayed = false;
    let refuse = true;
    let release!: () => void;
    const capacity = new Promise<void>((r) => (release = r));
    const sub = await rt.subscribe(
      id,
      0,
      {
        onEvent: (e) => {
          // The first output finds the subscriber's queue full: it is paused until capacity comes.
          if (refuse && e.type === 'command.output') {
            refuse = false;
            return false;
          }
          got.push(e);
          return true;
        },
        // Full only once it refused an event; before that it always has room.
        waitForCapacity: () => (refuse ? Promise.resolve() : capacity),
        onScreen: (sc) => void screens.push(sc),
        onReplayed: () => (replayed = true),
      },
      { screen: true },
    );
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the (empty) backlog', () => replayed);
    const { turnId } = await rt.startTurn(id, { text: `for i in $(seq 1 300); do echo "row $i"; if [ $((i % 50)) = 0 ]; then sleep 0.02; fi; done; read x; echo done` }, 'k1');
    await waitFor('all 300 rows written', () => Buffer.concat(outputOf(all, turnId).map((e) => e.data.data)).includes('row 300'));
    expect(sub.phase).toBe('paused');
    release();
    await waitFor('the catch-up screen', () => screens[0]);
    const screen = screens[0]!;
    expect(screen.turnId).toBe(turnId);
    // The lines that scrolled by are not sent again (they are in the journal).
    expect(screen.scrollback).toBe('');
    expect((await render(screen.cols, screen.rows, [screen.data])).join('\n')).toMatch(/row 300/);
    await rt.commandInput(id, turnId, Buffer.from('\r'));
    await waitFor('the turn to end', () => ended.get(turnId));
    await waitFor('the subscriber to see the end', () => got.some((e) => e.type === 'turn.completed'));
    // None of the output it missed came: only what followed the screen.
    const mineOut = outputOf(got, turnId);
    expect(mineOut.every((e) => e.seq > screen.atSeq)).toBe(true);
    expect(outputOf(all, turnId).filter((e) => e.seq <= screen.atSeq).length).toBeGreaterThan(1);
    const reference = await render(80, 24, outputOf(all, turnId).map((e) => e.data.data));
    expect(await render(screen.cols, screen.rows, [screen.data, ...mineOut.map((e) => e.data.data)])).toEqual(reference);
    // Every other event came, once, in order.
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => !(e.type === 'command.output' && e.seq <= screen.atSeq)).map((e) => e.seq));
  });

  it('a flood of output reaches a screen subscriber as frames of the screen, ending on the command\'s last screen', async () => {
    const { rt, id, all, ended } = await setup();
    // In arrival order: output bytes, and screens (each drawn on a cleared terminal).
    const drawn: Uint8Array[] = [];
    let replayed = false;
    const got: SessionEvent[] = [];
    const sub = await rt.subscribe(
      id,
      0,
      {
        onEvent: (e) => {
          got.push(e);
          if (e.type === 'command.output') drawn.push(e.data.data);
        },
        onScreen: (sc) => {
          drawn.push(Buffer.from('\x1bc'), sc.data);
        },
        onReplayed: () => (replayed = true),
      },
      { screen: true },
    );
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the (empty) backlog', () => replayed);
    const { turnId } = await rt.startTurn(id, { text: 'seq 1 300000' }, 'k1');
    await waitFor('the turn to end', () => ended.get(turnId));
    await waitFor('the subscriber to see the end', () => got.some((e) => e.type === 'turn.completed'));
    // How much of the flood is left out (how many frames) depends on how fast the machine ran the
    // command and the subscriber: not asserted here (test/runtime/flood-frames.test.ts drives the
    // detector with its own clock; bench/ measures it). What must hold on any machine: what the
    // subscriber shows is the command's last screen, and it got no output twice or out of order.
    const mineOut = got.filter((e) => e.type === 'command.output').map((e) => e.seq);
    expect(mineOut).toEqual([...new Set(mineOut)].sort((a, b) => a - b));
    const reference = await render(80, 24, outputOf(all, turnId).map((e) => e.data.data));
    expect(reference.join('\n')).toContain('300000');
    expect(await render(80, 24, drawn)).toEqual(reference);
    // Every event but output came, once, in order.
    const others = (es: SessionEvent[]) => es.filter((e) => e.type !== 'command.output').map((e) => e.seq);
    expect(others(got)).toEqual(others(all));
  });

  it('without screen, a subscriber still gets every event from sinceSeq', async () => {
    const { rt, id, all, ended } = await setup();
    const { turnId } = await rt.startTurn(id, { text: `printf 'one\\n'; read x; printf 'two\\n'` }, 'k1');
    await waitFor('output', () => outputOf(all, turnId).length > 0);
    const got: SessionEvent[] = [];
    let screens = 0;
    const sub = await rt.subscribe(id, 2, { onEvent: (e) => void got.push(e), onScreen: () => void screens++ });
    cleanups.push(() => sub.unsubscribe());
    await rt.commandInput(id, turnId, Buffer.from('\r'));
    await waitFor('the turn to end', () => ended.get(turnId) && got.some((e) => e.type === 'turn.completed'));
    expect(screens).toBe(0);
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => e.seq > 2).map((e) => e.seq));
  });

  it('follows a resize: the snapshot has the new size', async () => {
    const { rt, id, all, ended } = await setup();
    const { turnId } = await rt.startTurn(id, { text: `printf 'ready\\n'; read x` }, 'k1');
    await waitFor('ready', () => Buffer.concat(outputOf(all, turnId).map((e) => e.data.data)).includes('ready'));
    expect(await rt.commandResize(id, turnId, 100, 30)).toEqual({ applied: true });
    const screens: ScreenCapture[] = [];
    let replayed = false;
    const sub = await rt.subscribe(id, 0, { onEvent: () => {}, onScreen: (s) => void screens.push(s), onReplayed: () => (replayed = true) }, { screen: true });
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => replayed);
    expect(screens.map((s) => [s.cols, s.rows])).toEqual([[100, 30]]);
    expect((await render(100, 30, [screens[0]!.data]))[0]).toBe('ready');
    await rt.commandInput(id, turnId, Buffer.from('\r'));
    await waitFor('the turn to end', () => ended.get(turnId));
  });

  // Issue 26: an observer learns the program's size from the screens; command.started says the first.
  it('a resize that changes the size sends a live subscriber the screen again at the new size, though it has every byte; the same size sends none', async () => {
    const { rt, id, all, ended } = await setup();
    const { turnId } = await rt.startTurn(id, { text: `printf 'ready\\n'; read x` }, 'k1');
    await waitFor('ready', () => Buffer.concat(outputOf(all, turnId).map((e) => e.data.data)).includes('ready'));
    const started = all.find((e): e is SessionEvent<'command.started'> => e.type === 'command.started')!;
    expect(started.data).toMatchObject({ tty: true, cols: 80, rows: 24 });
    const screens: ScreenCapture[] = [];
    let replayed = false;
    const sub = await rt.subscribe(id, 0, { onEvent: () => {}, onScreen: (s) => void screens.push(s), onReplayed: () => (replayed = true) }, { screen: true });
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => replayed);
    expect(screens.map((s) => [s.cols, s.rows])).toEqual([[80, 24]]);
    expect(await rt.commandResize(id, turnId, 80, 24)).toEqual({ applied: true });
    expect(await rt.commandResize(id, turnId, 60, 20)).toEqual({ applied: true });
    await waitFor('a screen at the new size', () => screens.length >= 2);
    expect(screens.map((s) => [s.cols, s.rows])).toEqual([[80, 24], [60, 20]]);
    expect(screens[1]!.atSeq).toBe(screens[0]!.atSeq);
    expect(screens[1]!.scrollback).toBe('');
    expect((await render(60, 20, [screens[1]!.data]))[0]).toBe('ready');
    await rt.commandInput(id, turnId, Buffer.from('\r'));
    await waitFor('the turn to end', () => ended.get(turnId));
    expect(screens).toHaveLength(2);
  });

  it('sends no screen for a command on pipes (tty: false), and the output comes as events', async () => {
    const dir = tempDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal: 'pipes' }) } });
    cleanups.push(() => rt.close());
    const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
    const all: SessionEvent[] = [];
    rt.on('event', (e) => all.push(e));
    const { turnId } = await rt.startTurn(s.id, { text: `printf 'piped\\n'; sleep 30` }, 'k1');
    await waitFor('output', () => outputOf(all, turnId).length > 0);
    expect(all.find((e): e is SessionEvent<'command.started'> => e.type === 'command.started')!.data.tty).toBe(false);
    const got: SessionEvent[] = [];
    let screens = 0;
    let replayed = false;
    const sub = await rt.subscribe(s.id, 0, { onEvent: (e) => void got.push(e), onScreen: () => void screens++, onReplayed: () => (replayed = true) }, { screen: true });
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => replayed);
    expect(screens).toBe(0);
    expect(Buffer.concat(outputOf(got, turnId).map((e) => e.data.data)).toString()).toBe('piped\n');
    await rt.cancelTurn(s.id, turnId);
  });
});

describe('a subscription with historyLines', () => {
  it('starts at a turn so that finished turns print about that many lines, and says where', async () => {
    const { rt, id, all, ended } = await setup();
    const starts: number[] = [];
    for (let i = 0; i < 12; i++) {
      const { turnId } = await rt.startTurn(id, { text: `seq 1 10` }, `k${i}`);
      await waitFor(`turn ${i}`, () => ended.get(turnId));
      starts.push(all.find((e) => e.type === 'turn.started' && (e as SessionEvent<'turn.started'>).data.turnId === turnId)!.seq);
    }
    // Each turn: its input line and 10 lines of output = 11 lines. 35 lines keep the last 3 turns.
    const got: SessionEvent[] = [];
    let info: { historyFromSeq?: number } | undefined;
    const sub = await rt.subscribe(id, 0, { onEvent: (e) => void got.push(e), onReplayed: (_t, i) => (info = i) }, { historyLines: 35 });
    cleanups.push(() => sub.unsubscribe());
    await waitFor('the backlog', () => info);
    expect(info).toEqual({ historyFromSeq: starts[9] });
    expect(got[0]!.seq).toBe(starts[9]);
    expect(got.map((e) => e.seq)).toEqual(all.filter((e) => e.seq >= starts[9]!).map((e) => e.seq));
    // The latest finished turn is kept however long it is; with a sinceSeq, historyLines is not used.
    let info1: { historyFromSeq?: number } | undefined;
    const sub1 = await rt.subscribe(id, 0, { onEvent: () => {}, onReplayed: (_t, i) => (info1 = i) }, { historyLines: 1 });
    cleanups.push(() => sub1.unsubscribe());
    await waitFor('the backlog', () => info1);
    expect(info1).toEqual({ historyFromSeq: starts[11] });
    let info2: { historyFromSeq?: number } | undefined;
    const sub2 = await rt.subscribe(id, 3, { onEvent: () => {}, onReplayed: (_t, i) => (info2 = i) }, { historyLines: 1 });
    cleanups.push(() => sub2.unsubscribe());
    await waitFor('the backlog', () => info2);
    expect(info2).toEqual({});
    // Enough lines for all: nothing is cut.
    let info3: { historyFromSeq?: number } | undefined;
    const sub3 = await rt.subscribe(id, 0, { onEvent: () => {}, onReplayed: (_t, i) => (info3 = i) }, { historyLines: 100_000 });
    cleanups.push(() => sub3.unsubscribe());
    await waitFor('the backlog', () => info3);
    expect(info3).toEqual({});
  });

  it('counts the same after a restart (the counts are folded on replay too)', async () => {
    const dir = tempDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    let rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal: 'auto' }) } });
    const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
    const ended = new Set<string>();
    rt.on('turnEnded', (_s, t) => ended.add(t));
    for (let i = 0; i < 4; i++) {
      const { turnId } = await rt.startTurn(s.id, { text: `seq 1 20` }, `k${i}`);
      await waitFor(`turn ${i}`, () => ended.has(turnId));
    }
    const before = await new Promise<{ historyFromSeq?: number }>((resolve) => void rt.subscribe(s.id, 0, { onEvent: () => {}, onReplayed: (_t, i) => resolve(i) }, { historyLines: 50 }));
    await rt.close();
    rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal: 'auto' }) } });
    cleanups.push(() => rt.close());
    const after = await new Promise<{ historyFromSeq?: number }>((resolve) => void rt.subscribe(s.id, 0, { onEvent: () => {}, onReplayed: (_t, i) => resolve(i) }, { historyLines: 50 }));
    expect(before.historyFromSeq).toBeGreaterThan(1);
    expect(after).toEqual(before);
  });
});

/** A stored event of session s1 whose body is `bytes` zero bytes. */
const storedEvent = (seq: number, type: string, data: object, bytes = 8) => StoredEvent.live('s1', seq, Buffer.alloc(bytes), 0, bytes, 0, type, data, undefined);

/** A FeedSource over `published` (what the journal has written), with the screen's parts given. */
function feedSourceOf(published: StoredEvent[], screen: Pick<FeedSource, 'captureScreen'> & Partial<FeedSource>): FeedSource {
  return {
    id: 's1',
    logger: silentLogger,
    get publishedSeq() {
      return published.length;
    },
    isClosed: false,
    readPublished: async (after) => published.filter((e) => e.seq > after),
    trimTail: () => {},
    drop: () => {},
    ...screen,
  };
}

describe('the feed of a subscription with a screen taken past what was published', () => {
  it('cuts the output the screen stands for when it arrives live, and sends the screen before replayed', async () => {
    const published: StoredEvent[] = [storedEvent(1, 'turn.started', { turnId: 't' }), storedEvent(2, 'command.started', { turnId: 't', tty: true }), storedEvent(3, 'command.output', { turnId: 't', data: Buffer.from('a') })];
    const ev = storedEvent;
    // Appended through seq 5 (two outputs not yet written to the journal, so not yet published).
    const source = feedSourceOf(published, {
      captureScreen: async () => ({ turnId: 't', fromSeq: 2, atSeq: 5, cols: 80, rows: 24, data: Buffer.from('SCREEN'), scrollback: '', alternate: false }),
    });
    const order: string[] = [];
    const feed = new SubscriptionFeed(source, { onEvent: (e) => void order.push(`${e.type}#${e.seq}`), onScreen: (s) => void order.push(`screen@${s.atSeq}`), onReplayed: (t) => void order.push(`replayed@${t}`) }, 0, { screen: true });
    feed.start();
    await waitFor('live', () => feed.phase === 'live');
    for (const e of [ev(4, 'command.output', { turnId: 't' }), ev(5, 'lease.changed', { epoch: 1 }), ev(6, 'command.output', { turnId: 't' })]) {
      published.push(e);
      feed.offer(e);
    }
    expect(order).toEqual(['turn.started#1', 'command.started#2', 'screen@5', 'replayed@3', 'lease.changed#5', 'command.output#6']);
    expect(feed.lastSeq).toBe(6);
  });
});

describe('the feed of a screen subscriber getting frames of a flood', () => {
  it('sends the command\'s last screen as soon as the command ends, not after the frame\'s time', async () => {
    const ev = storedEvent;
    const published: StoredEvent[] = [ev(1, 'turn.started', { turnId: 't' }), ev(2, 'command.started', { turnId: 't', tty: true })];
    let running = true;
    const captures: boolean[] = [];
    const source = feedSourceOf(published, {
      captureScreen: async (catchUp) => {
        captures.push(catchUp === true);
        const atSeq = published.filter((e) => e.type === 'command.output').at(-1)?.seq ?? 2;
        return { turnId: 't', fromSeq: 2, atSeq, cols: 80, rows: 24, data: Buffer.from(`SCREEN@${atSeq}`), scrollback: '', alternate: false };
      },
      screenRunning: () => running,
    });
    const order: string[] = [];
    const feed = new SubscriptionFeed(source, { onEvent: (e) => void order.push(`${e.type}#${e.seq}`), onScreen: (sc) => void order.push(`screen@${sc.atSeq}`) }, 0, { screen: true });
    // The frame's wait is a timer that never fires here: only the command's end can end it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      feed.start();
      for (let i = 0; i < 200 && feed.phase !== 'live'; i++) await new Promise((r) => setImmediate(r));
      expect(feed.phase).toBe('live');
      // 192 KiB of output at once: past the flood's 128 KiB, so the feed waits for its first frame.
      for (const seq of [3, 4, 5]) {
        published.push(ev(seq, 'command.output', { turnId: 't' }, 64 * 1024));
        feed.offer(published.at(-1)!);
      }
      expect(feed.phase).toBe('paused');
      // More output while it waits (left out: the screen will stand for it), then the command ends.
      published.push(ev(6, 'command.output', { turnId: 't' }, 64 * 1024));
      feed.offer(published.at(-1)!);
      const before = captures.length;
      running = false;
      published.push(ev(7, 'command.completed', { turnId: 't', exitCode: 0 }));
      feed.offer(published.at(-1)!);
      for (let i = 0; i < 200 && feed.phase !== 'live'; i++) await new Promise((r) => setImmediate(r));
      expect(captures.length, 'the last screen was captured without waiting out the frame').toBe(before + 1);
      expect(captures.at(-1)).toBe(true);
      expect(order.slice(-3)).toEqual(['command.output#5', 'screen@6', 'command.completed#7']);
      expect(feed.phase).toBe('live');
    } finally {
      vi.useRealTimers();
      feed.close();
    }
  });
});

describe('a running screen captured for several subscribers', () => {
  it('shares one capture between requests for the same screen, and takes another after output or a resize', async () => {
    const { RunningScreen } = await import('../../runtime/running-screen.js');
    const rs = new RunningScreen('s1', silentLogger, 'inline');
    cleanups.push(() => rs.dispose());
    rs.onEvent('command.started', 1, { turnId: 't', tty: true }, { cols: 80, rows: 24 });
    rs.output(2, 't', Buffer.from('hello\r\n'));
    const a = rs.capture(false);
    const b = rs.capture(false);
    expect(b).toBe(a);
    const [ca, cb] = await Promise.all([a, b]);
    expect(ca).toBe(cb);
    expect(ca!.data.toString()).toContain('hello');
    // With scrollback is another capture; so is one after more output, and one after a resize.
    expect(rs.capture(true)).not.toBe(a);
    rs.output(3, 't', Buffer.from('world\r\n'));
    const c = rs.capture(false);
    expect(c).not.toBe(a);
    expect((await c)!.atSeq).toBe(3);
    expect(rs.capture(false)).toBe(c);
    rs.resize('t', 100, 30);
    const d = rs.capture(false);
    expect(d).not.toBe(c);
    expect(await d).toMatchObject({ atSeq: 3, cols: 100, rows: 30 });
  });
});

describe('peekType', () => {
  it('reads the type of a journal body in either packer\'s encoding without decoding it', () => {
    const body = { seq: 70000, ts: Date.now(), type: 'command.output', data: { turnId: 'turn_x', stream: 'stdout', data: Buffer.from('hi') } };
    const wire = packEventBody(body);
    expect(peekType(Buffer.isBuffer(wire) ? wire : Buffer.concat([wire[0], wire[1]]))).toBe('command.output');
    expect(peekType(Buffer.from(defaultPackEventBody({ ...body, type: 'lease.changed', data: { epoch: 1 } })))).toBe('lease.changed');
    expect(peekType(Buffer.from([0x94, 1, 2, 3, 4]))).toBeUndefined();
  });
});

describe('the running screen under a flood', () => {
  it('is full at its high mark until the emulator catches up, and gives up a screen far behind', async () => {
    const { RunningScreen } = await import('../../runtime/running-screen.js');
    const rs = new RunningScreen('s1', silentLogger, 'inline');
    rs.onEvent('command.started', 1, { turnId: 't', tty: true }, { cols: 80, rows: 24 });
    expect(rs.full).toBe(false);
    rs.output(2, 't', Buffer.from('line\r\n'.repeat(1_000_000))); // 6 MB, over the 4 MiB high mark
    expect(rs.full).toBe(true);
    await rs.drained();
    expect(rs.full).toBe(false);
    const cap = await rs.capture();
    expect(cap).toMatchObject({ turnId: 't', fromSeq: 1, atSeq: 2, cols: 80, rows: 24 });
    expect(cap!.scrollback.split('\n')).toHaveLength(1000);
    // An engine that ignores being held: past 32 MiB unparsed the screen is given up.
    rs.output(3, 't', Buffer.alloc(33 * 1024 * 1024, 0x41));
    expect(await rs.capture()).toBeUndefined();
    expect(rs.full).toBe(false);
    // The end of the command disposes a screen; output of another turn is not written to it.
    rs.onEvent('command.started', 4, { turnId: 'u', tty: true }, { cols: 80, rows: 24 });
    rs.output(5, 'other', Buffer.from('x'));
    expect((await rs.capture())!.atSeq).toBe(4);
    rs.onEvent('command.completed', 6, { turnId: 'u' }, { cols: 80, rows: 24 });
    expect(await rs.capture()).toBeUndefined();
  });
});
