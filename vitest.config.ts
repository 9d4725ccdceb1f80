import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Integration tests spawn real daemons; a retry would hide a race, so none.
    retry: 0,
    // Every client in the suite checks each frame and event from the daemon against the full schema
    // (AstraClientOptions.validate), so a daemon that drifts from the schema fails the tests; a test
    // of the default ('envelope') sets it back (test/client/event-validation.test.ts).
    env: { ASTRA_CLIENT_VALIDATE: 'full' },
    reporters: ['default', './test/summary-reporter.ts'],
    // The longest files start first (test/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
  },
});
