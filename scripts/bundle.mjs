// Bundles the `astra` command (dist/cli/program.js and what it imports) into dist/cli-bundle/ and
// the daemon (dist/daemon/main.js) into dist/daemon-bundle/, so that each loads a few files instead
// of ~50 modules (measured: `astra daemon status` about 13 ms faster; the daemon ready about 25 ms
// sooner and about 3 MB smaller). Runs after tsc as part of `npm run build`. Each bundle sits one
// level below dist/, like the modules it replaces, so paths computed from import.meta.url (the
// daemon entry, package.json) resolve the same way.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // msgpackr's optional native decoder is a prebuilt addon found at run time.
  external: ['msgpackr-extract'],
  // Bundled CommonJS dependencies call require() for Node built-ins.
  banner: { js: "import { createRequire as __astraCreateRequire } from 'node:module'; const require = __astraCreateRequire(import.meta.url);" },
  logLevel: 'warning',
};

async function bundle(entry, name, extra) {
  const outdir = path.join(root, 'dist', name);
  // Chunk names carry content hashes: start clean so old chunks do not pile up.
  fs.rmSync(outdir, { recursive: true, force: true });
  await build({ ...common, ...extra, entryPoints: entry, outdir });
}

// Session commands and the foreground daemon stay separate chunks, loaded on use.
await bundle({ program: path.join(root, 'dist', 'cli', 'program.js') }, 'cli-bundle', { splitting: true });
await bundle({ main: path.join(root, 'dist', 'daemon', 'main.js') }, 'daemon-bundle', {});
