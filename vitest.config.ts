import { defineConfig } from 'vitest/config';

// Multi-rank tests spawn the real launcher; two test files at a time keep a
// 2-core machine busy without starving the ranks of one job.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
