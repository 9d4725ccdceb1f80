import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { AstraError } from '../../protocol/index.js';
import { LeaseManager, type LeaseChange } from '../../lease/index.js';
import { fakeClock, tokenSource } from './helpers.js';

// A model of a few clients (each with one live connection at a time, a new connection id after each
// disconnect) driving a LeaseManager through random operations, clock steps and daemon restarts.

const CLIENTS = 3;
const SESSIONS = ['s0', 's1'];
const GRACE_MS = 10_000;

type Op =
  | { kind: 'acquire'; client: number; session: number; takeover: boolean; token: 'none' | 'own' | 'wrong' }
  | { kind: 'release'; client: number; session: number; epochDelta: number }
  | { kind: 'disconnect'; client: number }
  | { kind: 'reclaim'; client: number; session: number }
  | { kind: 'advance'; ms: number; tick: boolean }
  | { kind: 'restart' }
  | { kind: 'write'; client: number; session: number; epochDelta: number };

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const session = fc.integer({ min: 0, max: SESSIONS.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('acquire' as const), client, session, takeover: fc.boolean(), token: fc.constantFrom('none' as const, 'own' as const, 'wrong' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), client, session, epochDelta: fc.integer({ min: -2, max: 1 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('disconnect' as const), client }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('reclaim' as const), client, session }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: GRACE_MS + 2000 }), tick: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('write' as const), client, session, epochDelta: fc.integer({ min: -3, max: 1 }) }) },
);

interface ClientState {
  generation: number;
  tokens: Map<string, string>; // session → last resume token received
  epochs: Map<string, number>; // session → last epoch received
}

function connId(c: number, st: ClientState): string {
  return `c${c}.${st.generation}`;
}

function reasonOf(e: unknown): string {
  if (e instanceof AstraError) return e.reason;
  throw e;
}

