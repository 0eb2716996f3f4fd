import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Process tests spawn servers; keep the load of one 2-core machine sane.
    maxWorkers: 2,
  },
});
