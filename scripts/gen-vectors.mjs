#!/usr/bin/env node
// Writes test/vectors/<name>.bin (one whole frame) and <name>.json (its meaning) from the compiled
// protocol and ipc modules (run `npm run build` first). Removes vectors that are no longer built.
// test/contract/vectors.test.ts fails when the checked-in files differ from what this writes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildVectors, renderVector } from './vectors-lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let protocol, ipc;
try {
  protocol = await import('../dist/protocol/index.js');
  ipc = await import('../dist/ipc/index.js');
} catch (e) {
  process.stderr.write(`gen-vectors: cannot load dist/ (${e.message}); run \`npm run build\` first\n`);
  process.exit(1);
}
const dir = path.join(root, 'test', 'vectors');
fs.mkdirSync(dir, { recursive: true });
const keep = new Set();
for (const vector of buildVectors(protocol, ipc)) {
  const { bin, json } = renderVector(protocol, ipc, vector);
  fs.writeFileSync(path.join(dir, `${vector.name}.bin`), bin);
  fs.writeFileSync(path.join(dir, `${vector.name}.json`), json);
  keep.add(`${vector.name}.bin`).add(`${vector.name}.json`);
}
for (const f of fs.readdirSync(dir)) if (/\.(bin|json)$/.test(f) && !keep.has(f)) fs.rmSync(path.join(dir, f));
process.stdout.write(`wrote ${keep.size / 2} vectors to ${path.relative(root, dir)}\n`);
