import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/runtimes/workers runs inside workerd: vitest.workers.config.ts.
    exclude: ['test/runtimes/workers/**', ...configDefaults.exclude],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Process tests spawn servers; keep the load of one 2-core machine sane.
    maxWorkers: 2,
  },
});
