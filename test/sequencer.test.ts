// The suite's file order (test/sequencer.ts): every file it names exists, once.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONGEST_FIRST } from './sequencer.js';

const ROOT = path.resolve(__dirname, '..');

describe('the longest-first file order', () => {
  it('names only test files that exist, each once', () => {
    for (const file of LONGEST_FIRST) {
      expect(file, file).toMatch(/^test\/.+\.test\.ts$/);
      expect(fs.existsSync(path.join(ROOT, file)), `${file} is listed in test/sequencer.ts but does not exist`).toBe(true);
    }
    expect(new Set(LONGEST_FIRST).size).toBe(LONGEST_FIRST.length);
  });
});
