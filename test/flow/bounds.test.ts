import { describe, expect, it } from 'vitest';
import { BoundError, boundTable, CLIENT_BOUNDS, DAEMON_BOUNDS, GATEWAY_BOUNDS, WIRE_BOUNDS, type Bound } from '../../flow/index.js';

const TABLES: Record<string, Record<string, Bound>> = { WIRE_BOUNDS, DAEMON_BOUNDS, CLIENT_BOUNDS, GATEWAY_BOUNDS };

describe('the tables of bounds', () => {
  it('give every bound a positive value, a unit and a reason', () => {
    for (const [name, table] of Object.entries(TABLES)) {
      for (const [key, b] of Object.entries(table)) {
        expect(b.value, `${name}.${key}`).toBeGreaterThan(0);
        expect(['bytes', 'chars', 'ms', 'events'], `${name}.${key}`).toContain(b.unit);
        expect(b.reason.length, `${name}.${key}`).toBeGreaterThan(20);
      }
    }
  });

  it('name each bound by its unit when it is a time', () => {
    for (const table of Object.values(TABLES))
      for (const [key, b] of Object.entries(table)) expect(key.endsWith('Ms'), key).toBe(b.unit === 'ms');
  });

  it('are frozen', () => {
    expect(Object.isFrozen(DAEMON_BOUNDS)).toBe(true);
    expect(Object.isFrozen(DAEMON_BOUNDS.hubHighMark)).toBe(true);
  });

  it('refuse a bound without a value or a reason', () => {
    expect(() => boundTable('T', { x: { value: 0, unit: 'bytes', reason: 'because' } })).toThrow(BoundError);
    expect(() => boundTable('T', { x: { value: Number.NaN, unit: 'bytes', reason: 'because' } })).toThrow(BoundError);
    expect(() => boundTable('T', { x: { value: 1, unit: 'bytes', reason: ' ' } })).toThrow(BoundError);
  });
});
