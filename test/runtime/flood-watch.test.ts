// The flood detector of a screen subscriber's feed, on an injected clock: exact on any machine.
import { describe, expect, it } from 'vitest';
import { FLOOD_BYTES, FLOOD_WINDOW_MS, FloodWatch } from '../../runtime/feed/flood-watch.js';

describe('the flood detector', () => {
  it('floods past its bytes within one window, never at them', () => {
    let now = 1_000;
    const w = new FloodWatch(() => now);
    expect(w.add(FLOOD_BYTES)).toBe(false);
    now += FLOOD_WINDOW_MS;
    expect(w.add(1)).toBe(true);
  });

  it('starts a new window once the last one is over', () => {
    let now = 1_000;
    const w = new FloodWatch(() => now);
    expect(w.add(FLOOD_BYTES)).toBe(false);
    now += FLOOD_WINDOW_MS + 1;
    expect(w.add(1)).toBe(false);
  });

  it('counts afresh after restart, and after reset opens a window at the next output', () => {
    let now = 1_000;
    const w = new FloodWatch(() => now);
    expect(w.add(FLOOD_BYTES + 1)).toBe(true);
    w.restart();
    expect(w.add(FLOOD_BYTES)).toBe(false);
    w.reset();
    now += 1;
    expect(w.add(1)).toBe(false);
    expect(w.add(FLOOD_BYTES)).toBe(true);
  });
});
