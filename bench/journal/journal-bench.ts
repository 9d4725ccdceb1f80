// Journal benchmark: the runtime's group-committed event append and its fsynced mutations, each
// beside the bare file-system loop it should be compared with, on the same disk in the same run.
// Not a test: it prints figures and ratios; nothing here asserts a timing.
//
//   node dist/bench/journal/journal-bench.js [events]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Runtime, type Engine } from '../../runtime/index.js';
import { createShellEngine, createSyntheticEngine } from '../../engines/index.js';
import { packEventBody } from '../../ipc/index.js';

const EVENT_BYTES = 200;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'astra-journal-bench-'));
}

/** Bare peer: one fs.appendFileSync per 200-byte record on an open fd, one fsync at the end. */
function bareAppend(n: number): { eventsPerSec: number; mbPerSec: number } {
  const dir = tmp();
  try {
    const fd = fs.openSync(path.join(dir, 'bare'), 'a');
    const rec = Buffer.alloc(EVENT_BYTES, 0x61);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fs.appendFileSync(fd, rec);
    fs.fsyncSync(fd);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    fs.closeSync(fd);
    return { eventsPerSec: n / s, mbPerSec: (n * EVENT_BYTES) / s / 1e6 };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Bare peer: writeSync + fsyncSync of one 200-byte record, per iteration. */
function bareFsync(n: number): number[] {
  const dir = tmp();
  try {
    const fd = fs.openSync(path.join(dir, 'bare'), 'a');
    const rec = Buffer.alloc(EVENT_BYTES, 0x62);
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      fs.writeSync(fd, rec);
      fs.fsyncSync(fd);
      lat.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    fs.closeSync(fd);
    return lat.sort((a, b) => a - b);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function runtimeAppend(n: number): Promise<{ eventsPerSec: number; mbPerSec: number; recordBytes: number; replayMs: number }> {
  const dir = tmp();
  try {
    // Text sized so the journal record (header + msgpack envelope) is ~200 bytes.
    const text = 'x'.repeat(EVENT_BYTES - 80);
    const engine: Engine = {
      async runTurn(ctx) {
        for (let i = 0; i < n; i++) {
          ctx.emit('message.delta', { turnId: ctx.turnId, text });
          // A producer that yields every 1,000 events: each tick's events share one write.
          if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
        }
        return { status: 'completed' };
      },
    };
    const rt = await Runtime.open({ dataDir: dir, engines: { gen: engine }, defaultEngine: 'gen' });
    const s = await rt.createSession({});
    const ended = new Promise<void>((resolve) => rt.on('turnEnded', () => resolve()));
    const t0 = process.hrtime.bigint();
    await rt.startTurn(s.id, { text: 'go' }, 'k');
    await ended; // turn.completed is fsynced, so this includes the final fsync
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    await rt.close();
    const file = path.join(dir, 'sessions', s.id, 'journal.astra');
    const bytes = fs.statSync(file).size;
    const recordBytes = bytes / (n + 5);

    const t1 = process.hrtime.bigint();
    const rt2 = await Runtime.open({ dataDir: dir });
    await rt2.getSession(s.id);
    const replayMs = Number(process.hrtime.bigint() - t1) / 1e6;
    await rt2.close();
    return { eventsPerSec: n / sec, mbPerSec: bytes / sec / 1e6, recordBytes, replayMs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The runtime's side of large output with nobody watching: 200 MiB of 64 KiB command.output events
 * (the synthetic engine, 16 per tick) appended, checksummed and written, with the daemon's encoder.
 * What the daemon can produce before a single byte goes to a socket.
 */
async function runtimeOutput(totalBytes: number): Promise<{ mbPerSec: number; cpuUsPerEvent: number }> {
  const dir = tmp();
  try {
    const rt = await Runtime.open({ dataDir: dir, engines: { synthetic: createSyntheticEngine() }, defaultEngine: 'synthetic', packEventBody });
    const s = await rt.createSession({ approvalPolicy: 'auto' });
    const count = Math.round(totalBytes / 65536);
    const ended = new Promise<void>((resolve) => rt.on('turnEnded', () => resolve()));
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await rt.startTurn(s.id, { text: `count=${count} size=65536 batch=16` }, 'k');
    await ended;
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    await rt.close();
    return { mbPerSec: (count * 65536) / sec / 1e6, cpuUsPerEvent: (cpu.user + cpu.system) / count };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function runtimeMutation(n: number): Promise<number[]> {
  const dir = tmp();
  try {
    const rt = await Runtime.open({ dataDir: dir, engines: { shell: createShellEngine() } });
    const s = await rt.createSession({});
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await rt.appendLeaseChange(s.id, { epoch: i + 1, holder: { connectionId: 'c', clientName: 'bench' }, reason: 'acquired' });
      lat.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    await rt.close();
    return lat.sort((a, b) => a - b);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function runJournalBench(opts: { events?: number; mutations?: number; print?: boolean } = {}): Promise<Record<string, number>> {
  const n = opts.events ?? 200_000;
  const m = opts.mutations ?? 500;
  const bare = bareAppend(n);
  const rtAppend = await runtimeAppend(n);
  const bareLat = bareFsync(m);
  const rtLat = await runtimeMutation(m);
  const output = await runtimeOutput(200 * 1024 * 1024);
  const r: Record<string, number> = {
    events: n,
    recordBytes: Math.round(rtAppend.recordBytes),
    appendEventsPerSec: Math.round(rtAppend.eventsPerSec),
    appendMBPerSec: +rtAppend.mbPerSec.toFixed(1),
    bareAppendFileEventsPerSec: Math.round(bare.eventsPerSec),
    bareAppendFileMBPerSec: +bare.mbPerSec.toFixed(1),
    appendRatio: +(rtAppend.eventsPerSec / bare.eventsPerSec).toFixed(2),
    mutationP50us: Math.round(percentile(rtLat, 0.5)),
    mutationP99us: Math.round(percentile(rtLat, 0.99)),
    bareFsyncP50us: Math.round(percentile(bareLat, 0.5)),
    bareFsyncP99us: Math.round(percentile(bareLat, 0.99)),
    mutationP50Ratio: +(percentile(rtLat, 0.5) / percentile(bareLat, 0.5)).toFixed(2),
    replayMs: Math.round(rtAppend.replayMs),
    outputMBPerSec: Math.round(output.mbPerSec),
    outputCpuUsPerEvent: +output.cpuUsPerEvent.toFixed(1),
  };
  if (opts.print ?? false) {
    const line = (label: string, ours: string, peer: string, ratio: string) => console.log(`${label.padEnd(34)} ${ours.padStart(16)} ${peer.padStart(16)} ${ratio.padStart(8)}`);
    console.log(`journal bench: ${n} events of ~${r.recordBytes} B, ${m} mutations, dir ${os.tmpdir()}`);
    line('', 'runtime', 'bare', 'ratio');
    line('append (group commit), events/s', String(r.appendEventsPerSec), String(r.bareAppendFileEventsPerSec), `${r.appendRatio}x`);
    line('append, MB/s', String(r.appendMBPerSec), String(r.bareAppendFileMBPerSec), `${(r.appendMBPerSec! / r.bareAppendFileMBPerSec!).toFixed(2)}x`);
    line('fsynced mutation p50, µs', String(r.mutationP50us), String(r.bareFsyncP50us), `${r.mutationP50Ratio}x`);
    line('fsynced mutation p99, µs', String(r.mutationP99us), String(r.bareFsyncP99us), `${(r.mutationP99us! / r.bareFsyncP99us!).toFixed(2)}x`);
    console.log(`replay (open + load) of ${n} events: ${r.replayMs} ms`);
    console.log(`200 MiB of 64 KiB output events, no subscriber: ${r.outputMBPerSec} MB/s, ${r.outputCpuUsPerEvent} µs CPU per event`);
    console.log('targets: append >= 0.5x bare appendFile; mutation p50 <= 2x bare fsync');
  }
  return r;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const events = process.argv[2] ? Number(process.argv[2]) : undefined;
  runJournalBench({ events, print: true }).catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
