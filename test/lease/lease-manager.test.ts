import { describe, it, expect } from 'vitest';
import { AstraError } from '../../protocol/index.js';
import { DEFAULT_GRACE_MS, LeaseManager } from '../../lease/index.js';
import { fakeClock, holder, manager, tokenSource } from './helpers.js';

function thrown(fn: () => unknown): AstraError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AstraError);
    return e as AstraError;
  }
  throw new Error('expected an AstraError, nothing was thrown');
}

describe('acquire', () => {
  it('grants a free lease at epoch 1 with a resume token and the grace length', () => {
    const clock = fakeClock();
    const m = manager(clock);
    const r = m.acquire('s1', holder('c1'));
    expect(r.epoch).toBe(1);
    expect(r.resumeToken).toBe('token-1');
    expect(r.graceMs).toBe(DEFAULT_GRACE_MS);
    expect(r.idempotent).toBe(false);
    expect(r.change).toEqual({ sessionId: 's1', epoch: 1, holder: holder('c1'), reason: 'acquired' });
    expect(r.changes).toEqual([r.change]);
    expect(m.view('s1')).toEqual({ sessionId: 's1', epoch: 1, holder: holder('c1'), since: clock.now(), state: 'held' });
  });

  it('returns the same lease without a change or an epoch bump when the holder acquires again', () => {
    const m = manager(fakeClock());
    const first = m.acquire('s1', holder('c1'));
    const again = m.acquire('s1', holder('c1'), { takeover: true });
    expect(again.idempotent).toBe(true);
    expect(again.changes).toEqual([]);
    expect(again.epoch).toBe(first.epoch);
    expect(again.resumeToken).toBe(first.resumeToken);
    expect(m.view('s1').epoch).toBe(1);
  });

  it('refuses a held lease with lease_held naming the holder client, pid and since when', () => {
    const clock = fakeClock(Date.UTC(2030, 0, 2, 3, 4, 5));
    const m = manager(clock);
    m.acquire('s1', holder('c1', 'desktop-app', 4242));
    clock.advance(1000);
    const e = thrown(() => m.acquire('s1', holder('c2', 'tui')));
    expect(e.reason).toBe('lease_held');
    expect(e.message).toContain('desktop-app');
    expect(e.message).toContain('pid 4242');
    expect(e.message).toContain('2030-01-02T03:04:05.000Z');
    expect(e.message).toContain('takeover');
    expect(e.data).toMatchObject({ holder: holder('c1', 'desktop-app', 4242), since: Date.UTC(2030, 0, 2, 3, 4, 5) });
    expect(e.data).not.toHaveProperty('graceUntil');
    expect(m.view('s1').holder?.connectionId).toBe('c1');
  });

  it('refuses a lease in grace with lease_held that says until when and how to reclaim', () => {
    const clock = fakeClock(Date.UTC(2030, 0, 1));
    const m = manager(clock, 10_000);
    m.acquire('s1', holder('c1', 'desktop-app'));
    m.disconnect('c1');
    const e = thrown(() => m.acquire('s1', holder('c2')));
    expect(e.reason).toBe('lease_held');
    expect(e.message).toContain('2030-01-01T00:00:10.000Z');
    expect(e.message).toContain('resume token');
    expect(e.data).toMatchObject({ graceUntil: Date.UTC(2030, 0, 1) + 10_000 });
  });

  it('refuses a wrong resume token while held, but grants a free lease whatever token comes with it', () => {
    const m = manager(fakeClock());
    m.acquire('s1', holder('c1'));
    expect(thrown(() => m.acquire('s1', holder('c2'), { resumeToken: 'nope' })).reason).toBe('lease_held');
    const r = m.acquire('s2', holder('c2'), { resumeToken: 'nope' });
    expect(r.change.reason).toBe('acquired');
  });

  it('takeover demotes the holder, bumps the epoch and names the revoked connection', () => {
    const m = manager(fakeClock());
    m.acquire('s1', holder('c1'));
    const r = m.acquire('s1', holder('c2'), { takeover: true });
    expect(r.epoch).toBe(2);
    expect(r.change).toEqual({
      sessionId: 's1',
      epoch: 2,
      holder: holder('c2'),
      reason: 'takeover',
      revoked: { connectionId: 'c1', reason: 'takeover' },
    });
    expect(m.heldBy('c1')).toEqual([]);
    expect(m.heldBy('c2')).toEqual(['s1']);
  });

  it('takeover of a lease in grace works and ends the grace', () => {
    const m = manager(fakeClock());
    m.acquire('s1', holder('c1'));
    m.disconnect('c1');
    const r = m.acquire('s1', holder('c2'), { takeover: true });
    expect(r.change.reason).toBe('takeover');
    expect(m.view('s1').state).toBe('held');
    expect(m.nextDeadline()).toBeUndefined();
  });
});

