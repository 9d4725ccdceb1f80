import { LeaseManager, type LeaseHolder } from '../../lease/index.js';

export interface FakeClock {
  now: () => number;
  advance: (ms: number) => void;
  set: (t: number) => void;
}

export function fakeClock(start = 1_700_000_000_000): FakeClock {
  let t = start;
  return { now: () => t, advance: (ms) => { t += ms; }, set: (v) => { t = v; } };
}

/** Deterministic tokens and a reversible-looking hash, so tests can tell tokens and hashes apart. */
export function tokenSource(): { newToken: () => string; hashToken: (t: string) => string } {
  let n = 0;
  return { newToken: () => `token-${++n}`, hashToken: (t) => `hash(${t})` };
}

export function manager(clock: FakeClock, graceMs?: number): LeaseManager {
  const tokens = tokenSource();
  return new LeaseManager({ now: clock.now, ...(graceMs === undefined ? {} : { graceMs }), ...tokens });
}

export function holder(connectionId: string, clientName = `client-${connectionId}`, pid?: number): LeaseHolder {
  return pid === undefined ? { connectionId, clientName } : { connectionId, clientName, pid };
}
