// A second language speaks Astra: the Python client runs a whole approved turn against a real
// daemon, and Python's msgpack reads every wire test vector exactly as its JSON meaning says.
import { describe, it, expect, afterEach } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as protocol from '../../protocol/index.js';
import * as ipc from '../../ipc/index.js';
import { ROOT, cleanupHome, envFor, isAlive, makeHome, readRecordFile, runCli, runCommand } from '../helpers/processes.js';
import { PYTHON_MSGPACK, pythonWithMsgpack, skipWithout } from '../helpers/system-tools.js';
import { fromMeaning, maxFrameMessage, renderVector, type WireVector } from '../../scripts/vectors-lib.mjs';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.mjs';

const CLIENT = path.join(ROOT, 'clients', 'python', 'astra_client.py');
const CHECK_VECTORS = path.join(ROOT, 'clients', 'python', 'check_vectors.py');

const skipPython = skipWithout(PYTHON_MSGPACK);

function requirePython(): string {
  const python = pythonWithMsgpack();
  if (!python)
    expect.fail('no python3 with the msgpack module was found (tried /usr/bin/python3, python3); install it with `apt-get install python3-msgpack`');
  return python;
}

const run = runCommand;

interface WireEvent {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
  data: Record<string, unknown>;
}

let home: string | undefined;
let modelServer: ModelServer | undefined;
const pids: number[] = [];

