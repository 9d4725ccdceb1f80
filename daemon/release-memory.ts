// The two ways an idle daemon gives memory back (docs/operations.md, "What the daemon does on its
// own"; bench/soak.md measures them): one full garbage collection, and glibc's malloc_trim(0).
//
// A full GC without --expose-gc on the command line: the flag set at run time exposes `gc` to
// contexts created after it, so one new context hands the function over, and the flag is turned off
// again. It works the same in the bundled daemon, the plain modules and `astra daemon start
// --foreground` (the CLI's own process, which has none of the daemon's node flags).
//
// malloc_trim(0) has no Node binding: it is called through koffi, an FFI library whose binary
// arrives as a prebuilt optional package. koffi is an optional dependency, loaded on first use;
// where it or glibc is missing (another libc, another OS, an install without optional packages)
// `loadMallocTrim` says why and the daemon goes on without it.
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import vm from 'node:vm';

let gcFn: (() => void) | undefined;

/** Runs one full garbage collection of the main thread's heap. */
export function fullGc(): void {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    try {
      gcFn = vm.runInNewContext('gc') as () => void;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  gcFn();
}

export type MallocTrim = { ok: true; trim: () => boolean } | { ok: false; why: string };

/** The name koffi is required by; a parameter only so a test can name a module that is not there. */
export const FFI_MODULE = 'koffi';

interface Koffi {
  load(path: string): { func(signature: string): (pad: number) => number };
}

/**
 * glibc's malloc_trim(0), or why it cannot be had. `trim()` gives the free memory of every malloc
 * arena back to the system and says whether any was given (malloc_trim's result).
 */
export function loadMallocTrim(moduleName: string = FFI_MODULE): MallocTrim {
  if (process.platform !== 'linux') return { ok: false, why: `malloc_trim is glibc's; this is ${process.platform}` };
  let koffi: Koffi;
  try {
    koffi = createRequire(import.meta.url)(moduleName) as Koffi;
  } catch (e) {
    return { ok: false, why: `the optional dependency ${moduleName} could not be loaded (${firstLine(e)})` };
  }
  try {
    const fn = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)');
    return { ok: true, trim: () => fn(0) === 1 };
  } catch (e) {
    return { ok: false, why: `glibc's malloc_trim was not found (${firstLine(e)}); not a glibc system` };
  }
}

function firstLine(e: unknown): string {
  return String(e instanceof Error ? e.message : e).split('\n')[0]!;
}