describe('LeaseManager properties', () => {
  it('never two controllers, epochs only grow, stale epochs never pass, grace is bounded, reclaim in grace always works', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), (ops) => {
        const clock = fakeClock();
        const tokens = tokenSource();
        const make = () => new LeaseManager({ now: clock.now, graceMs: GRACE_MS, ...tokens });
        let m = make();
        const clients: ClientState[] = Array.from({ length: CLIENTS }, () => ({ generation: 0, tokens: new Map(), epochs: new Map() }));
        const lastChangeEpoch = new Map<string, number>();
        const maxGrantEpoch = new Map<string, number>();
        const highestEpochSeen = new Map<string, number>();
        const graceStartedAt = new Map<string, number>(); // session → clock when its current grace began
        const allConnIds = new Set<string>(clients.map((st, c) => connId(c, st)));

        const record = (changes: LeaseChange[]) => {
          for (const ch of changes) {
            const prev = lastChangeEpoch.get(ch.sessionId) ?? 0;
            expect(ch.epoch).toBeGreaterThanOrEqual(prev);
            lastChangeEpoch.set(ch.sessionId, ch.epoch);
            if (ch.reason === 'acquired' || ch.reason === 'reclaimed' || ch.reason === 'takeover') {
              expect(ch.epoch).toBeGreaterThan(maxGrantEpoch.get(ch.sessionId) ?? 0);
              maxGrantEpoch.set(ch.sessionId, ch.epoch);
              graceStartedAt.delete(ch.sessionId);
              expect(ch.holder).not.toBeNull();
            }
            if (ch.reason === 'grace' || ch.reason === 'restart') {
              graceStartedAt.set(ch.sessionId, clock.now());
              expect(ch.graceUntil).toBe(clock.now() + GRACE_MS);
            }
            if (ch.reason === 'released' || ch.reason === 'expired') {
              expect(ch.holder).toBeNull();
              graceStartedAt.delete(ch.sessionId);
            }
          }
        };

        const acquireAs = (c: number, s: string, opts: { takeover?: boolean; resumeToken?: string }) => {
          const st = clients[c]!;
          const r = m.acquire(s, { connectionId: connId(c, st), clientName: `client${c}` }, opts);
          record(r.changes);
          st.tokens.set(s, r.resumeToken);
          st.epochs.set(s, r.epoch);
          return r;
        };

        for (const o of ops) {
          switch (o.kind) {
            case 'acquire': {
              const s = SESSIONS[o.session]!;
              const st = clients[o.client]!;
              const resumeToken = o.token === 'own' ? st.tokens.get(s) : o.token === 'wrong' ? 'not-a-token' : undefined;
              const before = m.view(s);
              try {
                acquireAs(o.client, s, { takeover: o.takeover, ...(resumeToken === undefined ? {} : { resumeToken }) });
              } catch (e) {
                expect(reasonOf(e)).toBe('lease_held');
                // Refused only when someone else had it, without takeover.
                expect(o.takeover).toBe(false);
                expect(before.holder).not.toBeNull();
              }
              break;
            }
            case 'reclaim': {
              const s = SESSIONS[o.session]!;
              const st = clients[o.client]!;
              const token = st.tokens.get(s);
              if (token === undefined) break;
              const v = m.view(s);
              const tokenIsCurrent = v.holder !== null && v.holder.clientName === `client${o.client}` && st.epochs.get(s) === v.epoch;
              const withinGrace = v.state === 'grace' && clock.now() < (v.graceUntil as number);
              try {
                const r = acquireAs(o.client, s, { resumeToken: token });
                if (withinGrace && tokenIsCurrent) expect(r.change.reason).toBe('reclaimed');
              } catch (e) {
                expect(reasonOf(e)).toBe('lease_held');
                expect(withinGrace && tokenIsCurrent).toBe(false);
              }
              break;
            }
            case 'release': {
              const s = SESSIONS[o.session]!;
              const st = clients[o.client]!;
              const epoch = (st.epochs.get(s) ?? 0) + o.epochDelta;
              try {
                record([m.release(s, connId(o.client, st), epoch)]);
              } catch (e) {
                expect(['not_controller', 'stale_epoch']).toContain(reasonOf(e));
              }
              break;
            }
            case 'disconnect': {
              const st = clients[o.client]!;
              record(m.disconnect(connId(o.client, st)));
              st.generation += 1;
              allConnIds.add(connId(o.client, st));
              break;
            }
            case 'advance': {
              clock.advance(o.ms);
              if (o.tick) record(m.tick());
              break;
            }
            case 'restart': {
              const saved = SESSIONS.map((s) => [s, m.persisted(s)] as const);
              m = make();
              for (const [s, p] of saved) {
                const ch = m.restore(s, p);
                if (ch) record([ch]);
              }
              // Every connection died with the old daemon.
              clients.forEach((st, c) => {
                st.generation += 1;
                allConnIds.add(connId(c, st));
              });
              break;
            }
            case 'write': {
              const s = SESSIONS[o.session]!;
              const st = clients[o.client]!;
              const epoch = (st.epochs.get(s) ?? 0) + o.epochDelta;
              const v = m.view(s);
              try {
                m.check(s, connId(o.client, st), epoch);
                expect(epoch).toBe(v.epoch);
              } catch (e) {
                const reason = reasonOf(e);
                expect(['not_controller', 'stale_epoch']).toContain(reason);
                if (epoch < v.epoch) expect(reason).toBe('stale_epoch');
              }
              break;
            }
          }

          // Invariants after every step.
          for (const s of SESSIONS) {
            const v = m.view(s);
            expect(v.epoch).toBeGreaterThanOrEqual(highestEpochSeen.get(s) ?? 0);
            highestEpochSeen.set(s, v.epoch);

            let controllers = 0;
            for (const id of allConnIds) {
              for (const e of [v.epoch - 2, v.epoch - 1, v.epoch, v.epoch + 1]) {
                if (e < 0) continue;
                let passed = true;
                try {
                  m.check(s, id, e);
                } catch {
                  passed = false;
                }
                if (passed) {
                  expect(e).toBe(v.epoch); // a stale (or future) epoch never passes
                  controllers += 1;
                }
              }
            }
            expect(controllers).toBeLessThanOrEqual(1);
            expect(controllers === 1).toBe(v.state === 'held');

            if (v.state === 'grace') {
              const started = graceStartedAt.get(s);
              expect(started).toBeDefined();
              expect(v.graceUntil).toBe((started as number) + GRACE_MS);
            }
          }
          // After a tick nothing in grace is overdue.
          if (o.kind === 'advance' && o.tick) {
            for (const s of SESSIONS) {
              const v = m.view(s);
              if (v.state === 'grace') expect(v.graceUntil as number).toBeGreaterThan(clock.now());
            }
          }
          const deadline = m.nextDeadline();
          const graces = SESSIONS.map((s) => m.view(s)).filter((v) => v.state === 'grace');
          expect(deadline).toBe(graces.length ? Math.min(...graces.map((v) => v.graceUntil as number)) : undefined);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a client that reclaims with its token within grace always gets the lease back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: GRACE_MS - 1 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 5 }),
        (wait, viaRestart, priorTakeovers) => {
          const clock = fakeClock();
          const tokens = tokenSource();
          let m = new LeaseManager({ now: clock.now, graceMs: GRACE_MS, ...tokens });
          for (let i = 0; i < priorTakeovers; i++) m.acquire('s', { connectionId: `other${i}`, clientName: 'other' }, { takeover: true });
          const mine = m.acquire('s', { connectionId: 'a1', clientName: 'app' }, { takeover: true });
          if (viaRestart) {
            const saved = m.persisted('s');
            m = new LeaseManager({ now: clock.now, graceMs: GRACE_MS, ...tokens });
            m.restore('s', saved);
          } else {
            m.disconnect('a1');
          }
          clock.advance(wait);
          m.tick();
          // Someone else trying without takeover must not steal it meanwhile.
          expect(() => m.acquire('s', { connectionId: 'x', clientName: 'x' })).toThrow(AstraError);
          const r = m.acquire('s', { connectionId: 'a2', clientName: 'app' }, { resumeToken: mine.resumeToken });
          expect(r.change.reason).toBe('reclaimed');
          expect(r.epoch).toBe(mine.epoch + 1);
          expect(() => m.check('s', 'a2', r.epoch)).not.toThrow();
        },
      ),
      { numRuns: 200 },
    );
  });
});
