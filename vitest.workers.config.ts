/**
 * The Workers test run: test/runtimes/workers/*.test.ts inside workerd (miniflare), with
 * the real entry (src/runtime/cloudflare.ts) as SELF and a local D1 database
 * migrated from drizzle/.
 *
 *   npx vitest run --config vitest.workers.config.ts
 */
import path from 'node:path';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, 'drizzle'));
  return {
    plugins: [
      cloudflareTest({
        main: './src/runtime/cloudflare.ts',
        wrangler: { configPath: './wrangler.toml' },
        miniflare: {
          // A D1 database nobody migrates: the Worker must answer 503 on it, not 500s.
          d1Databases: { EMPTY_DB: 'leasehold-empty' },
          // Every request the Worker sends out (only libSQL over HTTP does) gets this
          // answer, not a real connection: a refused one makes workerd print its own stack
          // traces into a passing run, and no test should reach the network.
          outboundService: () => new Response('no libSQL server in the tests', { status: 502 }),
          bindings: {
            TEST_MIGRATIONS: migrations,
            // Short leases so the stale-worker story runs in a few seconds of real (database) time.
            LEASEHOLD_LEASE_MS: '1000',
            LEASEHOLD_HEARTBEAT_MS: '200',
            LEASEHOLD_GRACE_MS: '200',
            LEASEHOLD_WORKER_ALIVE_MS: '400',
            LEASEHOLD_MAX_REAP_DEFER_MS: '200',
            LEASEHOLD_REAPER_INTERVAL_MS: '1000',
            LEASEHOLD_BACKOFF_BASE_MS: '1',
            LEASEHOLD_WORKER_TOKEN: 'worker-token-0123456789',
            LEASEHOLD_ADMIN_TOKEN: 'admin-token-0123456789',
          },
        },
      }),
    ],
    test: {
      include: ['test/runtimes/workers/**/*.test.ts'],
      setupFiles: ['./test/runtimes/workers/apply-migrations.ts'],
      testTimeout: 30_000,
      // Each request logs a line; show them for the tests that fail, not for the hundreds that pass.
      silent: 'passed-only',
    },
  };
});
