// What a quiet daemon gives back (daemon/idle-release.ts, daemon/release-memory.ts; issue 26): one
// full GC and then malloc_trim once no request, connection or turn has come for the setting, and
// not while traffic flows. With an injected clock, GC, trim and RSS — nothing here measures memory.
import { describe, expect, it } from 'vitest';
import { IdleRelease } from '../../daemon/idle-release.js';
import type { Logger } from '../../daemon/logger.js';
import { fullGc, loadMallocTrim, type MallocTrim } from '../../daemon/release-memory.js';

interface Line {
  fields: Record<string, unknown>;
  msg: string;
}

function setup(opts: { afterMs?: number; trim?: MallocTrim } = {}) {
  let t = 1_000_000;
  const calls: string[] = [];
  const lines: Line[] = [];
  let loads = 0;
  const log = { debug: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }) } as unknown as Logger;
  const release = new IdleRelease({
    afterMs: opts.afterMs ?? 45_000,
    now: () => t,
    log,
    gc: () => calls.push('gc'),
    loadTrim: () => {
      loads++;
      return opts.trim ?? { ok: true, trim: () => (calls.push('trim'), true) };
    },
    rss: () => 100 * 1048576,
  });
  /** Housekeeping: one tick a second for `ms`. */
  const run = (ms: number, busy = false) => {
    for (let i = 0; i < ms / 1000; i++) {
      t += 1000;
      release.tick(busy);
    }
  };
  return { release, calls, lines, run, loads: () => loads, activity: () => release.activity() };
}

describe('idle release', () => {
  it('runs a full GC and then malloc_trim once the daemon has been quiet for the setting, once per quiet spell', () => {
    const s = setup();
    s.run(44_000);
    expect(s.calls).toEqual([]);
    s.run(1_000);
    expect(s.calls).toEqual(['gc']);
    s.run(1_000);
    expect(s.calls).toEqual(['gc', 'trim']);
    s.run(600_000);
    expect(s.calls).toEqual(['gc', 'trim']);
    expect(s.release.releases).toBe(1);
    expect(s.lines.map((l) => l.msg)).toEqual(['idle: gave memory back (a full GC, then malloc_trim)']);
    expect(s.lines[0]!.fields).toMatchObject({ trimmed: true, quietMs: 45_000 });
    // Traffic again, then quiet again: one more release.
    s.activity();
    s.run(46_000);
    expect(s.calls).toEqual(['gc', 'trim', 'gc', 'trim']);
  });

  it('never runs while requests keep coming or a turn runs', () => {
    const s = setup();
    for (let i = 0; i < 30; i++) {
      s.run(10_000);
      s.activity();
    }
    s.run(120_000, true);
    expect(s.calls).toEqual([]);
    // The quiet spell starts when the turn ends, not when the last request came.
    s.run(44_000);
    expect(s.calls).toEqual([]);
    s.run(2_000);
    expect(s.calls).toEqual(['gc', 'trim']);
  });

  it('activity between the GC and the trim starts the spell over', () => {
    const s = setup();
    s.run(45_000);
    expect(s.calls).toEqual(['gc']);
    s.activity();
    s.run(10_000);
    expect(s.calls).toEqual(['gc']);
    s.run(36_000);
    expect(s.calls).toEqual(['gc', 'gc', 'trim']);
  });

  it('releases once more when idle sessions are closed in the quiet spell', () => {
    const s = setup();
    s.run(50_000);
    s.release.again();
    s.run(2_000);
    expect(s.calls).toEqual(['gc', 'trim', 'gc', 'trim']);
  });

  it('0 turns it off', () => {
    const s = setup({ afterMs: 0 });
    s.run(600_000);
    expect(s.calls).toEqual([]);
  });

  it('without malloc_trim it runs the GC and says why once, at debug level', () => {
    const s = setup({ trim: { ok: false, why: 'the optional dependency koffi could not be loaded' } });
    s.run(46_000);
    s.activity();
    s.run(46_000);
    expect(s.calls).toEqual(['gc', 'gc']);
    expect(s.loads()).toBe(1);
    expect(s.lines.map((l) => l.msg)).toEqual([
      'malloc_trim is unavailable; idle releases run the GC only',
      'idle: gave memory back (a full GC, then malloc_trim)',
      'idle: gave memory back (a full GC, then malloc_trim)',
    ]);
    expect(s.lines[0]!.fields).toEqual({ why: 'the optional dependency koffi could not be loaded' });
    expect(s.lines[1]!.fields).toMatchObject({ trimmed: 'unavailable' });
  });

  it('a trim that throws is not tried again; the GC goes on', () => {
    const s = setup({
      trim: {
        ok: true,
        trim: () => {
          throw new Error('boom');
        },
      },
    });
    s.run(46_000);
    s.activity();
    s.run(46_000);
    expect(s.calls).toEqual(['gc', 'gc']);
    expect(s.lines.map((l) => l.fields.trimmed)).toEqual([undefined, 'unavailable', 'unavailable']);
  });
});

describe('release-memory', () => {
  it('fullGc collects an unreachable object without --expose-gc, and exposes no global gc', async () => {
    expect(process.execArgv).not.toContain('--expose-gc');
    let ref: WeakRef<object> | undefined;
    (() => {
      ref = new WeakRef({ big: new Array(1000).fill(1) });
    })();
    // A WeakRef's target is kept until the job that made it ends.
    await new Promise((r) => setImmediate(r));
    fullGc();
    expect(ref!.deref()).toBeUndefined();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it('says why when the FFI module cannot be loaded', () => {
    const t = loadMallocTrim('astra-no-such-ffi-module');
    expect(t.ok).toBe(false);
    expect(!t.ok && t.why).toMatch(process.platform === 'linux' ? /optional dependency astra-no-such-ffi-module could not be loaded/ : /glibc/);
  });

  it.skipIf(process.platform !== 'linux')('loads malloc_trim through koffi on Linux with glibc, and calls it', () => {
    const glibc = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
    if (!glibc) return;
    const t = loadMallocTrim();
    expect(t.ok, !t.ok ? t.why : '').toBe(true);
    if (t.ok) expect(typeof t.trim()).toBe('boolean');
  });
});
