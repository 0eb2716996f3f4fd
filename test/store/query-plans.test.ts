/**
 * The statements that run on every reaper pass and every dashboard poll must
 * never walk the whole jobs or events table: at a million retained jobs one
 * such walk costs 70-300 ms (it happened twice: a GROUP BY queue_name made
 * SQLite read jobs_queue_status_id_idx end to end). This records every
 * statement a reaper pass, a metrics snapshot, the queue health and the
 * overview's activity read issue, on a table ANALYZE has seen with many
 * finished jobs, and checks each one's query plan: jobs and events may only be
 * read through an index search, or scanned through a partial index of a
 * bounded set (running, pending, finished-by-time, rare events).
 */
import type { InStatement, TransactionMode } from '@libsql/client';
import { afterEach, expect, onTestFinished, test } from 'vitest';
import { metricsSnapshot } from '../../src/db/store/metrics.ts';
import { queuesHealth } from '../../src/db/store/read.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { activityLastHour } from '../../src/dashboard/charts.ts';
import { suspectsByQueue } from '../../src/db/store/suspects.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { jobCheckpointIfOwned, jobsHeartbeatIfOwned } from '../../src/db/store/lease.ts';
import { jobFailIfOwned, jobsCompleteIfOwned, jobsReleaseIfOwned } from '../../src/db/store/finish.ts';
import { jobsClaimPending } from '../../src/db/store/claim.ts';
import type { Db } from '../../src/db/db.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
/** One statement as the libSQL client is given it. */
type Query = { sql: string; params: unknown[] };
afterEach(() => t?.close());

/**
 * A Db that records every statement it runs, raw `sql` and query builder
 * alike: the statements are read where they reach the libSQL client (one
 * execute, or one batch), so no way of writing a statement escapes the check.
 */
function recording(db: Db, seen: Query[]): Db {
  const client = t.client;
  const { execute, batch } = client;
  const note = (stmt: InStatement) => {
    const q = typeof stmt === 'string' ? { sql: stmt, params: [] } : { sql: stmt.sql, params: (stmt.args ?? []) as unknown[] };
    // The test's own EXPLAINs go through the same client.
    if (!/^\s*EXPLAIN\b/.test(q.sql)) seen.push(q);
  };
  client.execute = ((stmt: InStatement) => (note(stmt), (execute as (s: InStatement) => unknown).call(client, stmt))) as typeof client.execute;
  client.batch = ((stmts: InStatement[], mode?: TransactionMode) => (stmts.forEach(note), batch.call(client, stmts, mode))) as typeof client.batch;
  onTestFinished(() => {
    client.execute = execute;
    client.batch = batch;
  });
  return db;
}

/** Plans that read a bounded set, or search an index. */
const BOUNDED_SCANS = /^SCAN (jobs|j) USING (COVERING )?INDEX (jobs_lease_expiry_idx|jobs_claim_idx|jobs_finished_idx|jobs_deadline_idx)\b|^SCAN (events|e) USING (COVERING )?INDEX events_rare_type_at_idx\b/;

