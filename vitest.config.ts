import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Integration tests spawn real daemons; a retry would hide a race, so none.
    retry: 0,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
