// cli/code-cache.ts: `astra daemon ...` runs one CommonJS bundle through vm.Script with V8's code
// cache beside it. The cache is made after a run, taken by the next, made anew when the source
// changed (even to one of the same length) or the file is not a cache V8 made, and the bundle's left-out imports resolve beside it.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWithCodeCache } from '../../cli/code-cache.js';
import { tempDir } from '../helpers/processes.js';

const SOURCE = `exports.twice = (n) => n * 2; exports.file = __filename; exports.pathSep = require('node:path').sep;
exports.sibling = () => __astraImport('./sibling.mjs');`;

describe('the code cache of the daemon-commands bundle', () => {
  it('is written after the first run, taken by the next, and made anew when the source changes', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'bundle.cjs');
    fs.writeFileSync(file, SOURCE);
    fs.writeFileSync(path.join(dir, 'sibling.mjs'), 'export const hello = "from beside the bundle";');

    const first = loadWithCodeCache(file);
    expect(first.cacheAccepted).toBe(false);
    expect((first.exports.twice as (n: number) => number)(21)).toBe(42);
    expect(first.exports.file).toBe(file);
    expect(first.exports.pathSep).toBe('/');
    expect(await (first.exports.sibling as () => Promise<{ hello: string }>)()).toMatchObject({ hello: 'from beside the bundle' });
    expect(fs.existsSync(`${file}.cache`)).toBe(false);
    first.saveCache();
    expect(fs.statSync(`${file}.cache`).size).toBeGreaterThan(0);

    const second = loadWithCodeCache(file);
    expect(second.cacheAccepted).toBe(true);
    expect((second.exports.twice as (n: number) => number)(2)).toBe(4);
    const cached = fs.readFileSync(`${file}.cache`);
    second.saveCache(); // accepted: nothing to write
    expect(fs.readFileSync(`${file}.cache`).equals(cached)).toBe(true);

    // Same length, other code: V8 alone would take the old cache (it checks the length).
    fs.writeFileSync(file, SOURCE.replace('n * 2', 'n * 3'));
    const changed = loadWithCodeCache(file);
    expect(changed.cacheAccepted).toBe(false);
    expect((changed.exports.twice as (n: number) => number)(2)).toBe(6);
    changed.saveCache();
    const again = loadWithCodeCache(file);
    expect(again.cacheAccepted).toBe(true);
    expect((again.exports.twice as (n: number) => number)(2)).toBe(6);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('takes a file that is not a V8 cache as no cache, and replaces it', () => {
    const dir = tempDir();
    const file = path.join(dir, 'bundle.cjs');
    fs.writeFileSync(file, SOURCE);
    fs.writeFileSync(`${file}.cache`, 'not a code cache at all');
    const loaded = loadWithCodeCache(file);
    expect(loaded.cacheAccepted).toBe(false);
    expect((loaded.exports.twice as (n: number) => number)(5)).toBe(10);
    loaded.saveCache();
    expect(loadWithCodeCache(file).cacheAccepted).toBe(true);
  });

  it('throws ENOENT for a bundle the build did not make (cli/main.ts then loads the ES modules)', () => {
    expect(() => loadWithCodeCache(path.join(tempDir(), 'missing.cjs'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});