test('reaper pass, metrics, queue health, activity, the reaper watch and the zombie reads never walk the whole jobs or events table', async () => {
  t = await setup({});
  const c = t.client;
  const now = t.clock.now() as number;
  for (const q of ['a', 'b', 'c']) await c.execute({ sql: 'INSERT INTO queues (name, created_at, updated_at) VALUES (?, ?, ?)', args: [q, now, now] });
  // 6,000 finished jobs over the last day, a few pending and running: the shape of a busy queue's table.
  await c.execute({
    sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at, completed_at, finished_at, last_event, created_at, updated_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 6000)
      SELECT char(97 + i % 3), '{}', 'completed', 5, 1, ?1 - i * 14000, ?1 - i * 14000, ?1 - i * 14000 + 5, ?1 - i * 14000 + 5, 'completed', ?1 - i * 14000, ?1 - i * 14000 FROM s`,
    args: [now],
  });
  for (const q of ['a', 'b']) {
    for (let i = 0; i < 5; i++) await t.enqueue(q);
    await t.claim(q, `w-${q}`, { limit: 2 });
  }
  await c.execute('ANALYZE');

  const seen: Query[] = [];
  const db = recording(t.db, seen);
  await runMaintenancePass(db, now, t.config);
  await metricsSnapshot(db, { now, config: t.config });
  await queuesHealth(db, { now, defaults: t.config });
  await queuesHealth(db, { now, defaults: t.config, queue: 'a' });
  await activityLastHour(createStore(db), { now });
  // What shows the zombies the reaper cannot see: the reaper-late watch
  // (/healthz, the banner), the dashboard's zombie and job reads with their
  // suspect thresholds, and the suspect count the snapshot adds when a job is past one.
  const store = createStore(db);
  await store.maintenanceWatch({ now, defaults: t.config });
  await store.jobsListZombieCandidates({ now, defaults: t.config, limit: 500 });
  await store.jobsRunningFlagged({ ids: [1, 2, 6_001], now, defaults: t.config });
  await store.jobGetWithSettings({ id: 6_001, defaults: t.config, now });
  await suspectsByQueue(db, { now, thresholds: [{ queue: 'a', afterMs: 1, basis: 'test' }], idsPerQueue: 10 });
  // What a pass runs after the clock stepped back (every pass reads the evidence; these run only then).
  await store.jobsRebaseAfterStepBack({ now, limit: 500 });
  await store.clockStepBackSettle({ now });
  expect(seen.length).toBeGreaterThan(10);

  const problems: string[] = [];
  for (const { sql, params } of seen) {
    const plan = (await c.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    for (const step of plan) {
      const walksTable = /^SCAN (jobs|j|events|e)\b/.test(step) && !/VIRTUAL TABLE/.test(step) && !BOUNDED_SCANS.test(step);
      if (walksTable) problems.push(`${step}\n  in: ${sql.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
  }
  expect(problems).toEqual([]);
});

test("a worker's writes find its jobs by id, not by walking every running job (no ANALYZE, as in production)", async () => {
  // Nothing in leasehold runs ANALYZE, so the planner has no statistics: with
  // the refs in json_each, it once chose jobs_status_id_idx (every running
  // job) as the outer loop, ~11 ms per 50-ref write at 5,000 running jobs.
  t = await setup({});
  await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: i })) });
  const claimed = (await t.post('/api/v1/queues/q/claim', { workerId: 'w', limit: 300 })).json.jobs as { id: string; lockToken: string }[];
  expect(claimed).toHaveLength(300);
  const [a, b, c, d, e] = claimed.map((j) => ({ id: Number(j.id), lockToken: j.lockToken }));
  const now = t.clock.now() as number;

  const seen: Query[] = [];
  const db = recording(t.db, seen);
  await jobsHeartbeatIfOwned(db, { workerId: 'w', leases: [a!, { ...b!, lockToken: 'stale' }], now });
  await jobCheckpointIfOwned(db, { workerId: 'w', id: a!.id, lockToken: a!.lockToken, checkpoint: '{}', now });
  await jobsCompleteIfOwned(db, { workerId: 'w', results: [{ ...c!, data: null }], now });
  await jobFailIfOwned(db, { workerId: 'w', ...d!, error: 'boom', retryable: true, now, defaults: t.config });
  await jobsReleaseIfOwned(db, { workerId: 'w', leases: [e!], reason: 'shutdown', now });

  const updates = seen.filter((q) => /^\s*UPDATE jobs/.test(q.sql));
  expect(updates.length).toBeGreaterThanOrEqual(5);
  for (const { sql, params } of updates) {
    const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    expect(plan, sql).toContainEqual(expect.stringMatching(/^SEARCH jobs USING INTEGER PRIMARY KEY \(rowid=\?\)/));
    expect(plan.filter((step) => /jobs USING (COVERING )?INDEX/.test(step)), sql).toEqual([]);
    // A completion's and a failure's RETURNING asks whether jobs wait for each finished one: one probe of the edges' index.
    if (/has_dependents/.test(sql)) expect(plan.filter((step) => /job_dependencies/.test(step)), sql).toEqual([expect.stringMatching(/^SEARCH job_dependencies USING COVERING INDEX job_dependencies_dependency_idx \(dependency_id=\?\)$/)]);
  }
  expect(updates.filter((q) => /has_dependents/.test(q.sql))).toHaveLength(2);
});

