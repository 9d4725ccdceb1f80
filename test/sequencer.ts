// The order in which `vitest run` hands the test files to its workers: the longest first, so that no
// long file starts last and runs alone while the other worker has nothing left to do.
//
// Vitest's own order (BaseSequencer) puts the longest first only when its results cache
// (node_modules/.vite/vitest) holds a duration for every file, which a fresh `npm ci` does not, nor a
// cache that a run of a few files has overwritten; without it, files go by size. The files below take
// the longest on the 2-core test machine (20-40 s each); they start first, in this order, and the
// rest follow in vitest's order. test/sequencer.test.ts checks that every name here is a test file.
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Test files, relative to the repository root, longest first. */
export const LONGEST_FIRST: readonly string[] = [
  'test/cli/attach.test.ts',
  'test/daemon/leases.test.ts',
  'test/daemon/daemon-cli.test.ts',
  'test/web/page.browser.test.ts',
  'test/cli/session-commands.test.ts',
  'test/cli/manage-commands.test.ts',
  'test/web/tool-cards.browser.test.ts',
  'test/client/api.test.ts',
  'test/daemon/daemon-lifecycle.test.ts',
  'test/cli/attach-tty.test.ts',
  'test/daemon/faults.test.ts',
];

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const i = LONGEST_FIRST.indexOf(path.relative(spec.project.config.root, spec.moduleId).split(path.sep).join('/'));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the unlisted files keep vitest's order among themselves.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
