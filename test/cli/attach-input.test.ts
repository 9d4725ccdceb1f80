// The prefix key and the controller's keys on their way to the program (cli/attach/attach-input.ts).
import { describe, expect, it } from 'vitest';
import { InputSender, KeyRouter, parsePrefixKey, type Routed } from '../../cli/attach/attach-input.js';
import { MAX_COMMAND_INPUT_BYTES } from '../../protocol/index.js';

const ctrlBracket = parsePrefixKey('C-]');
const feed = (r: KeyRouter, s: string | Buffer): Routed[] => r.feed(typeof s === 'string' ? Buffer.from(s, 'latin1') : s);
const shown = (rs: Routed[]) => rs.map((r) => (r.type === 'data' ? `data:${r.data.toString('latin1')}` : r.type === 'command' ? `cmd:${r.command}` : r.type === 'unknown' ? `unknown:${r.key}` : 'prefix'));

describe('the prefix key', () => {
  it('is read as people write it, and only control keys programs can spare are allowed', () => {
    expect(ctrlBracket).toEqual({ byte: 0x1d, name: 'Ctrl-]' });
    expect(parsePrefixKey('ctrl-a')).toEqual({ byte: 0x01, name: 'Ctrl-A' });
    expect(parsePrefixKey('Ctrl+B')).toEqual({ byte: 0x02, name: 'Ctrl-B' });
    expect(parsePrefixKey('^\\')).toEqual({ byte: 0x1c, name: 'Ctrl-\\' });
    for (const bad of ['a', 'C-c', 'C-d', 'C-[', 'C-m', 'C-i', 'C-z', 'meta-x', '']) expect(() => parsePrefixKey(bad), bad).toThrow(/prefix key .* write it as C-\]/);
  });
});

describe('KeyRouter', () => {
  it('passes every byte but the prefix through untouched, Ctrl-C and escape sequences included', () => {
    const r = new KeyRouter(ctrlBracket);
    expect(shown(feed(r, 'ls -l\r\x03\x1b[A\x04'))).toEqual(['data:ls -l\r\x03\x1b[A\x04']);
    expect(r.prefixArmed).toBe(false);
  });

  it('takes the key after the prefix as Astra\'s, in order with the data around it', () => {
    const r = new KeyRouter(ctrlBracket);
    expect(shown(feed(r, 'ab\x1dcde'))).toEqual(['data:ab', 'prefix', 'cmd:cancel', 'data:de']);
    expect(shown(feed(r, '\x1d\x03'))).toEqual(['prefix', 'cmd:cancel']);
    expect(shown(feed(r, '\x1dd'))).toEqual(['prefix', 'cmd:detach']);
    expect(shown(feed(r, '\x1dT'))).toEqual(['prefix', 'cmd:take']);
    expect(shown(feed(r, '\x1d?'))).toEqual(['prefix', 'cmd:help']);
  });

  it('sends the prefix itself when pressed twice, and holds prefix mode across chunks', () => {
    const r = new KeyRouter(ctrlBracket);
    expect(shown(feed(r, 'x\x1d'))).toEqual(['data:x', 'prefix']);
    expect(r.prefixArmed).toBe(true);
    expect(shown(feed(r, '\x1dy'))).toEqual(['data:\x1d', 'data:y']);
    expect(r.prefixArmed).toBe(false);
    expect(shown(feed(r, '\x1d'))).toEqual(['prefix']);
    expect(shown(feed(r, 'd'))).toEqual(['cmd:detach']);
  });

  it('names a key after the prefix that means nothing, an arrow key as one, and sends none of it', () => {
    const r = new KeyRouter(ctrlBracket);
    expect(shown(feed(r, '\x1d\x1b[Az'))).toEqual(['prefix', 'unknown:a function key', 'data:z']);
    expect(shown(feed(r, '\x1d\x1b'))).toEqual(['prefix', 'unknown:Escape']);
    expect(shown(feed(r, '\x1dq'))).toEqual(['prefix', 'unknown:"q"']);
  });

  it('disarm() forgets a pressed prefix; another prefix key leaves Ctrl-] alone', () => {
    const r = new KeyRouter(ctrlBracket);
    feed(r, '\x1d');
    r.disarm();
    expect(shown(feed(r, 'c'))).toEqual(['data:c']);
    const a = new KeyRouter(parsePrefixKey('C-a'));
    expect(shown(feed(a, '\x1d\x01d'))).toEqual(['data:\x1d', 'prefix', 'cmd:detach']);
  });
});

/** A command/input target that records requests and answers each when told. */
function target() {
  const sent: { turnId: string; data: string }[] = [];
  const answers: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const refused: unknown[] = [];
  return {
    sent,
    refused,
    answers,
    t: {
      send: (turnId: string, data: Buffer) => {
        sent.push({ turnId, data: data.toString('latin1') });
        return new Promise<void>((resolve, reject) => answers.push({ resolve, reject }));
      },
      refused: (e: unknown) => refused.push(e),
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('InputSender', () => {
  it('sends the keys of one tick as one request, and the next only after the answer, in order', async () => {
    const x = target();
    const s = new InputSender(x.t);
    s.write('t1', Buffer.from('a'));
    s.write('t1', Buffer.from('b'));
    await tick();
    expect(x.sent).toEqual([{ turnId: 't1', data: 'ab' }]);
    s.write('t1', Buffer.from('c'));
    s.write('t1', Buffer.from('d'));
    await tick();
    expect(x.sent).toHaveLength(1); // waits for the first answer
    x.answers[0]!.resolve();
    await tick();
    await tick();
    expect(x.sent).toEqual([{ turnId: 't1', data: 'ab' }, { turnId: 't1', data: 'cd' }]);
    x.answers[1]!.resolve();
    await s.whenIdle();
    expect(s.pendingBytes).toBe(0);
  });

  it('cuts a large paste into requests within the protocol limit, keeping every byte', async () => {
    const x = target();
    const s = new InputSender(x.t);
    const big = Buffer.alloc(MAX_COMMAND_INPUT_BYTES * 2 + 10, 0x61);
    s.write('t1', big);
    for (let i = 0; i < 3; i++) {
      await waitUntil(() => x.sent.length === i + 1);
      x.answers[i]!.resolve();
    }
    await s.whenIdle();
    expect(x.sent.map((r) => r.data.length)).toEqual([MAX_COMMAND_INPUT_BYTES, MAX_COMMAND_INPUT_BYTES, 10]);
  });

  it('drops what was queued when a request is refused or another turn starts', async () => {
    const x = target();
    const s = new InputSender(x.t);
    s.write('t1', Buffer.from('a'));
    await tick();
    s.write('t1', Buffer.from('b'));
    x.answers[0]!.reject(new Error('turn ended'));
    await s.whenIdle();
    expect(x.refused).toHaveLength(1);
    expect(x.sent).toEqual([{ turnId: 't1', data: 'a' }]);
    s.write('t1', Buffer.from('old'));
    s.write('t2', Buffer.from('new'));
    await tick();
    expect(x.sent[1]).toEqual({ turnId: 't2', data: 'new' });
  });
});

async function waitUntil(p: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !p(); i++) await tick();
  expect(p()).toBe(true);
}
