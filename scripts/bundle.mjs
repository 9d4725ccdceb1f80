// Bundles the `astra` command (dist/cli/program.js and what it imports) into dist/cli-bundle/ and
// the daemon (dist/daemon/main.js) into dist/daemon-bundle/, so that each loads a few files instead
// of ~50 modules (measured: `astra daemon status` about 13 ms faster; the daemon ready about 25 ms
// sooner and about 3 MB smaller), and `astra daemon ...` into one CommonJS file run with V8's code
// cache (see the end). Runs after tsc as part of `npm run build`. Each bundle sits one
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
  // msgpackr's optional native decoder is a prebuilt addon found at run time; undici is loaded only
  // when a proxy is set (engines/chat/model-proxy.ts), from node_modules, so the bundles stay small;
  // koffi (an optional dependency whose native part is a prebuilt package) is loaded by
  // daemon/release-memory.ts on first use, from node_modules, or not at all.
  external: ['msgpackr-extract', 'undici', 'koffi'],
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

// `astra daemon ...`: the program without the session and web commands, as one CommonJS file that
// cli/main.ts runs with V8's code cache (cli/code-cache.ts; Node 20 caches no ES module). What it
// leaves out stays an import() of the plain modules — the session and web commands are never
// reached from `daemon`, the foreground daemon is — renamed __astraImport, which code-cache.ts
// provides (vm.Script cannot import() on Node 20).
const LEFT_OUT = new Set(['./session-commands.js', './web-command.js', '../daemon/main.js']);
const daemonCommands = path.join(root, 'dist', 'cli-bundle', 'daemon-commands.cjs');
await build({
  ...common,
  format: 'cjs',
  entryPoints: [path.join(root, 'dist', 'cli', 'program.js')],
  outfile: daemonCommands,
  // CommonJS has require(); import.meta.url (the daemon entry, package.json) is the bundle's own URL.
  banner: { js: "const __astraMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__astraMetaUrl' },
  plugins: [
    {
      name: 'left-out',
      setup(b) {
        b.onResolve({ filter: /^\.\.?\// }, (args) => (LEFT_OUT.has(args.path) && args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined));
      },
    },
    {
      // node:child_process (commander requires it at load; the CLI only spawns for `daemon start`)
      // is loaded when first called: about 3 ms of every `astra daemon status` otherwise.
      name: 'lazy-child-process',
      setup(b) {
        b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
          args.namespace === 'lazy-builtin' ? undefined : { path: 'child_process', namespace: 'lazy-builtin' },
        );
        b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, () => ({
          contents:
            "const load = () => require('node:child_process');\n" +
            'export function spawn(...args) { return load().spawn(...args); }\n' +
            'export default { spawn };\n',
          loader: 'js',
        }));
      },
    },
  ],
});
let code = fs.readFileSync(daemonCommands, 'utf8');
const imports = code.match(/\bimport\(/g)?.length ?? 0;
code = code.replace(/\bimport\((?=")/g, '__astraImport(');
if (/\bimport\(/.test(code) || imports !== LEFT_OUT.size)
  throw new Error(`bundle.mjs: daemon-commands.cjs has ${imports} import() calls, expected exactly the ${LEFT_OUT.size} left out (${[...LEFT_OUT].join(', ')})`);
// The key of its code cache (cli/code-cache.ts): V8 checks a cache against the source's length only.
const { createHash } = await import('node:crypto');
code = `// astra-build ${createHash('sha1').update(code).digest('hex')}\n${code}`;
fs.writeFileSync(daemonCommands, code);