test('a claim reads its candidates in claim order from jobs_claim_idx, and sums the sizes of those LIMIT jobs only', async () => {
  // The byte budget's running sum is a window function: over the whole
  // pending set it would read every pending job (and sort them) on every
  // claim. It runs over the first LIMIT candidates the index gives, in order.
  t = await setup({});
  await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: i })) });
  await t.post('/api/v1/queues/other/jobs', { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: i })) });

  const seen: Query[] = [];
  const db = recording(t.db, seen);
  await jobsClaimPending(db, { queue: 'q', workerId: 'w', limit: 50, now: t.clock.now(), defaults: t.config, maxBytes: t.config.maxClaimBytes });
  const [claim] = seen.filter((q) => /^\s*UPDATE jobs/.test(q.sql));
  const rows = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${claim!.sql}`, args: claim!.params as never[] })).rows.map((r) => ({ id: Number(r.id), parent: Number(r.parent), detail: String(r.detail) }));
  const plan = rows.map((r) => r.detail);
  expect(plan).toContainEqual(expect.stringMatching(/^SEARCH jobs USING (COVERING )?INDEX jobs_claim_idx \(queue_name=\?\)/));
  expect(plan.filter((step) => /^SCAN (jobs|j)\b/.test(step))).toEqual([]);
  // Two sorts: the window's, of the LIMIT candidates, and in the groups'
  // round, the groups whose delay ran out (at most LIMIT of them), put in
  // served order to merge with the ready groups, which job_groups_ready_idx
  // gives in that order. A third would sort the candidates themselves, so
  // the LIMIT could no longer stop the index search early.
  const sorts = rows.filter((r) => /USE TEMP B-TREE/.test(r.detail));
  expect(sorts.map((r) => r.detail)).toEqual(['USE TEMP B-TREE FOR ORDER BY', 'USE TEMP B-TREE FOR ORDER BY']);
  const merge = rows.find((r) => r.detail === 'MERGE (UNION ALL)')!;
  const right = rows.find((r) => r.parent === merge.id && r.detail === 'RIGHT')!;
  expect(sorts.filter((r) => r.parent === right.id)).toHaveLength(1);
});

test("a claim's round over groups reads the ready groups in served order and looks up those whose delay ran out: a delayed group is not visited", async () => {
  // The round walked every group with pending work, least recently served
  // first, and asked each for a due job: 200,000 groups whose jobs were all
  // delayed cost every claim 123 ms (6 ms on a plain queue). Groups never
  // served come first in that order, so here the 10,000 delayed ones stood
  // before the one with due jobs. (No ANALYZE, as in production.)
  t = await setup({});
  const now = t.clock.now() as number;
  await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 20 }, (_, i) => ({ payload: i, group: 'due' })) });
  expect(await t.claim('q', 'w', { limit: 1 })).toHaveLength(1);
  const delayGroups = (from: number, n: number) =>
    t.client.execute({
      sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, group_key, created_at, updated_at)
        WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?3) SELECT 'q', '{}', 5, ?1 + 60000 + i, 'later-' || (?2 + i), ?1, ?1 FROM s`,
      args: [now, from, n],
    });
  await delayGroups(0, 10);

  const seen: Query[] = [];
  const db = recording(t.db, seen);
  expect((await jobsClaimPending(db, { queue: 'q', workerId: 'w', limit: 5, now, defaults: t.config })).map((j) => j.group_key)).toEqual(Array(5).fill('due'));
  const [claim] = seen.filter((q) => /^\s*UPDATE jobs/.test(q.sql));
  const [tally] = seen.filter((q) => /^\s*INSERT INTO claim_tallies/.test(q.sql));
  // The claim's statement run again with its tally (which keeps the queue's
  // counts, as the store's batch does), and the count of virtual machine
  // steps it took (sqlite_stmt): the same for the same rows read, whatever
  // the machine's speed. A comment makes it a statement of its own.
  let probes = 0;
  const stepsOfClaim = async () => {
    const probe = `/* probe ${++probes} */ ${claim!.sql}`;
    const [claimed, , steps] = await t.client.batch(
      [{ sql: probe, args: claim!.params as never[] }, { sql: tally!.sql, args: tally!.params as never[] }, { sql: 'SELECT nstep FROM sqlite_stmt WHERE sql = ?', args: [probe] }],
      'write',
    );
    expect(claimed!.rows).toHaveLength(5);
    return Number(steps!.rows[0]!.nstep);
  };
  const withTen = await stepsOfClaim();
  await delayGroups(10, 10_000);
  const withTenThousand = await stepsOfClaim();
  // Visiting each delayed group took 20 or more steps: 200,000 more here.
  expect(withTenThousand - withTen, `${withTen} steps with 10 delayed groups, ${withTenThousand} with 10,010`).toBeLessThan(500);

  // Pinned by the plan: job_groups is read through the two ranges only, the
  // ready groups (served order) and the delayed ones due by now.
  const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${claim!.sql}`, args: claim!.params as never[] })).rows.map((r) => String(r.detail));
  const groupReads = plan.filter((step) => /^(SCAN|SEARCH) g\b/.test(step));
  expect(groupReads.sort()).toEqual(['SEARCH g USING INDEX job_groups_delayed_idx (queue_name=? AND delayed_until<?)', 'SEARCH g USING INDEX job_groups_ready_idx (queue_name=?)']);
  // And those ranges hold the one group that can run now, and no delayed one.
  const [ready] = (await t.client.execute(`SELECT count(*) AS n FROM job_groups INDEXED BY job_groups_ready_idx WHERE queue_name = 'q' AND pending > 0 AND delayed_until IS NULL`)).rows;
  const [cameDue] = (await t.client.execute({ sql: `SELECT count(*) AS n FROM job_groups INDEXED BY job_groups_delayed_idx WHERE queue_name = 'q' AND delayed_until <= ?`, args: [now] })).rows;
  expect([Number(ready!.n), Number(cameDue!.n)]).toEqual([1, 0]);
});

test('a claim with a claim id, sent again or not, and a beat naming lost claims find their jobs through jobs_claim_id_idx, not by walking every running job', async () => {
  // Every SDK claim carries an id, so the replay's lookup and the claim's
  // "nothing running under this id yet" run on every claim: they must read
  // the claim's own jobs only (no ANALYZE, as in production).
  t = await setup({});
  await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: i })) });
  const now = t.clock.now() as number;
  for (let i = 0; i < 5; i++) await createStore(t.db).jobsClaimPending({ queue: 'q', workerId: `busy-${i}`, limit: 50, claimId: `c-${i}`, now, defaults: t.config });

  const seen: Query[] = [];
  const store = createStore(recording(t.db, seen));
  await store.jobsClaimPending({ queue: 'q', workerId: 'w', instanceId: 'i', limit: 5, claimId: 'fresh', now, defaults: t.config });
  await store.jobsClaimPending({ queue: 'q', workerId: 'w', instanceId: 'i', limit: 5, claimId: 'fresh', now, defaults: t.config });
  await store.workerBeat({ id: 'w', instanceId: 'i', lostClaims: ['fresh'], now });

  // Per claim: the replay, the claim's own "nothing under this id yet" and
  // its queue-wait count (attempt-stats.ts); and the beat.
  const touchingClaimIds = seen.filter((q) => /claim_id (=|IN)/.test(q.sql));
  expect(touchingClaimIds.length).toBe(7);
  for (const { sql, params } of touchingClaimIds) {
    const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    expect(plan.filter((step) => /claim_id/.test(step) || /^(SCAN|SEARCH) (jobs|r)\b/.test(step)), sql).toContainEqual(expect.stringMatching(/USING INDEX jobs_claim_id_idx \(claim_id=\?/));
    expect(plan.filter((step) => /^SCAN (jobs|r)\b/.test(step)), sql).toEqual([]);
  }
});

test('the queue cap finds a queue in use by index searches: its jobs by jobs_queue_status_id_idx, its schedules by schedules_queue_idx, never walking either table', async () => {
  t = await setup({ maxQueues: 50 });
  for (let i = 0; i < 20; i++) await t.post(`/api/v1/queues/q${i}/jobs`, { jobs: Array.from({ length: 20 }, (_, j) => ({ payload: j })) });
  const seen: Query[] = [];
  const store = createStore(recording(t.db, seen));
  await store.jobsInsert({ queue: 'fresh', jobs: [{ payload: 1 }], actor: 'api', now: t.clock.now(), defaults: t.config, maxQueues: 50 });
  await store.jobsInsert({ queue: 'q1', jobs: [{ payload: 1 }], actor: 'api', now: t.clock.now(), defaults: t.config, maxQueues: 50 });
  const inserts = seen.filter((q) => /^\s*(WITH|INSERT INTO queues)/.test(q.sql));
  expect(inserts.length).toBeGreaterThanOrEqual(4);
  for (const { sql, params } of inserts) {
    const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    expect(plan.filter((step) => /^SCAN (jobs|schedules)\b/.test(step)), sql).toEqual([]);
    if (/FROM schedules/.test(sql)) expect(plan, sql).toContainEqual(expect.stringMatching(/SEARCH schedules USING (COVERING )?INDEX schedules_queue_idx/));
  }
});

test('a wait on jobs reads statuses from jobs_status_id_idx alone, and rows by id (no ANALYZE)', async () => {
  // Waits re-read every watched job on an interval: a status read from the
  // row would walk a large payload's overflow pages, and a scan of the
  // index would read every job of a status.
  t = await setup({});
  await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: i })) });
  const seen: Query[] = [];
  const store = createStore(recording(t.db, seen));
  await store.jobsWatchStates({ ids: [1, 2, 3, 999], versionsOf: [2, 3] });
  await store.jobsGetWithinBytes({ ids: [3, 1], maxBytes: 1_000 });
  const plans: string[][] = [];
  for (const { sql, params } of seen) {
    plans.push((await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail)));
  }
  expect(plans).toHaveLength(3);
  expect(plans[0]).toContainEqual(expect.stringMatching(/^SEARCH jobs USING COVERING INDEX jobs_status_id_idx \(status=\? AND id=\?/));
  for (const plan of plans.slice(1)) {
    expect(plan.filter((step) => /^SCAN (jobs|j)\b/.test(step)), plan.join('\n')).toEqual([]);
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH j USING INTEGER PRIMARY KEY \(rowid=\?\)/));
  }
});

test('a claim on a queue with nothing due reads a seek per priority of its pending jobs, not every job not yet due', async () => {
  // jobs_claim_idx leads with priority, so "due now" is no range of it: a
  // claim (and a waiting claim's look) on 100,000 delayed jobs walked them all.
  // The claim's LIMIT asks first whether any priority has a due job.
  t = await setup({});
  const now = t.clock.now() as number;
  const delayed = (priority: number, delayMs: number) => Array.from({ length: 20 }, (_, i) => ({ payload: i, priority, delayMs }));
  await t.post('/api/v1/queues/q/jobs', { jobs: [...delayed(5, 60_000), ...delayed(0, 120_000)] });

  const seen: Query[] = [];
  const db = recording(t.db, seen);
  expect(await jobsClaimPending(db, { queue: 'q', workerId: 'w', limit: 50, now, defaults: t.config })).toEqual([]);

  // The guard lets through what is due at any priority, in claim order.
  t.clock.advance(60_000);
  const first = await jobsClaimPending(t.db, { queue: 'q', workerId: 'w', limit: 50, now: t.clock.now(), defaults: t.config });
  expect(first.map((j) => j.priority)).toEqual(Array(20).fill(5));
  t.clock.advance(60_000);
  await t.post('/api/v1/queues/q/jobs', { jobs: [{ payload: 'now', priority: 9 }] });
  const second = await jobsClaimPending(t.db, { queue: 'q', workerId: 'w', limit: 50, now: t.clock.now(), defaults: t.config });
  expect(second.map((j) => j.priority)).toEqual([9, ...Array(20).fill(0)]);

  // The plan is read last: a batch after an EXPLAIN of it through the test's client found a statement still open.
  // (The recording goes on; the first claim's UPDATE is the empty claim's.)
  const [claim] = seen.filter((q) => /^\s*UPDATE jobs/.test(q.sql));
  const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${claim!.sql}`, args: claim!.params as never[] })).rows.map((r) => String(r.detail));
  expect(plan).toContainEqual(expect.stringMatching(/^SEARCH jobs USING (COVERING )?INDEX jobs_claim_idx \(queue_name=\? AND priority<\?\)/));
  expect(plan).toContainEqual(expect.stringMatching(/^SEARCH jobs USING (COVERING )?INDEX jobs_claim_idx \(queue_name=\? AND priority=\? AND available_at<\?\)/));
});

