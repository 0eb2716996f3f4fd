/**
 * `leasehold jobs requeue` against a real server: without --force it does
 * what the reaper would do now, and says which before acting (--dry-run, one
 * job or a bulk): a job whose attempts are spent is failed for good
 * (attempts_exhausted), never put back for an "attempt 2 of 1".
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

// Short leases so a lease runs out within the test; the server's own timer
// ticks once a minute, so the CLI, not that timer, is what takes the jobs.
const T = { lease: 1_000, heartbeat: 300, grace: 300, alive: 300 };

const served = servedForCli('cli-budget', {
    LEASEHOLD_LEASE_MS: String(T.lease),
    LEASEHOLD_HEARTBEAT_MS: String(T.heartbeat),
    LEASEHOLD_GRACE_MS: String(T.grace),
    LEASEHOLD_WORKER_ALIVE_MS: String(T.alive),
    LEASEHOLD_MAX_REAP_DEFER_MS: '300',
    LEASEHOLD_REAPER_INTERVAL_MS: '60000',
  }, {});
const { cli } = served;

const api = (path: string) => `${served.server.url}/api/v1${path}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const statusOf = async (id: string) => ((await (await fetch(api(`/jobs/${id}`))).json()) as { job: { status: string } }).job.status;

/** Jobs claimed by a worker that then vanished, past lease + grace and its liveness (and past the server's start hold). */
async function abandoned(queue: string, maxAttempts: number[]): Promise<string[]> {
  const res = await postJson(api(`/queues/${queue}/jobs`), { jobs: maxAttempts.map((n) => ({ payload: null, maxAttempts: n })) });
  const ids = (res.json.jobs as { id: string }[]).map((j) => j.id);
  expect((await postJson(api(`/queues/${queue}/claim`), { workerId: 'vanished', limit: ids.length })).json.jobs).toHaveLength(ids.length);
  await sleep(T.lease + T.grace + T.alive + 500);
  return ids;
}

test('one job: --dry-run says the requeue would fail it for good, and changes nothing; the requeue then does exactly that', async () => {
  const [id] = await abandoned('one', [1]);
  const dry = await cli(['jobs', 'requeue', id!, '--dry-run']);
  expect(dry.status, dry.stderr).toBe(0);
  expect(dry.stdout).toMatch(new RegExp(`^job ${id}: a requeue now would fail it for good, as the reaper would now \\(attempts_exhausted\\): lease expired on the last attempt \\(1 of 1\\): .*\\. Nothing changed\\.$`, 'm'));
  expect(await statusOf(id!)).toBe('running');

  const done = await cli(['jobs', 'requeue', id!, '--reason', 'worker host died']);
  expect(done.status, done.stderr).toBe(0);
  expect(done.stdout).toMatch(new RegExp(`^job ${id} failed for good, as the reaper would \\(attempts_exhausted\\): lease expired on the last attempt \\(1 of 1\\).*: now failed$`, 'm'));
  expect(await statusOf(id!)).toBe('failed');
}, 60_000);

test('bulk: the dry run names, per job, requeue or fail for good; the action does it', async () => {
  const [spent, spare] = await abandoned('many', [1, 3]);
  const dry = await cli(['jobs', 'requeue', '--queue', 'many', '--dry-run']);
  expect(dry.status, dry.stderr).toBe(0);
  const rows = dry.stdout.trim().split('\n');
  expect(rows[0]).toMatch(/^id\s+status\s+attempt\s+owner\s+lease\s+updated\s+would\s+last error/);
  expect(rows.find((r) => r.startsWith(`${spent} `))).toMatch(/fail for good \(attempts_exhausted\)/);
  expect(rows.find((r) => r.startsWith(`${spare} `))).toMatch(/\brequeue\b/);
  expect(dry.stdout).toContain('2 would be taken back as the reaper would (1 requeued, 1 failed for good: their attempts are spent)');
  expect([await statusOf(spent!), await statusOf(spare!)]).toEqual(['running', 'running']);

  const acted = await cli(['jobs', 'requeue', '--queue', 'many', '--reason', 'cleanup']);
  expect(acted.status, acted.stderr).toBe(0);
  expect([await statusOf(spent!), await statusOf(spare!)]).toEqual(['failed', 'pending']);
}, 60_000);
