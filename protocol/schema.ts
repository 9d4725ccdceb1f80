// A small schema language: each schema checks a decoded value, describes itself as JSON Schema,
// and carries its TypeScript type. The method table is written in it, so the validator, the
// published schema and the static types can never disagree.

export type JsonSchema = { [key: string]: unknown };

export interface Schema<T> {
  /** Returns a description of the first problem found, or undefined when the value fits. */
  check(value: unknown, path: string): string | undefined;
  json(): JsonSchema;
  /** Type carrier only; never set at run time. */
  readonly __type?: T;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

export interface OptionalSchema<T> extends Schema<T | undefined> {
  readonly optional: true;
  readonly inner: Schema<T>;
}

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<P extends Shape> = {
  [K in keyof P]: P[K] extends OptionalSchema<unknown> ? K : never;
}[keyof P];
type RequiredKeys<P extends Shape> = Exclude<keyof P, OptionalKeys<P>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
export type ObjectType<P extends Shape> = Simplify<
  { [K in RequiredKeys<P>]: Infer<P[K]> } & {
    [K in OptionalKeys<P>]?: P[K] extends OptionalSchema<infer U> ? U : never;
  }
>;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Uint8Array) return 'binary';
  return typeof value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function str(opts: { minLength?: number; maxLength?: number; pattern?: RegExp } = {}): Schema<string> {
  return {
    check(v, path) {
      if (typeof v !== 'string') return `${path} must be a string, got ${describe(v)}`;
      if (opts.minLength !== undefined && v.length < opts.minLength)
        return `${path} must have at least ${opts.minLength} characters`;
      if (opts.maxLength !== undefined && v.length > opts.maxLength)
        return `${path} must have at most ${opts.maxLength} characters`;
      if (opts.pattern && !opts.pattern.test(v)) return `${path} does not match ${opts.pattern.source}`;
      return undefined;
    },
    json() {
      const s: JsonSchema = { type: 'string' };
      if (opts.minLength !== undefined) s.minLength = opts.minLength;
      if (opts.maxLength !== undefined) s.maxLength = opts.maxLength;
      if (opts.pattern) s.pattern = opts.pattern.source;
      return s;
    },
  };
}

/** An integer that fits in a JavaScript number exactly. */
export function int(opts: { min?: number; max?: number } = {}): Schema<number> {
  return {
    check(v, path) {
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) return `${path} must be an integer, got ${describe(v)}`;
      if (opts.min !== undefined && v < opts.min) return `${path} must be >= ${opts.min}`;
      if (opts.max !== undefined && v > opts.max) return `${path} must be <= ${opts.max}`;
      return undefined;
    },
    json() {
      const s: JsonSchema = { type: 'integer' };
      if (opts.min !== undefined) s.minimum = opts.min;
      if (opts.max !== undefined) s.maximum = opts.max;
      return s;
    },
  };
}

export function num(): Schema<number> {
  return {
    check: (v, path) => (typeof v === 'number' && Number.isFinite(v) ? undefined : `${path} must be a number, got ${describe(v)}`),
    json: () => ({ type: 'number' }),
  };
}

export function bool(): Schema<boolean> {
  return {
    check: (v, path) => (typeof v === 'boolean' ? undefined : `${path} must be a boolean, got ${describe(v)}`),
    json: () => ({ type: 'boolean' }),
  };
}

/** Raw bytes: msgpack `bin` on the wire, a Uint8Array (Buffer in Node) in memory. */
export function bytes(opts: { maxBytes?: number } = {}): Schema<Uint8Array> {
  const max = opts.maxBytes;
  return {
    check: (v, path) => {
      if (!(v instanceof Uint8Array)) return `${path} must be binary, got ${describe(v)}`;
      if (max !== undefined && v.byteLength > max) return `${path} has ${v.byteLength} bytes; at most ${max} go in one request, send the rest in another`;
      return undefined;
    },
    json: () =>
      max === undefined
        ? { type: 'string', contentEncoding: 'msgpack-bin', description: 'msgpack bin (raw bytes)' }
        : { type: 'string', contentEncoding: 'msgpack-bin', description: `msgpack bin (raw bytes), at most ${max} bytes`, 'x-maxBytes': max },
  };
}

export function literal<const T extends string | number | boolean>(value: T): Schema<T> {
  return {
    check: (v, path) => (v === value ? undefined : `${path} must be ${JSON.stringify(value)}`),
    json: () => ({ const: value }),
  };
}

export function oneOf<const T extends readonly string[]>(values: T): Schema<T[number]> {
  return {
    check: (v, path) =>
      typeof v === 'string' && values.includes(v) ? undefined : `${path} must be one of ${values.join(', ')}`,
    json: () => ({ type: 'string', enum: [...values] }),
  };
}

export function nullable<T>(inner: Schema<T>): Schema<T | null> {
  return {
    check: (v, path) => (v === null ? undefined : inner.check(v, path)),
    json: () => ({ anyOf: [inner.json(), { type: 'null' }] }),
  };
}

/** A field that may be absent (or nil on the wire). */
export function opt<T>(inner: Schema<T>): OptionalSchema<T> {
  return {
    optional: true,
    inner,
    check: (v, path) => (v === undefined || v === null ? undefined : inner.check(v, path)),
    // Absent and nil mean the same for an optional field.
    json: () => ({ anyOf: [inner.json(), { type: 'null' }] }),
  };
}