test("a where-filtered page reads its window through an index, never the whole table; an = on a queue's indexed field walks that field's index (no ANALYZE)", async () => {
  // The promise of GET /jobs?where=: a page examines at most its window of
  // ids, each found through an index, and the clauses run on those rows only.
  t = await setup({});
  for (const q of ['orders', 'mail']) {
    await t.post(`/api/v1/queues/${q}/jobs`, { jobs: Array.from({ length: 300 }, (_, i) => ({ payload: { customerId: i % 30, name: `c-${i}` } })) });
  }
  const indexed = await t.call('PUT', '/api/v1/queues/orders/indexed-fields', { fields: ['payload.customerId'] });
  expect(indexed.status).toBe(200);
  const [index] = (await t.client.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'jobs_field_%'")).rows;
  expect(String(index!.sql)).toMatch(/ON jobs \(queue_name, json_extract\(payload, '\$\.customerId'\), id\) WHERE queue_name = 'orders'$/);
  const eq = { op: '=' as const, root: 'payload' as const, jsonPath: '$.customerId', value: 7 };
  const prefix = { op: '^=' as const, root: 'payload' as const, jsonPath: '$.name', value: 'c-1' };

  const plans = async (params: Parameters<ReturnType<typeof createStore>['jobSummariesList']>[0]) => {
    const seen: Query[] = [];
    await createStore(recording(t.db, seen)).jobSummariesList(params);
    const page = seen.filter((q) => /json_extract/.test(q.sql) && /IN \(SELECT id FROM/.test(q.sql));
    expect(page.length).toBe(1);
    const out: string[][] = [];
    for (const { sql, params: args } of seen.filter((q) => /SELECT id FROM/.test(q.sql))) {
      out.push((await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: args as never[] })).rows.map((r) => String(r.detail)));
    }
    return out;
  };
  // The indexed field, with a status and a second clause left to the page: the window walks the field's index.
  for (const plan of await plans({ queue: 'orders', status: 'pending', where: [eq, prefix], limit: 10, order: 'desc' })) {
    expect(plan).toContainEqual(expect.stringMatching(new RegExp(`^SEARCH jobs USING (COVERING )?INDEX ${String(index!.name)} \\(queue_name=\\? AND <expr>=\\?\\)`)));
    expect(plan.filter((step) => /^SCAN (jobs|j)\b/.test(step))).toEqual([]);
  }
  // Not indexed in this queue, or not an =: the window comes from the list's own indexes.
  for (const params of [
    { queue: 'mail', where: [eq], limit: 10, order: 'desc' as const },
    { queue: 'orders', status: 'pending' as const, where: [prefix], limit: 10, order: 'asc' as const, after: 5 },
    { status: 'pending' as const, where: [prefix], limit: 10, order: 'desc' as const },
    { idempotencyKey: 'k-1', where: [prefix], limit: 10, order: 'desc' as const },
  ]) {
    for (const plan of await plans(params)) {
      expect(plan.filter((step) => /^SCAN (jobs|j)\b/.test(step)), JSON.stringify(params)).toEqual([]);
      expect(plan.join('\n'), JSON.stringify(params)).toMatch(/SEARCH jobs USING (COVERING )?INDEX jobs_((queue_)?status_id|idempotency_key|key_lookup)_idx/);
    }
  }
  // No filter but where: the primary key, from the cursor, LIMIT the window.
  for (const plan of await plans({ where: [prefix], limit: 10, order: 'desc', after: 400 })) {
    expect(plan.join('\n')).toMatch(/SEARCH jobs USING INTEGER PRIMARY KEY \(rowid<\?\)/);
  }
});

