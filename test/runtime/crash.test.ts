import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { validateEvent } from '../../protocol/index.js';
import { Runtime } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { killOrphanGroup } from '../../runtime/orphans.js';
import { ensureBuilt, isAlive, recordingLogger, tempDir, waitFor } from './helpers.js';

const fixture = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures', 'journal-writer.mjs');
const children: ChildProcess[] = [];
const groups: number[] = [];
const dirs: string[] = [];

beforeAll(() => {
  ensureBuilt();
}, 180_000);

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pid of groups.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

type Ack = { ack: string; [k: string]: unknown };

function startChild(args: string[]) {
  const child = spawn(process.execPath, [fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const acks: Ack[] = [];
  let stderr = '';
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      acks.push(JSON.parse(buf.slice(0, nl)) as Ack);
      buf = buf.slice(nl + 1);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, acks, exited, stderr: () => stderr };
}

async function readAll(rt: Runtime, id: string, from = 0): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  let since: number | undefined = from;
  while (since !== undefined) {
    const r = await rt.readSession(id, { sinceSeq: since, maxBytes: 2 * 1024 * 1024 });
    out.push(...r.events);
    since = r.nextSeq;
  }
  return out;
}

describe('crash safety', () => {
  // 20 writer processes started and killed, the journal re-read after each: minutes on a loaded machine (the waits inside have their own deadlines).
  it('a writer SIGKILLed mid-burst 20 times leaves a valid prefix holding every acknowledged mutation', { timeout: 300_000 }, async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const allAcks: Ack[] = [];
    let sessionId: string | undefined;
    // Verified incrementally: the journal only grows, so each reopen checks what came after the
    // previous verified head, and that this head never moved backwards.
    let verifiedSeq = 0;
    const epochs = new Set<number>();
    const titles = new Set<string | undefined>();
    const deltas = new Map<string, number>();
    const completed = new Map<string, string>();
    const started: string[] = [];
    let totalEvents = 0;
    for (let run = 0; run < 20; run++) {
      const c = startChild([dataDir, 'burst', String(run)]);
      const target = 2 + Math.floor(Math.random() * 25);
      await waitFor(`${target} acks from run ${run}`, () => c.acks.length >= target || c.child.exitCode !== null, 20_000);
      expect(c.child.exitCode, c.stderr()).toBeNull();
      c.child.kill('SIGKILL');
      await c.exited;
      allAcks.push(...c.acks);
      sessionId ??= c.acks.find((a) => a.ack === 'session')!.id as string;

      const logger = recordingLogger();
      const rt = await Runtime.open({ dataDir, logger });
      const events = await readAll(rt, sessionId, verifiedSeq);
      const session = await rt.getSession(sessionId);
      // Contiguous seq from 1, every record a valid event.
      events.forEach((e, i) => {
        if (e.seq !== verifiedSeq + i + 1) throw new Error(`run ${run}: seq ${e.seq} where ${verifiedSeq + i + 1} was expected`);
        validateEvent(e);
        if (e.type === 'lease.changed') epochs.add(e.data.epoch);
        if (e.type === 'session.updated') titles.add(e.data.title);
        if (e.type === 'turn.started') started.push(e.data.turnId);
        if (e.type === 'turn.completed') completed.set(e.data.turnId, e.data.status);
        if (e.type === 'message.delta') {
          // Each turn's deltas are a gap-free prefix d0..dk.
          const n = deltas.get(e.data.turnId) ?? 0;
          if (e.data.text !== `d${n}`) throw new Error(`run ${run}: delta ${e.data.text} where d${n} was expected`);
          deltas.set(e.data.turnId, n + 1);
        }
      });
      expect(events.length).toBeGreaterThan(0);
      verifiedSeq += events.length;
      totalEvents = verifiedSeq;
      expect(session.headSeq).toBe(verifiedSeq);
      // Every acknowledged mutation is there.
      for (const a of allAcks) {
        if (a.ack === 'lease') expect(epochs.has(a.epoch as number)).toBe(true);
        if (a.ack === 'title') expect(titles.has(a.title as string)).toBe(true);
        if (a.ack === 'turn') expect(await rt.mutationStatus(sessionId, a.key as string)).toEqual({ state: 'done', result: { turnId: a.turnId } });
      }
      const maxEpoch = Math.max(0, ...allAcks.filter((a) => a.ack === 'lease').map((a) => a.epoch as number));
      expect(session.epoch).toBeGreaterThanOrEqual(maxEpoch);
      // Every turn ended; the killed ones come back 'interrupted'.
      for (const t of started) expect(completed.get(t)).toBe('interrupted');
      expect(session.state).toBe('idle');
      expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
      await rt.close();
    }
    expect(started.length).toBe(20);
    expect(totalEvents).toBeGreaterThan(1000);
  });

  it('a turn running when the daemon is SIGKILLed comes back interrupted and the session accepts a new turn', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const work = path.join(dataDir, 'work');
    fs.mkdirSync(work);
    const c = startChild([path.join(dataDir, 'data'), 'sleep', work]);
    const started = await waitFor('the sleep command to start', () => c.acks.find((a) => a.ack === 'started'), 20_000);
    const sleepPid = started.pid as number;
    groups.push(sleepPid);
    expect(isAlive(sleepPid)).toBe(true);
    c.child.kill('SIGKILL');
    await c.exited;

    const rt = await Runtime.open({ dataDir: path.join(dataDir, 'data'), engines: { shell: createShellEngine() } });
    const id = started.id as string;
    // A session that was running is recovered at open, before anyone asks for it.
    expect(rt.loadedSessionIds()).toContain(id);
    const events = await readAll(rt, id);
    const last = events[events.length - 1] as SessionEvent<'turn.completed'>;
    expect(last.type).toBe('turn.completed');
    expect(last.data).toMatchObject({ turnId: started.turnId, status: 'interrupted' });
    const s = await rt.getSession(id);
    expect(s.state).toBe('idle');
    expect(s.runningTurnId).toBeUndefined();
    expect(await rt.cancelTurn(id)).toEqual({ turnId: started.turnId, status: 'interrupted' });
    // The orphaned command (same pid, same start time) was killed with its group on recovery.
    if (process.platform === 'linux') await waitFor('the orphaned sleep to be killed', () => !isAlive(sleepPid), 5000);

    const ended = new Map<string, string>();
    rt.on('turnEnded', (_s, t, st) => ended.set(t, st));
    const seen: SessionEvent[] = [];
    rt.on('event', (e) => seen.push(e));
    const t = await rt.startTurn(id, { text: 'echo ok' }, 'k2');
    await waitFor('the new turn to end', () => ended.get(t.turnId));
    expect(ended.get(t.turnId)).toBe('completed');
    const out = seen.find((e) => e.type === 'command.output') as SessionEvent<'command.output'>;
    // A pseudo-terminal ends lines with \r\n (pipes, the fallback, with \n).
    expect(Buffer.from(out.data.data).toString()).toMatch(/^ok\r?\n$/);
    await rt.close();
  });

  it.runIf(process.platform === 'linux')('kills an orphaned group only when its pid and start time match the journal', async () => {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    children.push(child);
    const pid = child.pid!;
    const startedAt = Date.now();
    expect(killOrphanGroup(pid, startedAt - 3_600_000)).toBe('not_ours');
    expect(isAlive(pid)).toBe(true);
    expect(killOrphanGroup(pid, startedAt)).toBe('killed');
    await waitFor('sleep to die', () => child.signalCode === 'SIGKILL');
    expect(killOrphanGroup(pid, startedAt)).toBe('gone');
  });
});
