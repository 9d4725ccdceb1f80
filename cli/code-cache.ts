// Loads a CommonJS bundle (scripts/bundle.mjs: dist/cli-bundle/daemon-commands.cjs) through
// vm.Script with V8's code cache kept beside it, so a short command does not compile the same
// JavaScript on every run. Node 20 has no compile cache for ES modules (module.enableCompileCache
// is Node 22), and vm.Script's cachedData is the one it has: `astra daemon status` spent about 15 ms
// of its CPU compiling. The cache sits next to the bundle, so it is exactly as trusted as the code
// (whoever can write it can write the bundle); where that directory is not writable there is none.
// V8 refuses a cache made by another V8 (cachedDataRejected), but knows the source only by its
// length: the cache file starts with a key — the build's hash of the bundle (its first line,
// `// astra-build <sha1>`), its size and mtime (a hand edit) — and a cache of another key is not used.
// Either way it is made anew. (Hashing the source here would load node:crypto, 3 ms.)
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

export interface CachedModule {
  exports: Record<string, unknown>;
  /** Whether V8 took the cache that was there (false: none, or made from other source or by another V8). */
  readonly cacheAccepted: boolean;
  /** Writes the code cache — after the command ran, so the functions it used are in it — when there was none or it was refused. */
  saveCache(): void;
}

/** Loads `file`; throws ENOENT when it does not exist (the build made no bundle). */
export function loadWithCodeCache(file: string): CachedModule {
  const source = fs.readFileSync(file, 'utf8');
  const st = fs.statSync(file);
  const cacheFile = `${file}.cache`;
  const build = /^\/\/ astra-build ([0-9a-f]+)\n/.exec(source)?.[1] ?? '';
  const key = Buffer.from(`astra-code-cache ${build} ${st.size} ${st.mtimeMs}\n`);
  let cachedData: Buffer | undefined;
  try {
    const stored = fs.readFileSync(cacheFile);
    if (stored.length > key.length && stored.subarray(0, key.length).equals(key)) cachedData = stored.subarray(key.length);
  } catch {
    // none yet
  }
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, __astraImport) {${source}\n})`, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
  });
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  const module = { exports: {} as Record<string, unknown> };
  const base = pathToFileURL(file);
  // The bundle's import() of what it leaves out (scripts/bundle.mjs renames them): vm.Script cannot
  // import() on Node 20 without --experimental-vm-modules, this module can.
  const astraImport = (specifier: string): Promise<unknown> => import(new URL(specifier, base).href);
  wrapper(module.exports, createRequire(file), module, file, path.dirname(file), astraImport);
  return {
    exports: module.exports,
    cacheAccepted: cachedData !== undefined && !script.cachedDataRejected,
    saveCache() {
      if (cachedData && !script.cachedDataRejected) return;
      try {
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, Buffer.concat([key, script.createCachedData()]));
        fs.renameSync(tmp, cacheFile);
      } catch {
        // A read-only install: no cache, the command only starts slower.
      }
    },
  };
}
