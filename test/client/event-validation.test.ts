// How much of the daemon's events the client checks (AstraClientOptions.validate): by default only
// the envelope of what an authenticated daemon of this protocol version sends — a known type with
// odd data is delivered as it came — while a missing seq, a map that is not a map, or an event of
// another session in a batch is refused in every mode (a `__proto__` key can never pollute: the decoder renames it); 'full' checks each event's data against its
// type's schema too. A stand-in daemon (fixtures/event-daemon.mjs) sends exactly these frames.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AstraError, SessionEvent } from '../../protocol/index.js';
import { ROOT } from '../helpers/processes.js';
import { testHome, waitFor } from './helpers.js';

const EVENT_DAEMON = path.join(ROOT, 'test', 'client', 'fixtures', 'event-daemon.mjs');
const S = 'ses_events';
const bin = (text: string) => ({ $bin: Buffer.from(text).toString('base64') });
const ev = (seq: number | undefined, type: string, data: unknown, sessionId = S) => ({ sessionId, ...(seq === undefined ? {} : { seq }), ts: 1_700_000_000_000, type, data });
const output = (seq: number, sessionId = S) => ev(seq, 'command.output', { turnId: 't1', stream: 'stdout', data: bin(`line ${seq}\n`) }, sessionId);

const FRAMES = [
  { method: 'session/event', params: output(1) },
  // A known type whose data does not fit its schema: trusted in 'envelope' mode, refused in 'full'.
  { method: 'session/event', params: ev(2, 'command.output', { turnId: 't1', stream: 'stdout', data: 'not bytes' }) },
  // An unknown type (a newer daemon): never delivered, but lastSeq moves past it.
  { method: 'session/event', params: ev(3, 'future.thing', { x: 1 }) },
  // No seq: refused in every mode.
  { method: 'session/event', params: ev(undefined, 'message.delta', { turnId: 't1', text: 'x' }) },
  // A batch with an event of another session: refused whole, nothing of it delivered.
  { method: 'session/events', params: { sessionId: S, events: [output(4), output(5, 'ses_other')] } },
  { method: 'session/events', params: { sessionId: S, events: [ev(6, 'message.delta', { turnId: 't1', text: 'six' }), output(7)] } },
  // data that is not a map: refused in every mode.
  { method: 'session/event', params: ev(8, 'message.delta', 'text') },
  // A key the full check refuses as prototype pollution; the decoder has already made it a plain `__proto_` key.
  { method: 'session/event', params: ev(9, 'message.delta', JSON.parse('{"turnId": "t1", "text": "nine", "__proto__": {"polluted": true}}')) },
  { method: 'session/event', params: ev(10, 'turn.completed', { turnId: 't1', status: 'completed' }) },
];

async function run(extraEnv: Record<string, string>, validate?: 'envelope' | 'full') {
  const t = testHome({ ASTRA_DAEMON_ENTRY: EVENT_DAEMON, ...extraEnv });
  const framesFile = path.join(t.home, 'frames.json');
  fs.writeFileSync(framesFile, JSON.stringify(FRAMES));
  t.env.FAKE_FRAMES = framesFile;
  const client = await t.client({ reconnect: false, ...(validate ? { validate } : {}) });
  const errors: AstraError[] = [];
  client.on('error', (e) => errors.push(e));
  const seen: SessionEvent[] = [];
  const sub = await client.subscribe(S, { onEvent: (e) => seen.push(e) });
  await waitFor('the last event (seq 10)', () => seen.some((e) => e.seq === 10));
  return { seen, errors, sub };
}

describe("the client's checks of what the daemon sends", () => {
  it("by default ('envelope'): a known type's odd data is delivered; a missing seq, data that is not a map and a batch naming another session are refused with an error event", async () => {
    const { seen, errors, sub } = await run({ ASTRA_CLIENT_VALIDATE: '' });
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 6, 7, 9, 10]);
    expect((seen[1]!.data as { data: unknown }).data).toBe('not bytes');
    const nine = seen[4]!.data as Record<string, unknown>;
    expect(Object.getPrototypeOf(nine)).toBe(Object.prototype);
    expect(Object.keys(nine)).toEqual(['turnId', 'text', '__proto_']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Buffer.from((seen[0]!.data as { data: Uint8Array }).data).toString()).toBe('line 1\n');
    expect(sub.lastSeq).toBe(10);
    expect(errors.map((e) => e.reason)).toEqual(['invalid_request', 'invalid_request', 'invalid_request']);
    expect(errors[0]!.message).toMatch(/malformed session\/event: event\.seq is required/);
    expect(errors[1]!.message).toMatch(/malformed session\/events: events\[1\] belongs to session ses_other/);
    expect(errors[2]!.message).toMatch(/malformed session\/event: event\.data must be an object/);
  });

  it("with validate: 'full' the data of each known type is checked too: the odd command.output is refused as well", async () => {
    const { seen, errors } = await run({}, 'full');
    // seq 9 is refused by the connection (forbidden_key, answered to the daemon), before the client sees it.
    expect(seen.map((e) => e.seq)).toEqual([1, 6, 7, 10]);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/malformed session\/event: event\(command\.output\)\.data\.data must be binary, got string/),
      expect.stringMatching(/event\.seq is required/),
      expect.stringMatching(/events\[1\] belongs to session ses_other/),
      expect.stringMatching(/event\.data must be an object/),
    ]);
  });

  it('ASTRA_CLIENT_VALIDATE=full in the environment means full when the option is not given', async () => {
    const { seen } = await run({ ASTRA_CLIENT_VALIDATE: 'full' });
    expect(seen.map((e) => e.seq)).toEqual([1, 6, 7, 10]);
  });

  it('refuses a validate option that is neither envelope nor full', async () => {
    const t = testHome();
    await expect(t.client({ validate: 'none' as 'full' })).rejects.toMatchObject({ reason: 'invalid_params', message: expect.stringMatching(/validate must be 'envelope' or 'full'/) });
  });
});
