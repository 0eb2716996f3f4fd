/**
 * `leasehold jobs requeue --queue Q --canary K` against a real `leasehold
 * serve` process (its own maintenance pass, default interval): the run
 * starts, its first job fails, and the run stops by itself; `jobs canary ID`
 * follows it to that end, says why, and exits 1. Nothing more is requeued.
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-canary', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;

const api = served.api;
const worker = { authorization: `Bearer ${WORKER}` };
const admin = { authorization: `Bearer ${ADMIN}` };

test('a canary requeue stops by itself when its first jobs fail, and the CLI says why', async () => {
  await postJson(api('/queues/cq/jobs'), { jobs: [0, 1, 2].map((i) => ({ payload: { i } })) }, admin);
  const hung = await postJson(api('/queues/cq/claim'), { workerId: 'hung', limit: 3 }, worker);
  expect(hung.json.jobs).toHaveLength(3);

  const dry = await cli(['jobs', 'requeue', '--queue', 'cq', '--canary', '1', '--force', '--reason', 'workers hung', '--dry-run']);
  expect(dry.stdout).toContain('dry run: a canary requeue would take 3 running jobs of queue cq (by force) in steps of 1, 2. Nothing started.');

  const started = await cli(['jobs', 'requeue', '--queue', 'cq', '--canary', '1', '--window-ms', '60000', '--force', '--reason', 'workers hung', '--detach']);
  expect(started.status, started.stderr).toBe(0);
  const id = /canary run (\d+): step 1: 1 of 3 requeued, 2 left; watching until /.exec(started.stdout)?.[1];
  expect(id, started.stdout).toBeDefined();

  const [job] = (await postJson(api('/queues/cq/claim'), { workerId: 'healthy', limit: 5 }, worker)).json.jobs;
  expect(job.id).toBe(hung.json.jobs[0].id);
  expect((await postJson(api(`/jobs/${job.id}/fail`), { workerId: 'healthy', lockToken: job.lockToken, error: 'still broken' }, worker)).status).toBe(200);

  // Followed until the server's own pass judges the step (long before the 60 s window: a failure stops it at once).
  const followed = await cli(['jobs', 'canary', id!]);
  expect(followed.status, followed.stderr).toBe(1);
  expect(followed.stdout).toContain(`canary run ${id} stopped by itself after step 1 (failures): 1 failed attempt of step 1's 1 job since it was requeued (at most 0 allowed); 1 of 3 requeued, 2 left`);
  const listed = await cli(['jobs', 'canary']);
  expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+cq\\s+stopped\\s+1\\s+1/3`, 'm'));
  for (const j of hung.json.jobs.slice(1)) {
    const res = await fetch(api(`/jobs/${j.id}`), { headers: admin });
    expect(((await res.json()) as any).job.status).toBe('running');
  }
}, 120_000);