describe('grace and reclaim', () => {
  it('a disconnect puts every lease of the connection into grace, keeping holder and epoch', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    m.acquire('s1', holder('c1'));
    m.acquire('s2', holder('c1'));
    m.acquire('s3', holder('c2'));
    const changes = m.disconnect('c1');
    expect(changes).toEqual([
      { sessionId: 's1', epoch: 1, holder: holder('c1'), reason: 'grace', graceUntil: clock.now() + 5000 },
      { sessionId: 's2', epoch: 1, holder: holder('c1'), reason: 'grace', graceUntil: clock.now() + 5000 },
    ]);
    expect(m.view('s3').state).toBe('held');
    expect(m.nextDeadline()).toBe(clock.now() + 5000);
    expect(m.disconnect('c1')).toEqual([]);
  });

  it('reclaims with the resume token from a new connection, bumping the epoch', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    const first = m.acquire('s1', holder('c1', 'app'));
    m.disconnect('c1');
    clock.advance(4999);
    const r = m.acquire('s1', holder('c1b', 'app'), { resumeToken: first.resumeToken });
    expect(r.change).toEqual({
      sessionId: 's1',
      epoch: 2,
      holder: holder('c1b', 'app'),
      reason: 'reclaimed',
      revoked: { connectionId: 'c1', reason: 'takeover' },
    });
    expect(r.resumeToken).not.toBe(first.resumeToken);
    expect(m.nextDeadline()).toBeUndefined();
    // The token is single-use: the old one no longer matches.
    expect(thrown(() => m.acquire('s1', holder('c3'), { resumeToken: first.resumeToken })).reason).toBe('lease_held');
  });

  it('reclaims a lease still held by a connection the daemon has not yet seen die', () => {
    const m = manager(fakeClock());
    const first = m.acquire('s1', holder('c1'));
    const r = m.acquire('s1', holder('c2'), { resumeToken: first.resumeToken });
    expect(r.change.reason).toBe('reclaimed');
    expect(r.change.revoked).toEqual({ connectionId: 'c1', reason: 'takeover' });
  });

  it('a matching resume token wins over takeover and is reported as reclaimed', () => {
    const m = manager(fakeClock());
    const first = m.acquire('s1', holder('c1'));
    m.disconnect('c1');
    expect(m.acquire('s1', holder('c2'), { takeover: true, resumeToken: first.resumeToken }).change.reason).toBe('reclaimed');
  });

  it('tick expires a grace exactly at graceUntil, not before, and frees the lease', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    const first = m.acquire('s1', holder('c1'));
    m.disconnect('c1');
    clock.advance(4999);
    expect(m.tick()).toEqual([]);
    clock.advance(1);
    expect(m.tick()).toEqual([
      { sessionId: 's1', epoch: 1, holder: null, reason: 'expired', revoked: { connectionId: 'c1', reason: 'expired' } },
    ]);
    expect(m.view('s1')).toEqual({ sessionId: 's1', epoch: 1, holder: null, state: 'free' });
    expect(m.nextDeadline()).toBeUndefined();
    // After expiry the old token is worthless but the lease is free, so it is just granted.
    const r = m.acquire('s1', holder('c2'), { resumeToken: first.resumeToken });
    expect(r.change.reason).toBe('acquired');
    expect(r.epoch).toBe(2);
  });

  it('an acquire after the grace ran out expires it first even if tick was late', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    m.acquire('s1', holder('c1'));
    m.disconnect('c1');
    clock.advance(6000);
    const r = m.acquire('s1', holder('c2'));
    expect(r.changes.map((c) => c.reason)).toEqual(['expired', 'acquired']);
    expect(r.change).toBe(r.changes[1]);
    expect(m.tick()).toEqual([]);
  });

  it('nextDeadline is the earliest grace', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    m.acquire('s1', holder('c1'));
    m.acquire('s2', holder('c2'));
    m.disconnect('c1');
    const first = clock.now() + 5000;
    clock.advance(100);
    m.disconnect('c2');
    expect(m.nextDeadline()).toBe(first);
  });
});

