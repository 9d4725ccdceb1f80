// A clone must be self-contained: no tracked file may lean on documents that live outside this
// repository (the original design notes); what is still true of them is in docs/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..', '..');
// Built from parts so that this file does not name them itself.
const OUTSIDE = [['DESIGN', 'md'], ['NOTES', 'md'], ['STYLE', 'md']].map(([a, b]) => `${a}.${b}`).concat(['..' + '/shared/']);

it('no tracked file refers to the design documents outside the repository', () => {
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter((f) => /\.(ts|mts|mjs|cjs|js|md|json|sh)$/.test(f) || f === '.ci/run');
  const hits: string[] = [];
  for (const f of files) {
    const p = path.join(ROOT, f);
    if (!fs.existsSync(p)) continue;
    const text = fs.readFileSync(p, 'utf8');
    for (const word of OUTSIDE) if (text.includes(word)) hits.push(`${f}: ${word}`);
  }
  expect(hits).toEqual([]);
});
