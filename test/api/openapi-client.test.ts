/**
 * A client generated from the served document works without hand edits:
 * openapi-typescript (a third-party generator) writes the types from
 * GET /api/v1/openapi.json of a real server on 127.0.0.1, the worker story
 * in test/api/openapi-client/worker-story.ts (openapi-fetch, no casts) is
 * type-checked beside them with the project's `tsc --strict`, and then run
 * against that server with tsx; what it saw is checked here.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const STORY = join(import.meta.dirname, 'openapi-client', 'worker-story.ts');
const TOKENS = { ADMIN_TOKEN: 'a'.repeat(24), WORKER_TOKEN: 'w'.repeat(24), READONLY_TOKEN: 'r'.repeat(24) };

let dir: string;
let server: RunningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-generated-client-'));
  server = await startServer(
    defaultConfig({ databaseUrl: `file:${join(dir, 'x.db')}`, port: 0, adminToken: TOKENS.ADMIN_TOKEN, workerToken: TOKENS.WORKER_TOKEN, readonlyToken: TOKENS.READONLY_TOKEN }),
    { log: silentLogger },
  );
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('openapi-typescript types from the served document, openapi-fetch calls, tsc --strict: the worker story runs as written', async () => {
  expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(`${server.url}/api/v1/openapi.json`);
  expect(res.status).toBe(200);
  const types = astToString(await openapiTS(await res.json()));
  // Every answer has its fields: no untyped object where a model belongs (but the document itself, which is any OpenAPI document).
  expect(types.match(/"application\/json": \{\s*\[key: string\]: unknown;\s*\};/g)).toHaveLength(1);

  const client = join(dir, 'client');
  mkdirSync(client);
  writeFileSync(join(client, 'package.json'), JSON.stringify({ name: 'generated-client', private: true, type: 'module' }));
  writeFileSync(join(client, 'api.ts'), types);
  copyFileSync(STORY, join(client, 'worker-story.ts'));
  // The project's packages (openapi-fetch, @types/node), as an installed client would have them.
  symlinkSync(join(ROOT, 'node_modules'), join(client, 'node_modules'), 'dir');
  writeFileSync(
    join(client, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        lib: ['ES2023', 'DOM'],
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
      },
      files: ['worker-story.ts', 'api.ts'],
    }),
  );

  const tsc = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(client, 'tsconfig.json'), '--strict', '--noEmit']).catch((e: { stdout: string; stderr: string }) => e);
  expect(`${tsc.stdout}${tsc.stderr}`, 'tsc --strict on the generated client and the story').toBe('');

  const story = await run(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'worker-story.ts'], {
    cwd: client,
    env: { ...process.env, LEASEHOLD_URL: server.url, ...TOKENS },
  }).catch((e: { stdout: string; stderr: string }) => {
    throw new Error(`the worker story failed:\n${e.stderr}\n${e.stdout}`);
  });
  const outcome = JSON.parse(story.stdout.trim().split('\n').at(-1)!);
  expect(outcome).toMatchObject({
    deduplicated: true,
    bulkIds: 2,
    completed: 'completed',
    staleFail: 'lease_lost',
    wokenClaim: 1,
    failed: 'failed',
    batchCompleted: 2,
    checkpoint: { step: 2 },
    readerGetJob: 'forbidden',
    listed: 3,
    queueCompleted: 3,
    leaseMs: 60_000,
    paused: true,
    resumed: true,
    reaperRequeued: 0,
    workers: ['generated-client'],
    workerPause: 'forbidden',
    scheduleHasNextRun: true,
    schedules: ['nightly'],
    deleted: 'nightly',
    metricsCompleted: 3,
    metricsStaleWrites: 1,
    alertStates: ['ok'],
    tuningLease: 60_000,
    audited: ['queue.pause'],
    prometheus: true,
    workerMetrics: 'forbidden',
    fencing: 1,
  });
  expect(outcome.events).toEqual(expect.arrayContaining(['enqueued', 'claimed', 'completed']));
}, 120_000);
