// The vitest configuration of `npm run test:asan`: the project's, plus the
// setup file that fails a test when a process it started wrote a sanitizer
// report (test/helpers/sanitizer-reports.ts).
import { defineConfig, mergeConfig } from 'vitest/config';
import base from '../vitest.config.ts';

export default mergeConfig(base, defineConfig({
  test: {
    setupFiles: ['test/helpers/sanitizer-reports.ts'],
  },
}));
