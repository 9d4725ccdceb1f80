// The dependency rule drawn in docs/architecture.md, checked against the real imports of the product's
// rooms both ways: every import between rooms is drawn, every drawn arrow is used, and the list's order
// is the rule (a room imports only rooms below it). cli/'s imports of daemon/ and web/ must stay dynamic.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sourceFiles } from './source-files.js';


interface Drawn { order: string[]; arrows: Map<string, Set<string>> }

function readDrawnRule(): Drawn {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The dependency rule'));
  const block = /```\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/architecture.md: no fenced block under "## The dependency rule"');
  const order: string[] = [];
  const arrows = new Map<string, Set<string>>();
  for (const line of block[1].split('\n')) {
    if (line.trim() === '') continue;
    const m = /^(\w+)\/\s+──►\s+(.*)$/.exec(line);
    if (!m) throw new Error(`docs/architecture.md: a rule line must read "room/ ──► a/, b/" or "(nothing)": ${line}`);
    order.push(m[1]);
    arrows.set(m[1], new Set([...m[2].matchAll(/(\w+)\//g)].map((x) => x[1])));
  }
  return { order, arrows };
}

interface Import { from: string; file: string; to: string; dynamic: boolean }


function importsOf(rooms: string[]): Import[] {
  const found: Import[] = [];
  for (const room of rooms) {
    for (const file of sourceFiles(path.join(ROOT, room))) {
      const src = fs.readFileSync(file, 'utf8');
      const re = /\b(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|\bimport\s+['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
      for (const m of src.matchAll(re)) {
        const spec = m[1] ?? m[2] ?? m[3];
        const target = path.relative(ROOT, path.resolve(path.dirname(file), spec)).split(path.sep)[0];
        if (target !== room) found.push({ from: room, file: path.relative(ROOT, file), to: target, dynamic: m[3] !== undefined });
      }
    }
  }
  return found;
}

describe('the dependency rule in docs/architecture.md', () => {
  const drawn = readDrawnRule();
  const imports = importsOf(drawn.order);

  it('names every top-level folder that holds product code', () => {
    const notProduct = new Set(['test', 'bench', 'scripts', 'examples', 'clients', 'docs', 'schema', 'node_modules', 'dist']);
    const rooms = fs.readdirSync(ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !notProduct.has(e.name))
      .filter((e) => sourceFiles(path.join(ROOT, e.name)).some((f) => f.endsWith('.ts')))
      .map((e) => e.name);
    expect(rooms.filter((r) => !drawn.order.includes(r))).toEqual([]);
  });

  it('draws every import between rooms', () => {
    const undrawn = imports.filter((i) => !drawn.arrows.get(i.from)?.has(i.to)).map((i) => `${i.file} → ${i.to}/`);
    expect(undrawn).toEqual([]);
  });

  it('draws no arrow that no import uses', () => {
    const unused: string[] = [];
    for (const [from, tos] of drawn.arrows) for (const to of tos) if (!imports.some((i) => i.from === from && i.to === to)) unused.push(`${from}/ ──► ${to}/`);
    expect(unused).toEqual([]);
  });

  it('points every arrow down the list, so there is no cycle between rooms', () => {
    const up: string[] = [];
    for (const [from, tos] of drawn.arrows) for (const to of tos) if (drawn.order.indexOf(to) <= drawn.order.indexOf(from)) up.push(`${from}/ ──► ${to}/`);
    expect(up).toEqual([]);
  });

  it('keeps cli/ loading daemon/ and web/ only on demand (a dynamic import)', () => {
    const eager = imports.filter((i) => i.from === 'cli' && (i.to === 'daemon' || i.to === 'web') && !i.dynamic).map((i) => `${i.file} → ${i.to}/`);
    expect(eager).toEqual([]);
  });
});
