// The package version, read once from package.json (found by walking up from this file, so it works
// from dist/ and from the sources under test).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'astra' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // keep walking up
    }
    dir = path.dirname(dir);
  }
  return '0.0.0';
}

export const ASTRA_VERSION = findVersion();
