/**
 * `leasehold audit` (src/cli/audit.ts) against a real `leasehold serve`
 * process with two named admin tokens: the CLI's own bulk action shows up
 * with its user and token name, as a table and as JSON, with filters.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');
const ADMIN = 'a'.repeat(24);
const ONCALL = 'o'.repeat(24);
const WORKER = 'w'.repeat(24);

let dir: string;
let server: ServerProcess;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-cli-audit-'));
  server = await startServerProcess(['--database-url', `file:${join(dir, 'served.db')}`], {
    LEASEHOLD_ADMIN_TOKEN: ADMIN,
    LEASEHOLD_ADMIN_TOKENS: `oncall:${ONCALL}`,
    LEASEHOLD_WORKER_TOKEN: WORKER,
  });
}, 30_000);
afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

function cli(args: string[], token = ONCALL): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, LEASEHOLD_URL: server.url, LEASEHOLD_ADMIN_TOKEN: token, LEASEHOLD_DATABASE_URL: undefined } as NodeJS.ProcessEnv;
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

test('leasehold audit: the CLI user and its token name, as a table and as JSON, filtered', async () => {
  await postJson(`${server.url}/api/v1/queues/cq/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }] }, { authorization: `Bearer ${WORKER}` });
  await postJson(`${server.url}/api/v1/queues/other/pause`, {}, { authorization: `Bearer ${ADMIN}` });
  const bulk = await cli(['jobs', 'cancel', '--queue', 'cq', '--status', 'pending', '--reason', 'bad batch']);
  expect(bulk.status, bulk.stderr).toBe(0);

  const shown = await cli(['audit', '--queue', 'cq']);
  expect(shown.status, shown.stderr).toBe(0);
  expect(shown.stderr).toContain(`leasehold audit: server ${server.url}`);
  const lines = shown.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^id\s+at\s+who\s+role \(token\)\s+action\s+target\s+change\s+reason\s+from/);
  expect(lines).toHaveLength(2);
  expect(lines[1]).toMatch(/cli:\S+\s+admin \(oncall\)\s+jobs\.bulk\s+cancel pending jobs in queue cq\s+\{"queue":"cq".*bad batch/);
  // The count changed is in the JSON (the table cuts long cells).

  const json = JSON.parse((await cli(['audit', '--json'])).stdout) as { entries: { action: string; credential: string; queue: string; after: { changed?: number } }[] };
  expect(json.entries[0]!.after.changed).toBe(2);
  expect(json.entries.map((e) => [e.action, e.credential, e.queue])).toEqual([
    ['jobs.bulk', 'oncall', 'cq'],
    ['queue.pause', 'default', 'other'],
  ]);
  const bad = await cli(['audit', '--action', 'nope']);
  expect(bad.status).toBe(1);
  expect(bad.stderr).toMatch(/action must be one of/);
}, 30_000);