afterEach(async () => {
  await modelServer?.close();
  modelServer = undefined;
  if (home) {
    const record = readRecordFile(home);
    if (record && isAlive(record.pid)) pids.push(record.pid);
    await cleanupHome(home, pids.splice(0));
    home = undefined;
  }
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

describe.skipIf(skipPython)('the Python client', () => {
  it('runs an approved turn against a real daemon and sees its events in seq order', async () => {
    const python = requirePython();
    home = makeHome('apy');
    const env = envFor(home);
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, `astra daemon start failed: ${started.stderr}`).toBe(0);
    const record = readRecordFile(home);
    expect(record, 'the daemon wrote no discovery record').toBeDefined();
    pids.push(record!.pid);

    const out = await run(python, [CLIENT, '--json', '--timeout', '30'], { ...env, PYTHONDONTWRITEBYTECODE: '1' }, 45_000, pids);
    expect(out.code, `the Python client failed:\n${out.stderr}\n${out.stdout}`).toBe(0);
    const lines = out.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

    const connected = lines.find((l) => 'connected' in l)?.connected as { instanceId: string; protocolVersion: number } | undefined;
    expect(connected?.instanceId).toBe(record!.instanceId);
    expect(connected?.protocolVersion).toBe(protocol.PROTOCOL_VERSION);
    const approvals = lines.filter((l) => 'approval' in l).map((l) => l.approval as { command: string; decision: string });
    expect(approvals).toEqual([expect.objectContaining({ command: 'echo hello from python', decision: 'approve' })]);

    const events = lines.filter((l) => 'event' in l).map((l) => l.event as WireEvent);
    // The client prints bytes as {"$bin": base64}, the vectors' notation; back to bytes to validate.
    for (const e of events) protocol.validateEvent(fromMeaning(e));
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const e of events) expect(Number.isSafeInteger(e.ts) && e.ts > 1_000_000_000_000, `ts ${e.ts} is integer ms`).toBe(true);

    const indexOf = (pred: (e: WireEvent) => boolean, what: string): number => {
      const i = events.findIndex(pred);
      expect(i, `no ${what} event among ${events.map((e) => e.type).join(', ')}`).toBeGreaterThanOrEqual(0);
      return i;
    };
    const output = (e: WireEvent): string =>
      e.type === 'command.output' ? Buffer.from((e.data.data as { $bin: string }).$bin, 'base64').toString('utf8') : '';
    const order = [
      indexOf((e) => e.type === 'turn.started', 'turn.started'),
      indexOf((e) => e.type === 'approval.requested', 'approval.requested'),
      indexOf((e) => e.type === 'approval.resolved' && e.data.decision === 'approve', 'approval.resolved (approve)'),
      indexOf((e) => output(e).includes('hello from python'), 'command.output with "hello from python"'),
      indexOf((e) => e.type === 'turn.completed' && e.data.status === 'completed', 'turn.completed (completed)'),
    ];
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(events.at(-1)!.type).toBe('turn.completed');
  });

  it('prints a chat turn\'s tool call, tool result, usage and finish reasons as readable lines', async () => {
    const python = requirePython();
    modelServer = await startModelServer({ script: ['tool-call', 'final-answer'] });
    home = makeHome('apy');
    const env = envFor(home);
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, `astra daemon start failed: ${started.stderr}`).toBe(0);
    pids.push(readRecordFile(home)!.pid);

    const args = [CLIENT, '--engine', 'chat', '--model', 'fake-model', '--base-url', modelServer.baseUrl, '--command', 'what is here?', '--timeout', '30', '--trace-frames'];
    const out = await run(python, args, { ...env, PYTHONDONTWRITEBYTECODE: '1' }, 45_000, pids);
    expect(out.code, `the Python client failed:\n${out.stderr}\n${out.stdout}`).toBe(0);
    const lines = out.stdout.trim().split('\n');
    const line = (pattern: RegExp): number => {
      const i = lines.findIndex((l) => pattern.test(l));
      expect(i, `no line matching ${pattern} in:\n${out.stdout}`).toBeGreaterThanOrEqual(0);
      return i;
    };
    const order = [
      line(/^approval asked for 'ls -1'/),
      line(/^#\d+ message\.completed \(tool_calls\) $/),
      line(/^#\d+ usage prompt 120 tokens, completion 18 tokens$/),
      line(/^#\d+ tool\.call call_abc123 shell \{"command": "ls -1", "cwd": "\."\}$/),
      line(/^#\d+ tool\.result call_abc123 succeeded exit 0 .*package\.json/),
      line(/^#\d+ message\.completed \(stop\) The directory has two files\.$/),
      line(/^#\d+ turn\.completed .*"status": "completed"/),
    ];
    expect(order.slice(2)).toEqual([...order.slice(2)].sort((a, b) => a - b));
    // It subscribed with textFromDeltas: the streamed answer's completed came without its text on
    // the wire (the frame trace on stderr), and the line above shows the text rebuilt from the deltas.
    expect(out.stderr).toMatch(/"textFromDeltas": true/);
    expect(out.stderr).toMatch(/"type": "message\.completed"[^\n]*"text": ""[^\n]*"textFromDeltas": true|"textFromDeltas": true[^\n]*"type": "message\.completed"/);
  });

  it('subscribes with screen: true from a raw msgpack client: session/screen (bytes) before session/replayed, none of the output it stands for', async () => {
    const python = requirePython();
    home = makeHome('apy');
    const env = envFor(home);
    const started = await runCli(['daemon', 'start'], env);
    expect(started.code, `astra daemon start failed: ${started.stderr}`).toBe(0);
    pids.push(readRecordFile(home)!.pid);
    const script = path.join(ROOT, 'test', 'contract', 'fixtures', 'screen_subscribe.py');
    const out = await run(python, [script, path.dirname(CLIENT)], { ...env, PYTHONDONTWRITEBYTECODE: '1' }, 45_000, pids);
    expect(out.code, `the Python script failed:\n${out.stderr}\n${out.stdout}`).toBe(0);
    const r = JSON.parse(out.stdout.trim()) as { turnId: string; got: { seq?: number; type?: string; screen?: boolean; atSeq?: number; cols?: number; rows?: number; turnId?: string; dataIsBytes?: boolean; text?: string; replayed?: number }[] };
    const screens = r.got.filter((g) => g.screen);
    expect(screens).toHaveLength(1);
    expect(screens[0]).toMatchObject({ turnId: r.turnId, cols: 80, rows: 24, dataIsBytes: true, alternate: false });
    expect(screens[0]!.text).toContain('counter 200');
    expect(r.got.filter((g) => g.type === 'command.output')).toEqual([]);
    expect(r.got.at(-1)!.replayed).toEqual(expect.any(Number));
    expect(r.got.findIndex((g) => g.screen)).toBe(r.got.length - 2);
  });

  it('says how to start a daemon when none is running, and exits 3', async () => {
    const python = requirePython();
    home = makeHome('apy');
    const out = await run(python, [CLIENT], { ...envFor(home), PYTHONDONTWRITEBYTECODE: '1' }, 20_000, pids);
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(/astra daemon start/);
  });
});

describe.skipIf(skipPython)('the wire test vectors read from Python', () => {
  it('decode with Python msgpack to exactly their JSON meaning and re-encode to the same bytes', async () => {
    const python = requirePython();
    const out = await run(python, [CHECK_VECTORS], { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, 30_000, pids);
    expect(out.code, `check_vectors.py failed:\n${out.stdout}\n${out.stderr}`).toBe(0);
    const vectors = fs.readdirSync(path.join(ROOT, 'test', 'vectors')).filter((f) => f.endsWith('.json')).length;
    expect(out.stdout).toContain(`${vectors} vectors checked, 0 failed`);
  });

  it('include the 8 MiB daemon frame, built at test time', async () => {
    const python = requirePython();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'avec-'));
    try {
      const vector: WireVector = {
        name: 'response-max-frame',
        description: 'exactly maxFrameBytes of payload',
        direction: 'daemon-to-client',
        kind: 'response',
        method: 'session/read',
        message: maxFrameMessage(protocol, ipc),
      };
      const { bin, json } = renderVector(protocol, ipc, vector);
      expect(bin.length).toBe(protocol.LIMITS.maxFrameBytes + 4);
      fs.writeFileSync(path.join(dir, 'response-max-frame.bin'), bin);
      fs.writeFileSync(path.join(dir, 'response-max-frame.json'), json);
      const out = await run(python, [CHECK_VECTORS, dir], { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, 50_000, pids);
      expect(out.code, `check_vectors.py failed:\n${out.stdout}\n${out.stderr}`).toBe(0);
      expect(out.stdout).toContain('1 vectors checked, 0 failed');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fail the check when a frame does not match its meaning', async () => {
    const python = requirePython();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'avec-'));
    try {
      const src = path.join(ROOT, 'test', 'vectors');
      fs.copyFileSync(path.join(src, 'response-ping.json'), path.join(dir, 'response-ping.json'));
      // The same timestamp as float64 instead of uint64: a float must not pass for an integer.
      const meaning = JSON.parse(fs.readFileSync(path.join(src, 'response-ping.json'), 'utf8')) as { message: { id: number; result: { now: number } } };
      const payload = Buffer.from(fs.readFileSync(path.join(src, 'response-ping.bin')).subarray(4));
      const at = payload.indexOf(0xcf);
      payload[at] = 0xcb;
      payload.writeDoubleBE(meaning.message.result.now, at + 1);
      const header = Buffer.alloc(4);
      header.writeUInt32BE(payload.length);
      fs.writeFileSync(path.join(dir, 'response-ping.bin'), Buffer.concat([header, payload]));
      const out = await run(python, [CHECK_VECTORS, dir], { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, 20_000, pids);
      expect(out.code).toBe(1);
      expect(out.stdout).toMatch(/FAIL response-ping\.json: .*float/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

