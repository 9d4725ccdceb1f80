import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protocol from '../../protocol/index.js';
import { buildProtocolSchema, renderProtocolSchema } from '../../scripts/protocol-schema.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCHEMA_FILE = path.join(ROOT, 'schema', 'astra-protocol-v1.json');
const FIX = 'run `npm run build && node scripts/gen-schema.mjs` and commit schema/astra-protocol-v1.json';

type SchemaDoc = {
  methods: Record<string, { params: { $ref: string }; result: { $ref: string } }>;
  serverRequests: Record<string, unknown>;
  notifications: { clientToDaemon: Record<string, unknown>; daemonToClient: Record<string, unknown> };
  events: Record<string, unknown>;
  errors: Record<string, { code: number }>;
  $defs: Record<string, unknown>;
};

describe('the published JSON Schema', () => {
  it('is exactly what the generator produces from protocol/', () => {
    const expected: string = renderProtocolSchema(protocol);
    const actual = fs.existsSync(SCHEMA_FILE) ? fs.readFileSync(SCHEMA_FILE, 'utf8') : '';
    if (actual !== expected) {
      // Name the first differing line so the failure says what drifted, not just that something did.
      const a = actual.split('\n');
      const e = expected.split('\n');
      const i = e.findIndex((line, n) => line !== a[n]);
      expect.fail(
        `schema/astra-protocol-v1.json is out of date with protocol/ (first difference at line ${i + 1}: ` +
          `checked in ${JSON.stringify(a[i])}, generated ${JSON.stringify(e[i])}); ${FIX}`,
      );
    }
  });

  it('names every method, server request, notification, event type and error of the tables', () => {
    const doc = buildProtocolSchema(protocol) as SchemaDoc;
    expect(Object.keys(doc.methods)).toEqual(protocol.METHOD_NAMES);
    expect(Object.keys(doc.serverRequests)).toEqual(Object.keys(protocol.SERVER_REQUESTS));
    expect(Object.keys(doc.notifications.clientToDaemon)).toEqual(Object.keys(protocol.CLIENT_NOTIFICATIONS));
    expect(Object.keys(doc.notifications.daemonToClient)).toEqual(Object.keys(protocol.SERVER_NOTIFICATIONS));
    expect(Object.keys(doc.events)).toEqual(protocol.EVENT_TYPES);
    expect(Object.keys(doc.errors)).toEqual(Object.keys(protocol.ERRORS));
    for (const [reason, e] of Object.entries(doc.errors)) expect(e.code, reason).toBe(protocol.ERRORS[reason as protocol.ErrorReason].code);
  });

  it('resolves every $ref inside the document', () => {
    const doc = buildProtocolSchema(protocol) as SchemaDoc;
    const refs: string[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string') refs.push(x);
          else walk(x);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(40);
    for (const r of refs) {
      expect(r.startsWith('#/$defs/'), r).toBe(true);
      expect(doc.$defs, r).toHaveProperty([r.slice('#/$defs/'.length)]);
    }
  });

  it('describes timestamps as integers and command output as bytes, never as floats or text', () => {
    const doc = buildProtocolSchema(protocol) as { $defs: Record<string, { properties: Record<string, Record<string, unknown>> }> };
    expect(doc.$defs['Event']!.properties['ts']).toEqual({ type: 'integer', minimum: 0 });
    expect(doc.$defs['Session']!.properties['createdAt']!.type).toBe('integer');
    expect(doc.$defs['event.command.output.data']!.properties['data']!.contentEncoding).toBe('msgpack-bin');
  });
});
