import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../protocol/index.js';
import { LIMITS, validateEvent } from '../../protocol/index.js';
import { Runtime, type ApprovalRequest, type EngineContext } from '../../runtime/index.js';
import { createShellEngine } from '../../engines/index.js';
import { isAlive, tempDir, waitFor } from '../runtime/helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * `terminal: 'pipes'` for the tests of the pipe contract (stdout and stderr apart, `\n`, a socket
 * pair's backpressure); the rest run on the default, a pseudo-terminal (command-terminal.test.ts has
 * the terminal's own contract).
 */
async function setup(opts: { killGraceMs?: number; terminal?: 'auto' | 'pipes' } = {}) {
  const dir = tempDir();
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  const rt = await Runtime.open({ dataDir: path.join(dir, 'data'), engines: { shell: createShellEngine({ killGraceMs: opts.killGraceMs ?? 2000, terminal: opts.terminal ?? 'auto' }) } });
  const events: SessionEvent[] = [];
  const ended = new Map<string, string>();
  rt.on('event', (e) => events.push(e));
  rt.on('turnEnded', (_s, turnId, status) => ended.set(turnId, status));
  const pids: number[] = [];
  cleanups.push(async () => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await rt.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { rt, dir, work, events, ended, pids };
}

function turnEvents(events: SessionEvent[], turnId: string): SessionEvent[] {
  return events.filter((e) => (e.data as { turnId?: string }).turnId === turnId);
}

describe('shell engine', () => {
  it('stops reading a command while emit() says the journal is behind, and reads on once drained() resolves', async () => {
    const dir = tempDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const total = 20_000_000;
    let pid: number | undefined;
    let held = true;
    let emitted = 0;
    let release!: () => void;
    const drained = new Promise<void>((r) => (release = r));
    const ctx: EngineContext = {
      sessionId: 's',
      turnId: 't',
      cwd: dir,
      input: { text: `exec head -c ${total} /dev/zero` },
      approvalPolicy: 'auto',
      signal: new AbortController().signal,
      emit: (type, data) => {
        if (type === 'command.started') pid = (data as { pid: number }).pid;
        if (type === 'command.output') emitted += (data as { data: Uint8Array }).data.length;
        return !held;
      },
      drained: () => drained,
      requestApproval: async () => 'approve',
    };
    const result = createShellEngine({ terminal: 'pipes' }).runTurn(ctx);
    cleanups.push(() => {
      if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    });
    // Once the engine has emitted (and been told the journal is behind), the command fills its
    // stdout (a socket pair, as Node makes them) and blocks in the kernel writing to it: the engine
    // has stopped reading.
    const blocked = () => /sock_alloc_send|pipe_write/.test(fs.readFileSync(`/proc/${pid}/wchan`, 'utf8'));
    await waitFor('the command to block on its full stdout', () => emitted > 0 && pid !== undefined && blocked());
    expect(emitted).toBeLessThanOrEqual(LIMITS.maxOutputChunkBytes + 64 * 1024);
    held = false;
    release();
    expect(await result).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(emitted).toBe(total);
  });

  it('delivers 5 MiB of output complete and in order in chunks of at most LIMITS.maxOutputChunkBytes, coalescing what one loop turn read', async () => {
    const { rt, work, events, ended } = await setup({ terminal: 'pipes' });
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'auto' });
    // 5 MiB of a counting pattern so order mistakes show up as content mismatches.
    const script = `node -e "const b=Buffer.alloc(5*1024*1024);for(let i=0;i<b.length;i++)b[i]=(i*7+(i>>10))&255;process.stdout.write(b)"`;
    const { turnId } = await rt.startTurn(s.id, { text: script }, 'k1');
    await waitFor('turn end', () => ended.get(turnId), 30_000);
    const outs = turnEvents(events, turnId).filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output');
    for (const o of outs) expect(o.data.data.length).toBeLessThanOrEqual(LIMITS.maxOutputChunkBytes);
    // Node reads a pipe 64 KiB at a time; what arrived in one turn of the event loop is one event.
    // How many reads a turn got depends on how this machine ran the writer: output-coalescer.test.ts
    // checks that reads of one turn make one chunk.
    const all = Buffer.concat(outs.filter((o) => o.data.stream === 'stdout').map((o) => o.data.data));
    expect(all.length).toBe(5 * 1024 * 1024);
    const expected = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < expected.length; i++) expected[i] = (i * 7 + (i >> 10)) & 255;
    expect(all.equals(expected)).toBe(true);
    expect(ended.get(turnId)).toBe('completed');
    // Every event validates against the protocol and seq is contiguous.
    events.forEach((e, i) => {
      expect(e.seq).toBe(i + 1);
      validateEvent(e);
    });
    // The journal holds the same bytes as were published.
    const read: SessionEvent[] = [];
    let since = 0;
    for (;;) {
      const r = await rt.readSession(s.id, { sinceSeq: since, maxBytes: 1024 * 1024 });
      read.push(...r.events);
      if (r.nextSeq === undefined) break;
      since = r.nextSeq;
    }
    const fromJournal = Buffer.concat(read.filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output').map((e) => e.data.data));
    expect(fromJournal.equals(expected)).toBe(true);
  });

  it('sends a lone line at once, without waiting for more output, and keeps stdout and stderr apart', async () => {
    const { rt, work, events, ended } = await setup({ terminal: 'pipes' });
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'auto' });
    const fifo = path.join(work, 'go');
    execFileSync('mkfifo', [fifo]);
    // The command prints one line, then blocks until the test has seen that line as an event.
    const { turnId } = await rt.startTurn(s.id, { text: `printf 'first\\n'; printf 'err\\n' >&2; read x < ${fifo}; printf 'second\\n'` }, 'k1');
    const outputs = () => turnEvents(events, turnId).filter((e): e is SessionEvent<'command.output'> => e.type === 'command.output');
    await waitFor('the first lines while the command still runs', () => outputs().length >= 2 || undefined);
    expect(ended.get(turnId)).toBeUndefined();
    fs.writeFileSync(fifo, 'go\n');
    await waitFor('turn end', () => ended.get(turnId));
    const got = outputs().map((o) => `${o.data.stream}:${Buffer.from(o.data.data).toString()}`);
    expect(got.sort()).toEqual(['stderr:err\n', 'stdout:first\n', 'stdout:second\n']);
  });

  it('reports exit codes, stderr and a non-zero exit as a completed turn', async () => {
    const { rt, work, events, ended } = await setup({ terminal: 'pipes' });
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'auto' });
    const { turnId } = await rt.startTurn(s.id, { text: 'echo oops >&2; exit 3' }, 'k1');
    await waitFor('turn end', () => ended.get(turnId));
    const te = turnEvents(events, turnId);
    const done = te.find((e) => e.type === 'command.completed') as SessionEvent<'command.completed'>;
    expect(done.data.exitCode).toBe(3);
    expect(done.data.signal).toBeNull();
    const err = te.find((e) => e.type === 'command.output') as SessionEvent<'command.output'>;
    expect(err.data.stream).toBe('stderr');
    expect(Buffer.from(err.data.data).toString()).toBe('oops\n');
    const tc = te.find((e) => e.type === 'turn.completed') as SessionEvent<'turn.completed'>;
    expect(tc.data).toMatchObject({ status: 'completed', exitCode: 3 });

    const t2 = await rt.startTurn(s.id, { text: 'true' }, 'k2');
    await waitFor('second turn end', () => ended.get(t2.turnId));
    expect((turnEvents(events, t2.turnId).find((e) => e.type === 'turn.completed') as SessionEvent<'turn.completed'>).data.exitCode).toBe(0);
  });

  it('cancelling a command kills its whole process group, grandchildren included', async () => {
    const { rt, work, events, ended, pids } = await setup({ killGraceMs: 500 });
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'auto' });
    const { turnId } = await rt.startTurn(s.id, { text: 'sleep 300 & echo $!; wait' }, 'k1');
    const grandchild = await waitFor('grandchild pid', () => {
      const o = turnEvents(events, turnId).find((e) => e.type === 'command.output') as SessionEvent<'command.output'> | undefined;
      return o ? Number(Buffer.from(o.data.data).toString().trim()) : undefined;
    });
    const started = turnEvents(events, turnId).find((e) => e.type === 'command.started') as SessionEvent<'command.started'>;
    const shellPid = started.data.pid!;
    pids.push(grandchild, shellPid);
    expect(isAlive(grandchild)).toBe(true);
    expect(isAlive(shellPid)).toBe(true);

    const c = await rt.cancelTurn(s.id);
    expect(c).toEqual({ turnId, status: 'cancelling' });
    expect(await rt.cancelTurn(s.id, turnId)).toEqual({ turnId, status: 'cancelling' });
    await waitFor('turn end', () => ended.get(turnId));
    expect(ended.get(turnId)).toBe('cancelled');
    await waitFor('both processes to be gone', () => !isAlive(grandchild) && !isAlive(shellPid), 5000);
    expect(await rt.cancelTurn(s.id, turnId)).toEqual({ turnId, status: 'cancelled' });
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const { rt, work, events, ended, pids } = await setup({ killGraceMs: 300 });
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'auto' });
    const { turnId } = await rt.startTurn(s.id, { text: "trap '' TERM; echo ready; while :; do sleep 0.05; done" }, 'k1');
    await waitFor('ready', () => turnEvents(events, turnId).some((e) => e.type === 'command.output'));
    const shellPid = (turnEvents(events, turnId).find((e) => e.type === 'command.started') as SessionEvent<'command.started'>).data.pid!;
    pids.push(shellPid);
    await rt.cancelTurn(s.id, turnId);
    await waitFor('turn end', () => ended.get(turnId), 10_000);
    const done = turnEvents(events, turnId).find((e) => e.type === 'command.completed') as SessionEvent<'command.completed'>;
    expect(done.data.signal).toBe('SIGKILL');
    expect(isAlive(shellPid)).toBe(false);
  });

  it('runs nothing when the approval is denied and ends the turn cancelled', async () => {
    const { rt, work, events, ended } = await setup();
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'ask' });
    const asked: ApprovalRequest[] = [];
    rt.on('approvalRequested', (a) => asked.push(a));
    const { turnId } = await rt.startTurn(s.id, { text: 'touch made-it' }, 'k1');
    const req = await waitFor('approval request', () => asked[0]);
    expect(req).toMatchObject({ sessionId: s.id, turnId, command: 'touch made-it', cwd: work });
    expect(rt.pendingApprovals(s.id)).toEqual([req]);
    await rt.resolveApproval(s.id, req.approvalId, 'deny', { clientName: 'test' });
    await waitFor('turn end', () => ended.get(turnId));
    expect(ended.get(turnId)).toBe('cancelled');
    expect(fs.existsSync(path.join(work, 'made-it'))).toBe(false);
    expect(turnEvents(events, turnId).map((e) => e.type)).toEqual(['turn.started', 'message.user', 'approval.requested', 'approval.resolved', 'turn.completed']);
    // The end says why: a denial, not someone's cancel.
    expect(turnEvents(events, turnId).at(-1)!.data).toEqual({ turnId, status: 'cancelled', reason: 'denied: the command was not run' });
    expect(rt.pendingApprovals(s.id)).toEqual([]);
    await expect(rt.resolveApproval(s.id, req.approvalId, 'approve')).rejects.toMatchObject({ reason: 'not_found' });

    // Approved: it runs.
    const t2 = await rt.startTurn(s.id, { text: 'touch made-it' }, 'k2');
    const req2 = await waitFor('second approval', () => asked[1]);
    await rt.resolveApproval(s.id, req2.approvalId, 'approve');
    await waitFor('turn end', () => ended.get(t2.turnId));
    expect(fs.existsSync(path.join(work, 'made-it'))).toBe(true);
  });

  it('cancelling while an approval is pending withdraws it and runs nothing', async () => {
    const { rt, work, events, ended } = await setup();
    const s = await rt.createSession({ cwd: work, approvalPolicy: 'ask' });
    const { turnId } = await rt.startTurn(s.id, { text: 'touch made-it' }, 'k1');
    await waitFor('approval pending', () => rt.pendingApprovals(s.id).length === 1);
    await rt.cancelTurn(s.id, turnId);
    await waitFor('turn end', () => ended.get(turnId));
    expect(ended.get(turnId)).toBe('cancelled');
    // A cancel is not a denial: no reason.
    expect(turnEvents(events, turnId).at(-1)!.data).toEqual({ turnId, status: 'cancelled' });
    expect(rt.pendingApprovals(s.id)).toEqual([]);
    const resolved = turnEvents(events, turnId).find((e) => e.type === 'approval.resolved') as SessionEvent<'approval.resolved'>;
    expect(resolved.data.decision).toBe('deny');
    expect(fs.existsSync(path.join(work, 'made-it'))).toBe(false);
  });

  it('fails the turn with a clear error when the cwd no longer exists', async () => {
    const { rt, work, events, ended } = await setup();
    const gone = path.join(work, 'missing');
    fs.mkdirSync(gone);
    const s = await rt.createSession({ cwd: gone, approvalPolicy: 'auto' });
    fs.rmdirSync(gone);
    const { turnId } = await rt.startTurn(s.id, { text: 'echo hi' }, 'k1');
    await waitFor('turn end', () => ended.get(turnId));
    expect(ended.get(turnId)).toBe('failed');
    const tc = turnEvents(events, turnId).find((e) => e.type === 'turn.completed') as SessionEvent<'turn.completed'>;
    expect(tc.data.error).toMatch(/missing/);
    expect(turnEvents(events, turnId).some((e) => e.type === 'command.started')).toBe(false);
  });
});
