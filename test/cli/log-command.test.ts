// `astra log`: a session's whole history, rendered as attach's replay renders it or as JSON lines,
// read page by page; for observers too (it only reads); a bad id is a clear error.
import { describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { runCli, waitFor } from '../helpers/processes.js';
import { newSession, setup, useCliCleanup } from './cli-helpers.js';

useCliCleanup();

describe('astra log', () => {
  it('prints a long history whole: every turn, its raw output, its end; --json gives one event a line with base64 bytes', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto', '--title', 'long one']);
    // 40 turns, made through the client library (quicker than 40 CLI runs).
    const client = await AstraClient.connect({ clientName: 'maker', env });
    try {
      await client.acquireController(id);
      const ended = new Set<string>();
      await client.subscribe(id, { onEvent: (e) => void (e.type === 'turn.completed' && ended.add(e.data.turnId)) });
      for (let i = 0; i < 40; i++) {
        const { turnId } = await client.turn.start({ sessionId: id, input: { text: `echo turn-${i}` } });
        await waitFor(`turn ${i}`, () => ended.has(turnId));
      }
    } finally {
      await client.close({ releaseLeases: true });
    }
    const r = await runCli(['log', id], env, 60_000);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('session created: "long one"');
    for (let i = 0; i < 40; i++) expect(r.stdout).toMatch(new RegExp(`❯ echo turn-${i}\n(?:.*\n)?turn-${i}\r?\n`));
    expect(r.stdout.match(/✔ turn completed \(exit 0\)/g)).toHaveLength(40);

    const j = await runCli(['log', id, '--json'], env);
    expect(j.code).toBe(0);
    const events = j.stdout.trim().split('\n').map((l) => JSON.parse(l) as { seq: number; type: string; data: { data?: string } });
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    const out = Buffer.concat(events.filter((e) => e.type === 'command.output').map((e) => Buffer.from(e.data.data!, 'base64'))).toString();
    expect(out).toMatch(/^turn-0\r?\n/);
    expect(out).toMatch(/turn-39\r?\n$/);
    // --since: only the events after it.
    const since = await runCli(['log', id, '--json', '--since', String(events.length - 2)], env);
    expect(since.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([events.length - 1, events.length]);
  });

  it('reads a session of more events than one page holds, page by page, every event once', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--engine', 'synthetic', '--approval', 'auto']);
    expect((await runCli(['send', id, 'count=6000 size=12', '--wait'], env, 60_000)).code).toBe(0);
    const r = await runCli(['log', id], env, 60_000);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l === 'x'.repeat(11))).toHaveLength(6000);
    const j = await runCli(['log', id, '--json'], env, 60_000);
    const seqs = j.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq);
    expect(seqs.length).toBeGreaterThan(6000);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  });

  it('works without control while a turn runs (it only reads), and a bad id or --since is a clear error', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    expect((await runCli(['send', id, 'echo hello', '--wait'], env)).code).toBe(0);
    // A turn still running (someone else's): log reads what is there and exits.
    expect((await runCli(['send', id, 'sleep 30'], env)).code).toBe(0);
    const r = await runCli(['log', id], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('❯ sleep 30');
    expect(r.stdout).toMatch(/hello\r?\n/);
    const bad = await runCli(['log', 'ses_nope'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^astra: .*ses_nope/);
    const badSince = await runCli(['log', id, '--since', 'x'], env);
    expect(badSince.code).toBe(1);
    expect(badSince.stderr).toMatch(/^astra: --since takes an event's seq/);
    await runCli(['cancel', id], env);
  });
});
