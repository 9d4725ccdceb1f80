// Hostile input against a real daemon (issue 20): thousands of seeded frames with valid framing and
// bad payloads. Every answer is a typed error that names what was wrong, never internal_error, and
// the daemon keeps serving. The frames come from bench/fuzz-frames.ts (FUZZ_SEED reproduces a run).
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { RawPeer, fuzzDaemon } from '../../bench/fuzz-frames.js';
import { ROOT, envFor, isAlive, readRecordFile, runCli, useTempHomes, waitFor } from '../helpers/processes.js';

const home = useTempHomes('fz');
const SEED = Number(process.env.FUZZ_SEED ?? 20_201);

async function startDaemon(h: string) {
  const r = await runCli(['daemon', 'start'], envFor(h));
  expect(r.code, r.stderr).toBe(0);
  return readRecordFile(h)!;
}

async function newSession(endpoint: string, token: string): Promise<string> {
  const p = await RawPeer.open(endpoint, token);
  const created = await p.call('create', 'session/create', { approvalPolicy: 'ask' });
  await p.destroy();
  return (created.result as { session: { id: string } }).session.id;
}

describe('hostile input', () => {
  it(`answers thousands of fuzzed frames (seed ${SEED}) with typed errors naming the problem, never internal_error, and keeps answering ping`, async () => {
    const h = home();
    const rec = await startDaemon(h);
    const sessionId = await newSession(rec.endpoint, rec.token);
    const report = await fuzzDaemon({ endpoint: rec.endpoint, token: rec.token, sessionId, seed: SEED, maxFrames: 12_000, maxMs: 8_000 });
    const summary = JSON.stringify({ frames: report.frames, byKind: report.byKind, reasons: report.reasons, internalErrors: report.internalErrors });
    expect(report.frames, summary).toBeGreaterThanOrEqual(1_000);
    expect(report.internalErrors, summary).toEqual([]);
    expect(report.reasons.internal_error, summary).toBeUndefined();
    // Every kind of bad frame was sent and answered with the errors the protocol names.
    for (const kind of ['garbage', 'mutated', 'truncated', 'deep', 'params', 'types', 'keys', 'ext']) expect(report.byKind[kind], kind).toBeGreaterThan(0);
    for (const reason of ['parse_error', 'invalid_request', 'invalid_params']) expect(report.reasons[reason], reason).toBeGreaterThan(0);
    // What a peer is told names the protocol's rules, not the decoder's options or a JS exception.
    const leaks = report.messages.filter((m) => /mapsAsObjects|record|TypeError|Cannot read|undefined \(reading/.test(m));
    expect(leaks).toEqual([]);
    expect(isAlive(rec.pid)).toBe(true);
    const after = await RawPeer.open(rec.endpoint, rec.token);
    const pong = await after.call('ping', 'ping', {});
    await after.destroy();
    expect(pong.reason).toBeUndefined();
    expect(pong.result).toMatchObject({ now: expect.any(Number) });
  });

  it('gives back the memory of refused connections at once: 300 attempts over the limit leave no write buffers behind after GC', async () => {
    const h = home();
    const env = envFor(h, { ASTRA_IDLE_TIMEOUT_MS: '0' });
    // The daemon with a GC hook (bench/gc-daemon.ts): SIGUSR2 collects and prints memoryUsage.
    const child = spawn(process.execPath, ['--expose-gc', path.join(ROOT, 'dist', 'bench', 'gc-daemon.js')], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const rec = await waitFor('the daemon record', () => readRecordFile(h), 15_000);
      await waitFor('the daemon answering', () => RawPeer.open(rec.endpoint, rec.token).then(async (p) => (await p.destroy(), p.handshake?.reason === undefined), () => false), 15_000);
      const memory = async (): Promise<{ arrayBuffers: number; heapUsed: number }> => {
        const before = out.split('\n').length;
        child.kill('SIGUSR2');
        await waitFor('the memory report', () => out.split('\n').length > before, 10_000);
        const lines = out.trim().split('\n');
        return JSON.parse(lines[lines.length - 1]!);
      };
      const start = await memory();
      // Hold the 256 connections the daemon serves, then 300 more that it refuses as overloaded.
      const held = await Promise.all(Array.from({ length: 256 }, () => RawPeer.open(rec.endpoint, rec.token, 30_000)));
      const refused = await Promise.all(Array.from({ length: 300 }, () => RawPeer.open(rec.endpoint, rec.token, 30_000)));
      expect(held.filter((p) => p.handshake?.reason === undefined)).toHaveLength(256);
      expect(refused.every((p) => p.handshake?.reason === 'overloaded')).toBe(true);
      await Promise.all([...held, ...refused].map((p) => p.destroy()));
      await waitFor('the refused connections to close', () => refused.every((p) => p.closed), 10_000);
      const end = await memory();
      // 300 × 64 KiB = 19 MB when every refused connection kept a full write batch; a generous bound.
      expect((end.arrayBuffers - start.arrayBuffers) / 1024 / 1024).toBeLessThan(8);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
