/**
 * What a plain job's claim and completion cost the database, counted: the
 * statements sent, the rows written (triggers' writes included), the trigger
 * programs SQLite enters and the index entries written
 * (test/support/statement-cost.ts). A change that makes a plain job pay for
 * more (one more trigger on jobs, one more index the claim or completion
 * updates, one more statement or row per job) fails here: it must pay for
 * itself elsewhere and lower these bounds, or say why a plain job needs it.
 * The same work with every feature's tables in use on other queues costs a
 * plain job exactly as much: features are paid for by the jobs that use them.
 */
import { afterEach, expect, test } from 'vitest';
import { measureStatements, type StatementCost } from '../support/statement-cost.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed | undefined;
afterEach(() => {
  if (t) expect(t.errors).toEqual([]);
  t?.close();
  t = undefined;
});

const JOBS = 100;
const api = '/api/v1';
const dbPath = (bed: TestBed) => bed.url.replace(/^file:/, '');

/**
 * Per job, for one claim of 100 and one completion of those 100, as the
 * worker SDK sends them (with a claim id), on this schema:
 * - statements: 6 for the claim (the worker's row, the replay of a claim sent
 *   again, the claim, its counts, its queue waits, the rate limit's wait) and
 *   5 for the completion (stale refs, the worker's row, repeats, its counts,
 *   the update);
 * - rows: the job's row twice, its `claimed` event, and the batch's counts;
 * - trigger programs: the 19 per-row triggers on jobs the claim enters and
 *   the 18 the completion enters (their WHEN evaluated, bodies skipped): the
 *   features (groups, dependencies, held jobs, dead letters, due-later
 *   counts, duplicate detection) still checked per row;
 * - index entries: the job's entries in jobs_claim_idx (out), jobs_status_id_idx
 *   and jobs_queue_status_id_idx (moved twice), jobs_lease_expiry_idx,
 *   jobs_deadline_idx and jobs_claim_id_idx (in, then out), jobs_finished_idx
 *   (in), and its event's.
 */
const PLAIN_JOB_BOUNDS: StatementCost = { statements: 0.11, rowsWritten: 3.12, triggerPrograms: 37.02, indexEntries: 17.09 };

const perJob = (c: StatementCost): StatementCost => ({
  statements: c.statements / JOBS,
  rowsWritten: c.rowsWritten / JOBS,
  triggerPrograms: c.triggerPrograms / JOBS,
  indexEntries: c.indexEntries / JOBS,
});

const sum = (a: StatementCost, b: StatementCost): StatementCost => ({
  statements: a.statements + b.statements,
  rowsWritten: a.rowsWritten + b.rowsWritten,
  triggerPrograms: a.triggerPrograms + b.triggerPrograms,
  indexEntries: a.indexEntries + b.indexEntries,
});

/** One claim of JOBS plain jobs and one completion of all of them, each measured on its own (index entries are read before and after each). */
async function claimAndComplete(bed: TestBed, queue: string): Promise<StatementCost> {
  const enqueued = await bed.engine.enqueueMany(queue, Array.from({ length: JOBS }, (_, i) => ({ payload: { i } })), 'embedded');
  expect(enqueued).toHaveLength(JOBS);
  let jobs: { id: string | number; lockToken: string }[] = [];
  const claim = await measureStatements(bed.client, dbPath(bed), async () => {
    ({ jobs } = await bed.engine.claim({ queue, workerId: 'w1', instanceId: 'i1', limit: JOBS, claimId: `${queue}-claim-1` }));
    expect(jobs).toHaveLength(JOBS);
  });
  const complete = await measureStatements(bed.client, dbPath(bed), async () => {
    const answers = await bed.engine.complete({ workerId: 'w1', results: jobs.map((j) => ({ id: Number(j.id), lockToken: j.lockToken, result: null })) });
    expect(answers.every((a) => a.ok)).toBe(true);
  });
  return perJob(sum(claim, complete));
}

/** Other queues using every feature: groups, a flow with a failed dependency, dead letters, a held job, a debounced key, a schedule. */
async function everyFeatureInUse(bed: TestBed) {
  const ok = async (res: Promise<{ status: number; text: string }>) => {
    const r = await res;
    expect(r.status, r.text).toBeLessThan(300);
    return r as { status: number; json: any; text: string };
  };
  await ok(bed.post(`${api}/queues/grouped/jobs`, { jobs: Array.from({ length: 60 }, (_, i) => ({ payload: i, group: `tenant-${i % 12}` })) }));
  await ok(bed.post(`${api}/queues/grouped/claim`, { workerId: 'g', limit: 10 }));
  await ok(bed.post(`${api}/flows`, { jobs: [{ queue: 'step-a', payload: 1 }, { queue: 'step-b', payload: 2, dependsOn: ['#0'] }, { queue: 'step-b', payload: 3, dependsOn: ['#1'] }] }));
  const [root] = (await ok(bed.post(`${api}/queues/step-a/claim`, { workerId: 'f', limit: 1 }))).json.jobs;
  await ok(bed.post(`${api}/jobs/${root.id}/fail`, { workerId: 'f', lockToken: root.lockToken, error: 'no', retryable: false }));
  await ok(bed.post(`${api}/flows`, { jobs: [{ queue: 'step-a', payload: 4 }, { queue: 'step-b', payload: 5, dependsOn: ['#0'] }] }));
  await ok(bed.call('PATCH', `${api}/queues/mail/settings`, { deadLetterQueue: 'mail-dead' }));
  await ok(bed.post(`${api}/queues/mail/jobs`, { payload: 'x', maxAttempts: 1 }));
  const [mail] = (await ok(bed.post(`${api}/queues/mail/claim`, { workerId: 'm', limit: 1 }))).json.jobs;
  await ok(bed.post(`${api}/jobs/${mail.id}/fail`, { workerId: 'm', lockToken: mail.lockToken, error: 'bounced', retryable: false }));
  await ok(bed.post(`${api}/queues/pay/jobs`, { payload: 'charge', onLost: 'hold' }));
  await ok(bed.post(`${api}/queues/pay/claim`, { workerId: 'doomed', limit: 1 }));
  bed.clock.advance(24 * 3_600_000);
  await ok(bed.post(`${api}/reaper/run`));
  for (let i = 0; i < 3; i++) await ok(bed.post(`${api}/queues/search/jobs`, { payload: i, idempotencyKey: 'reindex', uniqueWhile: 'debounce', debounceMs: 60_000 }));
  await ok(bed.post(`${api}/schedules`, { name: 'nightly', queue: 'reports', cron: '0 3 * * *', payload: {} }));
  await ok(bed.post(`${api}/reaper/run`));
  const held = await bed.client.execute(`SELECT count(*) AS n FROM jobs WHERE held_at IS NOT NULL`);
  expect(Number(held.rows[0]!.n)).toBeGreaterThan(0);
}

test('a plain job claimed and completed in batches of 100 costs at most what this design allows', async () => {
  t = await setup();
  const cost = await claimAndComplete(t, 'plain');
  for (const key of Object.keys(PLAIN_JOB_BOUNDS) as (keyof StatementCost)[]) {
    expect(cost[key], `${key} per job (bound ${PLAIN_JOB_BOUNDS[key]}; measured ${JSON.stringify(cost)})`).toBeLessThanOrEqual(PLAIN_JOB_BOUNDS[key]);
  }
});

test('features in use on other queues cost a plain job nothing more', async () => {
  t = await setup();
  const alone = await claimAndComplete(t, 'plain-before');
  await everyFeatureInUse(t);
  expect(await claimAndComplete(t, 'plain-after')).toEqual(alone);
});
