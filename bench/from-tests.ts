// What the tests used to assert about time, rates and memory, measured here instead (issue 26: a
// test asserts what must be true on any machine; how fast or how much is a row of this table).
//   flood       a screen subscriber during `seq 1 300000`: the share of the output it got as output
//               (the rest stood for by frames of the screen), the frames it got, and the flood's rate
//               (frames begin past 2.5 MB/s: on a loaded machine the flood may be all output)
//   pty         the same flood read from a pseudo-terminal: the share of its bytes in chunks larger
//               than one terminal read (4 KiB), i.e. gathered by the output coalescer
//   fuzz        fuzzed frames answered per second by a real daemon (bench/fuzz-frames.ts)
//   refused     the daemon's arrayBuffers after GC, added by 300 connections refused as overloaded
//               while it holds 256 (each once kept a full write batch)
// The daemon's RSS during a flood with a stopped observer is the memory section's (bench/run.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DAEMON_NODE_FLAGS } from '../client/index.js';
import { readRecord, resolvePaths } from '../discovery/index.js';
import type { SessionEvent } from '../protocol/index.js';
import { Runtime } from '../runtime/index.js';
import { createShellEngine } from '../engines/index.js';
import { startPtyCommand } from '../pty/pty-command.js';
import { RawPeer, fuzzDaemon } from './fuzz-frames.js';
import { DaemonProc } from './daemon-proc.js';
import { HERE, tempDir, waitFor, wallMs } from './lib.js';

const FLOOD = 'seq 1 300000';
const FUZZ_FRAMES = 4_000;
const HELD = 256;
const REFUSED = 300;

/** One run of each measure: its figures by id. */
export async function runFromTests(log: (line: string) => void): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  Object.assign(out, await screenFlood());
  out['pty.largeChunkShare'] = await ptyChunks();
  out['fuzz.framesPerSec'] = await fuzzRate();
  out['mem.refusedConnectionsArrayBuffersMB'] = await refusedMemory();
  log(
    `  flood at ${out['flood.outputMBPerSec']!.toFixed(1)} MB/s to a screen subscriber: ${(out['flood.screenOutputShare']! * 100).toFixed(1)} % of the output as output, ${out['flood.screenFrames']} frames; ` +
      `pty: ${(out['pty.largeChunkShare']! * 100).toFixed(0)} % of the bytes in chunks over 4 KiB; fuzz ${out['fuzz.framesPerSec']!.toFixed(0)} frames/s; ` +
      `${REFUSED} refused connections +${out['mem.refusedConnectionsArrayBuffersMB']!.toFixed(1)} MB arrayBuffers`,
  );
  return out;
}

async function screenFlood(): Promise<Record<string, number>> {
  const dir = tempDir('astra-bench-flood-');
  const rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine({ terminal: 'auto' }) } });
  try {
    const s = await rt.createSession({ cwd: dir, approvalPolicy: 'auto' });
    let got = 0;
    let frames = 0;
    let replayed = false;
    let ended = false;
    const sub = await rt.subscribe(
      s.id,
      0,
      {
        onEvent: (e: SessionEvent) => {
          if (e.type === 'command.output') got += (e as SessionEvent<'command.output'>).data.data.length;
          if (e.type === 'turn.completed') ended = true;
        },
        onScreen: () => void frames++,
        onReplayed: () => void (replayed = true),
      },
      { screen: true },
    );
    await waitFor('the backlog', 15_000, () => replayed || undefined);
    let total = 0;
    rt.on('event', (e) => {
      if (e.type === 'command.output') total += (e as SessionEvent<'command.output'>).data.data.length;
    });
    const t0 = wallMs();
    await rt.startTurn(s.id, { text: FLOOD }, 'flood');
    await waitFor('the flood to end', 120_000, () => ended || undefined);
    const ms = wallMs() - t0;
    sub.unsubscribe();
    // Frames start past 128 KiB within 50 ms (2.5 MB/s): a slower flood (a loaded machine) is all output.
    return { 'flood.screenOutputShare': got / total, 'flood.screenFrames': frames, 'flood.outputMBPerSec': total / 1e6 / (ms / 1000) };
  } finally {
    await rt.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function ptyChunks(): Promise<number> {
  const sizes: number[] = [];
  const cmd = startPtyCommand({
    command: FLOOD,
    cwd: os.tmpdir(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    cols: 80,
    rows: 24,
    onOutput: (data) => (sizes.push(data.length), true),
    drained: () => Promise.resolve(),
  });
  await cmd.done;
  const total = sizes.reduce((a, b) => a + b, 0);
  return sizes.filter((n) => n > 4096).reduce((a, b) => a + b, 0) / total;
}

async function fuzzRate(): Promise<number> {
  const daemon = new DaemonProc();
  await daemon.start();
  try {
    const rec = readRecord(resolvePaths(daemon.env).recordPath)!;
    const p = await RawPeer.open(rec.endpoint, rec.token);
    const created = await p.call('create', 'session/create', { approvalPolicy: 'ask' });
    await p.destroy();
    const sessionId = (created.result as { session: { id: string } }).session.id;
    const t0 = wallMs();
    const report = await fuzzDaemon({ endpoint: rec.endpoint, token: rec.token, sessionId, seed: 20_201, maxFrames: FUZZ_FRAMES, maxMs: 600_000 });
    return report.frames / ((wallMs() - t0) / 1000);
  } finally {
    await daemon.stop();
  }
}

async function refusedMemory(): Promise<number> {
  const home = tempDir('astra-bench-refused-');
  const env = { ...process.env, ASTRA_HOME: home, ASTRA_IDLE_TIMEOUT_MS: '0' };
  // The daemon with a GC hook (bench/gc-daemon.ts): SIGUSR2 collects and prints memoryUsage.
  const proc = spawn(process.execPath, ['--expose-gc', ...DAEMON_NODE_FLAGS, path.join(HERE, 'gc-daemon.js')], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  let lines = '';
  proc.stdout!.on('data', (d: Buffer) => (lines += d.toString()));
  const arrayBuffers = async (): Promise<number> => {
    const before = lines.split('\n').length;
    proc.kill('SIGUSR2');
    await waitFor('the daemon reporting its memory', 10_000, () => (lines.split('\n').length > before ? true : undefined));
    const all = lines.trim().split('\n');
    return (JSON.parse(all[all.length - 1]!) as { arrayBuffers: number }).arrayBuffers;
  };
  try {
    const rec = await waitFor('the daemon record', 15_000, () => readRecord(resolvePaths(env).recordPath));
    await waitFor('the daemon answering', 15_000, async () => RawPeer.open(rec.endpoint, rec.token).then(async (p) => (await p.destroy(), true), () => undefined));
    const start = await arrayBuffers();
    const held = await Promise.all(Array.from({ length: HELD }, () => RawPeer.open(rec.endpoint, rec.token, 30_000)));
    const refused = await Promise.all(Array.from({ length: REFUSED }, () => RawPeer.open(rec.endpoint, rec.token, 30_000)));
    await Promise.all([...held, ...refused].map((p) => p.destroy()));
    await waitFor('the refused connections to close', 10_000, () => (refused.every((p) => p.closed) ? true : undefined));
    return ((await arrayBuffers()) - start) / 1e6;
  } finally {
    proc.kill('SIGKILL');
    fs.rmSync(home, { recursive: true, force: true });
  }
}
