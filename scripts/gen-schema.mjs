#!/usr/bin/env node
// Writes schema/astra-protocol-v1.json from the compiled protocol tables (run `npm run build` first).
// test/contract/schema-drift.test.ts fails when the checked-in file differs from what this writes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderProtocolSchema } from './protocol-schema.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let protocol;
try {
  protocol = await import('../dist/protocol/index.js');
} catch (e) {
  process.stderr.write(`gen-schema: cannot load dist/protocol (${e.message}); run \`npm run build\` first\n`);
  process.exit(1);
}
const out = path.join(root, 'schema', 'astra-protocol-v1.json');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, renderProtocolSchema(protocol));
process.stdout.write(`wrote ${path.relative(root, out)}\n`);