describe('check and release', () => {
  it('after a takeover the old controller gets stale_epoch and the new one passes', () => {
    const m = manager(fakeClock());
    const a = m.acquire('s1', holder('c1'));
    const b = m.acquire('s1', holder('c2'), { takeover: true });
    const e = thrown(() => m.check('s1', 'c1', a.epoch));
    expect(e.reason).toBe('stale_epoch');
    expect(e.data).toMatchObject({ epoch: 1, currentEpoch: 2 });
    expect(() => m.check('s1', 'c2', b.epoch)).not.toThrow();
  });

  it('an observer with the current epoch gets not_controller naming the holder', () => {
    const m = manager(fakeClock());
    const a = m.acquire('s1', holder('c1', 'desktop-app'));
    const e = thrown(() => m.check('s1', 'c2', a.epoch));
    expect(e.reason).toBe('not_controller');
    expect(e.message).toContain('desktop-app');
    expect(e.data).toMatchObject({ state: 'held', currentEpoch: 1 });
  });

  it('no one passes check on a free lease, an unknown session, or a lease in grace', () => {
    const m = manager(fakeClock());
    expect(thrown(() => m.check('nope', 'c1', 0)).reason).toBe('not_controller');
    const a = m.acquire('s1', holder('c1'));
    m.disconnect('c1');
    expect(thrown(() => m.check('s1', 'c1', a.epoch)).reason).toBe('not_controller');
  });

  it('the holder sending an epoch from the future gets stale_epoch', () => {
    const m = manager(fakeClock());
    m.acquire('s1', holder('c1'));
    expect(thrown(() => m.check('s1', 'c1', 7)).reason).toBe('stale_epoch');
  });

  it('release frees the lease without bumping the epoch, and the releaser then gets not_controller', () => {
    const m = manager(fakeClock());
    const a = m.acquire('s1', holder('c1'));
    expect(m.release('s1', 'c1', a.epoch)).toEqual({
      sessionId: 's1',
      epoch: 1,
      holder: null,
      reason: 'released',
      revoked: { connectionId: 'c1', reason: 'released' },
    });
    expect(thrown(() => m.check('s1', 'c1', a.epoch)).reason).toBe('not_controller');
    expect(m.persisted('s1')).toEqual({ epoch: 1, holder: null });
    expect(m.acquire('s1', holder('c2')).epoch).toBe(2);
  });

  it('release by a non-holder or with a stale epoch changes nothing', () => {
    const m = manager(fakeClock());
    m.acquire('s1', holder('c1'));
    const b = m.acquire('s1', holder('c2'), { takeover: true });
    expect(thrown(() => m.release('s1', 'c1', 1)).reason).toBe('stale_epoch');
    expect(thrown(() => m.release('s1', 'c1', b.epoch)).reason).toBe('not_controller');
    expect(m.view('s1').holder?.connectionId).toBe('c2');
  });
});

describe('persisted and restore', () => {
  it('persists the epoch, holder, since and the token hash, never the token', () => {
    const clock = fakeClock();
    const m = manager(clock);
    const a = m.acquire('s1', holder('c1', 'app', 7));
    const p = m.persisted('s1');
    expect(p).toEqual({ epoch: 1, holder: holder('c1', 'app', 7), since: clock.now(), resumeTokenHash: `hash(${a.resumeToken})` });
    expect(JSON.stringify(p)).not.toContain(`"${a.resumeToken}"`);
  });

  it('a held lease comes back in grace after a restart and its client reclaims it with the token', () => {
    const clock = fakeClock();
    const before = manager(clock, 5000);
    const a = before.acquire('s1', holder('c1', 'app'));
    const saved = before.persisted('s1');

    clock.advance(60_000); // the daemon was down for a while; the grace starts at restart
    const after = new LeaseManager({ now: clock.now, graceMs: 5000, ...tokenSource() });
    const change = after.restore('s1', saved);
    expect(change).toEqual({ sessionId: 's1', epoch: 1, holder: holder('c1', 'app'), reason: 'restart', graceUntil: clock.now() + 5000 });
    expect(after.view('s1').state).toBe('grace');
    expect(after.nextDeadline()).toBe(clock.now() + 5000);
    expect(thrown(() => after.acquire('s1', holder('x'))).reason).toBe('lease_held');
    const r = after.acquire('s1', holder('c9', 'app'), { resumeToken: a.resumeToken });
    expect(r.change.reason).toBe('reclaimed');
    expect(r.epoch).toBe(2);
  });

  it('a restored grace expires like any other', () => {
    const clock = fakeClock();
    const m = manager(clock, 5000);
    m.restore('s1', { epoch: 4, holder: holder('c1'), since: 1 });
    clock.advance(5000);
    expect(m.tick().map((c) => [c.reason, c.epoch])).toEqual([['expired', 4]]);
  });

  it('restoring a free lease keeps its epoch and reports no change', () => {
    const m = manager(fakeClock());
    expect(m.restore('s1', { epoch: 9, holder: null })).toBeUndefined();
    expect(m.view('s1')).toEqual({ sessionId: 's1', epoch: 9, holder: null, state: 'free' });
    expect(m.acquire('s1', holder('c1')).epoch).toBe(10);
  });

  it('restore never lowers an epoch nor revives an older lease', () => {
    const m = manager(fakeClock());
    m.restore('s1', { epoch: 5, holder: null });
    m.acquire('s1', holder('c1'));
    m.release('s1', 'c1', 6);
    expect(m.restore('s1', { epoch: 6, holder: holder('ghost') })).toBeUndefined();
    expect(m.restore('s1', { epoch: 2, holder: holder('ghost') })).toBeUndefined();
    expect(m.view('s1')).toMatchObject({ epoch: 6, holder: null, state: 'free' });
  });

  it('refuses a malformed persisted lease with journal_corrupt', () => {
    const m = manager(fakeClock());
    expect(thrown(() => m.restore('s1', { epoch: -1, holder: null })).reason).toBe('journal_corrupt');
    expect(thrown(() => m.restore('s1', { epoch: 1.5, holder: null })).reason).toBe('journal_corrupt');
    expect(thrown(() => m.restore('s1', { epoch: 1, holder: { connectionId: 1 } as never })).reason).toBe('journal_corrupt');
  });

  it('refuses a negative grace length', () => {
    expect(thrown(() => new LeaseManager({ now: () => 0, graceMs: -1, ...tokenSource() })).reason).toBe('invalid_params');
  });
});
