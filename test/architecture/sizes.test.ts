// Sizes that keep the code readable (issue 27): no product file over ~400 lines, no folder's own
// files over ~3.5k lines (a folder inside a room counts on its own).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..', '..');
const ROOMS = ['protocol', 'ipc', 'discovery', 'durable', 'lease', 'flow', 'tty', 'journal', 'pty', 'runtime', 'engines', 'daemon', 'client', 'cli', 'web'];
const MAX_FILE_LINES = 410;
const MAX_FOLDER_LINES = 3_500;

function folders(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return [dir, ...fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).flatMap((e) => folders(path.join(dir, e.name)))];
}
const lines = (file: string): number => fs.readFileSync(file, 'utf8').split('\n').length - 1;
const tsFiles = (dir: string): string[] => fs.readdirSync(dir).filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts')).map((n) => path.join(dir, n));

describe('sizes', () => {
  const all = ROOMS.flatMap((r) => folders(path.join(ROOT, r)));
  it(`no product file is over ${MAX_FILE_LINES} lines`, () => {
    const big = all.flatMap(tsFiles).map((f) => `${path.relative(ROOT, f)}: ${lines(f)}`).filter((s) => Number(s.split(': ')[1]) > MAX_FILE_LINES);
    expect(big).toEqual([]);
  });
  it(`no folder's files add up to over ${MAX_FOLDER_LINES} lines`, () => {
    const big = all.map((d) => `${path.relative(ROOT, d)}/: ${tsFiles(d).reduce((n, f) => n + lines(f), 0)}`).filter((s) => Number(s.split(': ')[1]) > MAX_FOLDER_LINES);
    expect(big).toEqual([]);
  });
});
