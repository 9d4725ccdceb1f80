// The product's source files, for the architecture tests (the import rule, cycles, sizes, the engine contract).
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

/** Every source file below `dir` (none when it does not exist), declaration files left out. */
export function sourceFiles(dir: string, pattern = /\.(ts|mts|mjs|cjs|js)$/): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p, pattern));
    else if (pattern.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}
