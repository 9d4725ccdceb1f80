// A named bound of flow control: its value, its unit and why it is that value. Each process has one
// table of them (daemon-bounds.ts, client-bounds.ts, gateway-bounds.ts; wire-bounds.ts for the
// socket writer both ends of a daemon connection share); the code reads its bounds from there.

export type BoundUnit = 'bytes' | 'chars' | 'ms' | 'events';

export interface Bound {
  readonly value: number;
  readonly unit: BoundUnit;
  /** Why this value: what happens at it, and what a smaller or larger one would cost. */
  readonly reason: string;
}

/** A bound's table is wrong: a value that is not a positive finite number, or no reason given. */
export class BoundError extends TypeError {
  readonly code = 'bad_bound';
  constructor(message: string) {
    super(message);
    this.name = 'BoundError';
  }
}

/** Checks a table of bounds once, as it is defined, and freezes it. */
export function boundTable<T extends Record<string, Bound>>(name: string, table: T): Readonly<T> {
  for (const [key, b] of Object.entries(table)) {
    if (!Number.isFinite(b.value) || b.value <= 0) throw new BoundError(`${name}.${key}: a bound must be a positive finite number, not ${b.value}`);
    if (b.reason.trim() === '') throw new BoundError(`${name}.${key}: a bound needs its reason`);
    Object.freeze(b);
  }
  return Object.freeze(table);
}
