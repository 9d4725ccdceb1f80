// No import cycle between the files of one folder (issue 27): a file that needs another file's part
// and is needed back means two concerns are tangled. Type-only imports count too: they tie the
// files' meanings together the same way. Folders are the product's rooms and the folders inside them.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sourceFiles } from './source-files.js';

const ROOMS = ['protocol', 'flow', 'ipc', 'discovery', 'durable', 'lease', 'tty', 'journal', 'pty', 'runtime', 'engines', 'daemon', 'client', 'cli', 'web'];


/** Every edge file → file inside the same folder (not into sub- or parent folders). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const room of ROOMS) {
    for (const file of sourceFiles(path.join(ROOT, room), /\.ts$/)) {
      const src = fs.readFileSync(file, 'utf8');
      const re = /\b(?:import|export)\s[^'";]*?from\s+['"](\.\/[^'"/]+)['"]|\bimport\(\s*['"](\.\/[^'"/]+)['"]\s*\)/g;
      const to: string[] = [];
      for (const m of src.matchAll(re)) {
        const target = path.resolve(path.dirname(file), (m[1] ?? m[2]).replace(/\.js$/, '.ts'));
        if (target !== file && fs.existsSync(target)) to.push(path.relative(ROOT, target));
      }
      g.set(path.relative(ROOT, file), to);
    }
  }
  return g;
}

/** The strongly connected components with more than one file (Tarjan). */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>(), low = new Map<string, number>(), on = new Set<string>(), stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++; stack.push(v); on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) { on.delete(w); comp.push(w); if (w === v) break; }
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe('imports inside a folder', () => {
  it('form no cycle', () => {
    expect(cycles(graph()).map((c) => c.join(' ⇄ '))).toEqual([]);
  });
});
