/**
 * `leasehold audit` (src/cli/audit.ts) against a real `leasehold serve`
 * process with two named admin tokens: the CLI's own bulk action shows up
 * with its user and token name, as a table and as JSON, with filters.
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const ONCALL = 'o'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-audit', {
    LEASEHOLD_ADMIN_TOKEN: ADMIN,
    LEASEHOLD_ADMIN_TOKENS: `oncall:${ONCALL}`,
    LEASEHOLD_WORKER_TOKEN: WORKER,
  }, { LEASEHOLD_ADMIN_TOKEN: ONCALL });
const { cli } = served;

test('leasehold audit: the CLI user and its token name, as a table and as JSON, filtered', async () => {
  await postJson(`${served.server.url}/api/v1/queues/cq/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }] }, { authorization: `Bearer ${WORKER}` });
  await postJson(`${served.server.url}/api/v1/queues/other/pause`, {}, { authorization: `Bearer ${ADMIN}` });
  const bulk = await cli(['jobs', 'cancel', '--queue', 'cq', '--status', 'pending', '--reason', 'bad batch']);
  expect(bulk.status, bulk.stderr).toBe(0);

  const shown = await cli(['audit', '--queue', 'cq']);
  expect(shown.status, shown.stderr).toBe(0);
  expect(shown.stderr).toContain(`leasehold audit: server ${served.server.url}`);
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
