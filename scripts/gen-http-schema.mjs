#!/usr/bin/env node
// Writes schema/astra-http-v1.json from the compiled HTTP contract (run `npm run build` first).
// test/web/http-contract.test.ts fails when the checked-in file differs from what this writes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let contract;
try {
  contract = await import('../dist/web/gateway/contract.js');
} catch (e) {
  process.stderr.write(`gen-http-schema: cannot load dist/web/gateway/contract.js (${e.message}); run \`npm run build\` first\n`);
  process.exit(1);
}
const out = path.join(root, 'schema', 'astra-http-v1.json');
fs.writeFileSync(out, contract.renderHttpSchema());
process.stdout.write(`wrote ${path.relative(root, out)}\n`);