export function arr<T>(item: Schema<T>, opts: { maxItems?: number } = {}): Schema<T[]> {
  return {
    check(v, path) {
      if (!Array.isArray(v)) return `${path} must be an array, got ${describe(v)}`;
      if (opts.maxItems !== undefined && v.length > opts.maxItems)
        return `${path} must have at most ${opts.maxItems} items`;
      for (let i = 0; i < v.length; i++) {
        const problem = item.check(v[i], `${path}[${i}]`);
        if (problem) return problem;
      }
      return undefined;
    },
    json() {
      const s: JsonSchema = { type: 'array', items: item.json() };
      if (opts.maxItems !== undefined) s.maxItems = opts.maxItems;
      return s;
    },
  };
}

/** An object with known fields. Unknown fields from a newer peer are allowed and ignored. */
export function obj<P extends Shape>(shape: P, description?: string): Schema<ObjectType<P>> & { shape: P } {
  const keys = Object.keys(shape);
  return {
    shape,
    check(v, path) {
      if (!isPlainObject(v)) return `${path} must be an object, got ${describe(v)}`;
      for (const key of keys) {
        const problem = shape[key]!.check(v[key], `${path}.${key}`);
        if (problem) {
          if (v[key] === undefined && !(shape[key] as Partial<OptionalSchema<unknown>>).optional)
            return `${path}.${key} is required`;
          return problem;
        }
      }
      return undefined;
    },
    json() {
      const properties: JsonSchema = {};
      const required: string[] = [];
      for (const key of keys) {
        const field = shape[key]!;
        properties[key] = field.json();
        if (!(field as Partial<OptionalSchema<unknown>>).optional) required.push(key);
      }
      const s: JsonSchema = { type: 'object', properties, additionalProperties: true };
      if (required.length) s.required = required;
      if (description) s.description = description;
      return s;
    },
  };
}

/** A map from string keys to values of one schema. */
export function record<T>(value: Schema<T>): Schema<Record<string, T>> {
  return {
    check(v, path) {
      if (!isPlainObject(v)) return `${path} must be an object, got ${describe(v)}`;
      for (const [k, item] of Object.entries(v)) {
        const problem = value.check(item, `${path}.${k}`);
        if (problem) return problem;
      }
      return undefined;
    },
    json: () => ({ type: 'object', additionalProperties: value.json() }),
  };
}

/** Any plain value (already checked for safety by checkPlainValue). */
export function any(description = 'any plain MessagePack value'): Schema<unknown> {
  return { check: () => undefined, json: () => ({ description }) };
}

/** Keys that must never appear anywhere in a decoded message (prototype pollution). */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', '__proto_', 'constructor', 'prototype']);

export const MAX_NESTING = 64;

/**
 * Walks a decoded value and reports the first thing that is not plain data: a forbidden key,
 * a msgpack extension decoded into a class instance (RegExp, Set, Error, Date, Map...), a bigint
 * outside the safe range, or nesting deeper than MAX_NESTING.
 */
export function checkPlainValue(value: unknown, path = '$', depth = 0): { kind: 'forbidden_key' | 'invalid'; detail: string } | undefined {
  // Every frame passes here: answer the common case without building path strings.
  if (depth === 0 && isPlainValue(value, 0)) return undefined;
  return describePlainValue(value, path, depth);
}

function isPlainValue(value: unknown, depth: number): boolean {
  if (depth > MAX_NESTING) return false;
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return true;
    case 'number':
      return !Number.isNaN(value) && (!Number.isInteger(value) || Number.isSafeInteger(value));
    case 'object': {
      if (value === null || value instanceof Uint8Array) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!isPlainValue(value[i], depth + 1)) return false;
        return true;
      }
      if (!isPlainObject(value)) return false;
      for (const key in value) {
        if (FORBIDDEN_KEYS.has(key) || !isPlainValue(value[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function describePlainValue(value: unknown, path: string, depth: number): { kind: 'forbidden_key' | 'invalid'; detail: string } | undefined {
  if (depth > MAX_NESTING) return { kind: 'invalid', detail: `${path} nests deeper than ${MAX_NESTING} levels` };
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'number':
      if (Number.isNaN(value)) return { kind: 'invalid', detail: `${path} is NaN` };
      // Integers are exact only up to ±(2^53-1); anything past that would silently lose digits.
      if (Number.isInteger(value) && !Number.isSafeInteger(value))
        return { kind: 'invalid', detail: `${path} is an integer outside the safe range (±2^53)` };
      return undefined;
    case 'bigint':
      return { kind: 'invalid', detail: `${path} is an integer outside the safe range (±2^53)` };
    case 'object': {
      if (value === null || value instanceof Uint8Array) return undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const p = describePlainValue(value[i], `${path}[${i}]`, depth + 1);
          if (p) return p;
        }
        return undefined;
      }
      if (!isPlainObject(value))
        return { kind: 'invalid', detail: `${path} is an unsupported MessagePack type (extension types are not part of the protocol)` };
      for (const key of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(key)) return { kind: 'forbidden_key', detail: `${path} has the forbidden key "${key}"` };
        const p = describePlainValue(value[key], `${path}.${key}`, depth + 1);
        if (p) return p;
      }
      return undefined;
    }
    default:
      return { kind: 'invalid', detail: `${path} has an unsupported type ${typeof value}` };
  }
}