test("the group counts (the queue page, /metrics) search each queue's groups by job_groups' primary key, never walk job_groups or read jobs (no ANALYZE)", async () => {
  // No index beyond the primary key on purpose (src/db/store/group-counts.ts):
  // job_groups is rewritten by every grouped enqueue, claim and finish.
  t = await setup({});
  const now = t.clock.now() as number;
  await t.enqueue('q', { payload: 0, group: 'g0' });
  await t.enqueue('plain');
  await t.client.execute({
    sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, available_at, group_key, created_at, updated_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 10000)
      SELECT 'q', '{}', 'pending', 5, ?1, 'g' || i, ?1, ?1 FROM s`,
    args: [now],
  });
  const seen: Query[] = [];
  const store = createStore(recording(t.db, seen));
  const [one] = await store.queuesGroupCounts({ queue: 'q', limit: 10 });
  expect(one).toMatchObject({ groups: 10_001, other: { groups: 9_991 } });
  expect(await store.queuesGroupCounts({ limit: 20 })).toHaveLength(1);
  expect(seen).toHaveLength(2);
  for (const { sql, params } of seen) {
    const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    expect(plan.filter((step) => /job_groups|\bg\b/.test(step)).every((step) => /^SEARCH g USING (COVERING )?INDEX sqlite_autoindex_job_groups_1 \(queue_name=\?\)$/.test(step)), plan.join('\n')).toBe(true);
    expect(plan.filter((step) => /^SEARCH g /.test(step))).toHaveLength(3);
    expect(plan.filter((step) => /\b(jobs|j)\b/.test(step))).toEqual([]);
  }
});

/**
 * A trigger's statements as plain ones: NEW's columns as literals, a RAISE
 * as a constant (EXPLAIN plans them the same; SQLite shows no trigger's plan).
 */
async function triggerStatements(name: string, newColumns: Record<string, string>): Promise<string[]> {
  const [row] = (await t.client.execute({ sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", args: [name] })).rows;
  const text = String(row!.sql);
  const body = text.slice(text.indexOf('BEGIN') + 'BEGIN'.length, text.lastIndexOf('END'));
  return body
    .split(/;\s*\n/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => Object.entries(newColumns).reduce((q, [col, literal]) => q.replaceAll(`NEW.\`${col}\``, literal), s.replace(/RAISE\(ABORT, '[^']*'\)/g, '1')));
}

test('an enqueue with dependencies reads each job it names by its id (or flow ref), never the failed and cancelled jobs by status', async () => {
  // The failed-dependency check was a join SQLite ran from the status index:
  // every failed and cancelled job was read for each job enqueued with
  // dependencies (54 ms for a flow of 100; 933 ms after 31,000 failures).
  t = await setup({});
  const c = t.client;
  const now = t.clock.now() as number;
  await c.execute({ sql: 'INSERT INTO queues (name, created_at, updated_at) VALUES (?, ?, ?)', args: ['q', now, now] });
  await c.execute({
    sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at, failed_at, finished_at, last_event, created_at, updated_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 3000)
      SELECT 'q', '{}', 'failed', 1, 1, ?1, ?1, ?1, ?1, 'failed', ?1, ?1 FROM s`,
    args: [now],
  });
  const statements = await triggerStatements('jobs_dependencies_insert', { depends_on: `'[1, 2, "flow:0"]'`, dependency_policy: 'NULL', id: '3001', available_at: String(now) });
  expect(statements.length).toBeGreaterThanOrEqual(5);
  const problems: string[] = [];
  for (const statement of statements) {
    const plan = (await c.execute(`EXPLAIN QUERY PLAN ${statement}`)).rows.map((r) => String(r.detail));
    for (const step of plan) {
      if (!/\b(jobs|x|f)\b/.test(step) || /job_dependencies|VIRTUAL TABLE|SUBQUERY|CORRELATED/.test(step)) continue;
      if (!/USING INTEGER PRIMARY KEY \(rowid=\?\)|USING (COVERING )?INDEX jobs_flow_ref_idx \(flow_ref=\?\)/.test(step)) problems.push(`${step}\n  in: ${statement.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
  }
  expect(problems).toEqual([]);
});

test("a cascade step's statements search indexes: the jobs a cascade failed by dependency_failed_by, each one's edges by job_dependencies_dependency_idx, the step's jobs by id", async () => {
  t = await setup({ cascadeStepRows: 3 });
  const flow = await t.post('/api/v1/flows', { jobs: [{ queue: 'c', payload: 0 }, ...Array.from({ length: 6 }, (_, i) => ({ queue: 'q', payload: i, dependsOn: [`#${i === 0 ? 0 : i}`] }))] });
  expect(flow.status).toBe(201);
  const [root] = await t.claim('c', 'w');
  const now = t.clock.now() as number;
  await jobFailIfOwned(t.db, { workerId: 'w', id: Number(root!.id), lockToken: root!.lockToken, error: 'boom', retryable: false, now, defaults: t.config });
  const seen: Query[] = [];
  const store = createStore(recording(t.db, seen));
  // Two steps: the first settles the root's edge, the second a failed job's.
  await store.dependencyCascadeStep({ rows: 3, now });
  await store.dependencyCascadeStep({ rows: 3, now });
  const problems: string[] = [];
  const fills = seen.filter((q) => /INSERT INTO dependency_cascade_batch/.test(q.sql));
  expect(fills).toHaveLength(2);
  for (const { sql, params } of seen) {
    const plan = (await t.client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args: params as never[] })).rows.map((r) => String(r.detail));
    if (fills.some((f) => f.sql === sql)) {
      expect(plan, sql).toContainEqual(expect.stringMatching(/^SEARCH e USING COVERING INDEX job_dependencies_dependency_idx \(dependency_id=\? AND state=\?\)$/));
      expect(plan, sql).toContainEqual(expect.stringMatching(/^SEARCH jobs USING INDEX jobs_dependency_failed_by_idx \(dependency_failed_by=\? AND rowid>\?\)$/));
    }
    for (const step of plan) {
      // The step's own small tables may be read whole: dependency_cascades holds the cascades owed, the batch at most `rows` edges.
      if (/dependency_cascade/.test(step)) continue;
      if (/^SCAN /.test(step) && !/VIRTUAL TABLE|SUBQUERY|^SCAN s$/.test(step)) problems.push(`${step}\n  in: ${sql.replace(/\s+/g, ' ').slice(0, 200)}`);
      if (/USE TEMP B-TREE FOR ORDER BY/.test(step) && /job_dependencies/.test(sql) && /INSERT INTO dependency_cascade_batch/.test(sql)) problems.push(`${step}\n  in: ${sql.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
  }
  expect(problems).toEqual([]);
});
