// Bundles the browser page (web/page/app.ts and @xterm/xterm) into dist/web/page/, next to its
// index.html and one stylesheet, so `astra web` serves everything itself (no CDN; CSP 'self').
// Runs after tsc and scripts/bundle.mjs as part of `npm run build`.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'web', 'page');
const out = path.join(root, 'dist', 'web', 'page');
const require = createRequire(import.meta.url);

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(src, 'app.ts')],
  outfile: path.join(out, 'app.js'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome110', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
});
const xtermCss = fs.readFileSync(require.resolve('@xterm/xterm/css/xterm.css'), 'utf8');
fs.writeFileSync(path.join(out, 'app.css'), `${xtermCss}\n${fs.readFileSync(path.join(src, 'style.css'), 'utf8')}`);
fs.copyFileSync(path.join(src, 'index.html'), path.join(out, 'index.html'));
