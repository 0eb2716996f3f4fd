/**
 * The durable counters behind /metrics (drizzle/0006): each one moves on its
 * own transition through the real app, none goes down when retention prunes
 * events or when the server restarts, a known queue reports 0, duplicate
 * executions and once() skips/reruns are counted, and a scraper needs only
 * the read-only token.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { manualClock } from '../../src/core/clock.ts';
import { silentLogger } from '../../src/core/log.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { MIGRATIONS, setup, type TestBed, appOn } from '../support/helpers.ts';
import { lendTodaysShape } from '../support/todays-shape.ts';

const api = '/api/v1';
/** Lease 30 s + grace 10 s + worker-alive 15 s: the reaper takes the job without deferring. */
const PAST_LEASE_OWNER_DEAD = 30_000 + 10_000 + 15_000 + 1;
const TOKENS = { adminToken: 'admin-token-0123456789', workerToken: 'worker-token-0123456789', readonlyToken: 'reader-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}` };

let t: TestBed;
afterEach(() => t?.close());

async function bed(overrides: Partial<Config> = {}) {
  t = await setup(overrides);
  return t;
}

/** Every sample of /metrics as "name{labels}" -> value. */
async function scrape(headers: Record<string, string> = {}, app = t.app): Promise<Map<string, number>> {
  const res = await app.request('/metrics', { headers });
  expect(res.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const total = (samples: Map<string, number>, name: string, labels = 'queue="q"') => samples.get(`${name}{${labels}}`);

async function apiMetrics(queue: string) {
  const res = await t.get(`${api}/metrics`);
  expect(res.status).toBe(200);
  return res.json.queues.find((q: { queue: string }) => q.queue === queue);
}

async function completeOne(queue: string, worker = 'W') {
  const job = await t.enqueue(queue);
  const [c] = await t.claim(queue, worker);
  expect((await t.post(`${api}/jobs/${job.id}/complete`, { workerId: worker, lockToken: c!.lockToken })).status).toBe(200);
  return job;
}

describe('each counter moves on its own transition', () => {
  test('enqueued, claimed, completed, failed, retried, cancelled, reaped by reason, stale writes, enqueue dedup, requeued', async () => {
    await bed();
    const before = await scrape();
    // A new queue reports every counter at 0 from its first enqueue on.
    const first = await t.enqueue('q');
    let s = await scrape();
    expect(before.has('leasehold_jobs_enqueued_total{queue="q"}')).toBe(false);
    expect(total(s, 'leasehold_jobs_enqueued_total')).toBe(1);
    for (const name of ['claimed', 'completed', 'failed', 'cancelled', 'retried']) expect(total(s, `leasehold_jobs_${name}_total`)).toBe(0);

    const [c1] = await t.claim('q', 'W');
    expect(total(await scrape(), 'leasehold_jobs_claimed_total')).toBe(1);
    // A retryable failure: retried, not failed.
    expect((await t.post(`${api}/jobs/${first.id}/fail`, { workerId: 'W', lockToken: c1!.lockToken, error: 'boom' })).status).toBe(200);
    s = await scrape();
    expect([total(s, 'leasehold_jobs_retried_total'), total(s, 'leasehold_jobs_failed_total')]).toEqual([1, 0]);
    t.clock.advance(60_000);
    const [c2] = await t.claim('q', 'W');
    expect((await t.post(`${api}/jobs/${first.id}/fail`, { workerId: 'W', lockToken: c2!.lockToken, error: 'bad input', retryable: false })).status).toBe(200);
    s = await scrape();
    expect([total(s, 'leasehold_jobs_claimed_total'), total(s, 'leasehold_jobs_failed_total'), total(s, 'leasehold_jobs_retried_total')]).toEqual([2, 1, 1]);
    // An operator retry of the failed job counts as a retry.
    expect((await t.post(`${api}/jobs/${first.id}/retry`, { reason: 'fixed' })).status).toBe(200);
    expect(total(await scrape(), 'leasehold_jobs_retried_total')).toBe(2);
    expect((await t.post(`${api}/jobs/${first.id}/cancel`, { reason: 'not needed' })).status).toBe(200);
    expect(total(await scrape(), 'leasehold_jobs_cancelled_total')).toBe(1);

    const done = await completeOne('q');
    s = await scrape();
    expect([total(s, 'leasehold_jobs_enqueued_total'), total(s, 'leasehold_jobs_completed_total')]).toEqual([2, 1]);
    // A stale write: a completion with a token that is not the claim's.
    expect((await t.post(`${api}/jobs/${done.id}/complete`, { workerId: 'W', lockToken: 'f'.repeat(32) })).status).toBe(409);
    expect(total(await scrape(), 'leasehold_stale_writes_rejected_total')).toBe(1);
    // Enqueue dedup: the second enqueue of a key is counted, and is not a new job.
    await t.enqueue('q', { payload: {}, idempotencyKey: 'k' });
    await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' });
    s = await scrape();
    expect([total(s, 'leasehold_enqueue_deduplicated_total'), total(s, 'leasehold_jobs_enqueued_total')]).toEqual([1, 3]);

    // Reaped on the last attempt: reaped (by reason) and failed for good.
    const last = await t.enqueue('q', { payload: {}, maxAttempts: 1 });
    const claimed = await t.claim('q', 'A', { limit: 10 });
    expect(claimed.map((c) => c.id)).toContain(last.id);
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    await t.post(`${api}/reaper/run`, {});
    s = await scrape();
    expect(total(s, 'leasehold_jobs_reaped_total', 'queue="q",reason="attempts_exhausted"')).toBe(1);
    expect(total(s, 'leasehold_jobs_reaped_total', 'queue="q",reason="reaped_due_to_expired_lease"')).toBe(1); // the keyed job
    expect(total(s, 'leasehold_jobs_reaped_total', 'queue="q",reason="deadline_exceeded"')).toBe(0);
    expect(total(s, 'leasehold_jobs_failed_total')).toBe(2);

    // Operator requeues, after expiry and forced.
    t.clock.advance(60_000);
    const [k] = await t.claim('q', 'B');
    expect((await t.post(`${api}/jobs/${k!.id}/requeue`, { force: true, reason: 'stuck' })).status).toBe(200);
    s = await scrape();
    expect(total(s, 'leasehold_jobs_requeued_total', 'queue="q",forced="true"')).toBe(1);
    expect(total(s, 'leasehold_jobs_requeued_total', 'queue="q",forced="false"')).toBe(0);
    expect(t.errors).toEqual([]);
  });

  test('the JSON metrics carry the same totals, named for what they count', async () => {
    await bed();
    await completeOne('q');
    await t.enqueue('q', { payload: {}, idempotencyKey: 'k' });
    await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' });
    const q = await apiMetrics('q');
    expect(q.jobsTotal).toMatchObject({ enqueued: 2, claimed: 1, completed: 1, failed: 0 });
    expect(q.enqueueDeduplicated).toEqual({ total: 1, lastHour: 1, last5m: 1 });
    expect(q.dedupHits).toBeUndefined();
    for (const k of ['duplicateExecutions', 'effectsSkipped', 'effectsRerun']) expect(q[k]).toEqual({ total: 0, lastHour: 0, last5m: 0 });
  });
});

describe('counters never go down', () => {
  test('a prune of every event and job leaves them (and the histograms) as they were; so does a restart on the same file', async () => {
    await bed({ retentionMs: 60_000 });
    for (let i = 0; i < 3; i++) await completeOne('q');
    const stale = await completeOne('q');
    expect((await t.post(`${api}/jobs/${stale.id}/complete`, { workerId: 'W', lockToken: 'f'.repeat(32) })).status).toBe(409);
    const reaped = await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    await t.post(`${api}/reaper/run`, {});
    t.clock.advance(60_000);
    const [c] = await t.claim('q', 'B');
    expect((await t.post(`${api}/jobs/${reaped.id}/complete`, { workerId: 'B', lockToken: c!.lockToken })).status).toBe(200);
    const before = await scrape();

    // Past retention: every job (all finished) goes, with its events.
    t.clock.advance(120_000);
    expect((await t.post(`${api}/reaper/run`, {})).json.pruned).toBe(5);
    expect(Number((await t.client.execute('SELECT count(*) AS n FROM events')).rows[0]!.n)).toBe(0);
    const after = await scrape();
    // The counters and the durable histograms (drizzle/0022) alike.
    const totals = [...before].filter(([k]) => /(_total|_bucket|_sum|_count)\{/.test(k));
    expect(totals.length).toBeGreaterThan(10);
    expect(total(before, 'leasehold_job_runtime_seconds_count')).toBe(5);
    expect(total(before, 'leasehold_job_queue_wait_seconds_count')).toBe(6);
    for (const [k, v] of totals) expect([k, after.get(k)]).toEqual([k, v]);
    expect(total(after, 'leasehold_jobs_completed_total')).toBe(5);
    expect(total(after, 'leasehold_stale_writes_rejected_total')).toBe(1);
    expect(total(after, 'leasehold_duplicate_executions_total')).toBe(1);
    expect(total(after, 'leasehold_jobs_reaped_total', 'queue="q",reason="reaped_due_to_expired_lease"')).toBe(1);

    // A restart: a new connection and app on the same file, migrations applied again.
    t.client.close();
    const reopened = await openLibsql(t.url);
    try {
      await migrateLibsql(reopened, MIGRATIONS);
      const app = appOn({ db: reopened.db, config: t.config, clock: manualClock(), log: silentLogger });
      const restarted = await scrape({}, app);
      for (const [k, v] of totals) expect([k, restarted.get(k)]).toEqual([k, v]);
    } finally {
      reopened.close();
    }
  });

  test('every known queue reports every counter, 0 included, and every gauge', async () => {
    await bed();
    await t.enqueue('idle');
    const s = await scrape();
    const idle = 'queue="idle"';
    for (const name of [
      'leasehold_jobs_enqueued_total', 'leasehold_jobs_claimed_total', 'leasehold_jobs_completed_total', 'leasehold_jobs_failed_total',
      'leasehold_jobs_cancelled_total', 'leasehold_jobs_retried_total', 'leasehold_stale_writes_rejected_total', 'leasehold_enqueue_deduplicated_total',
      'leasehold_duplicate_executions_total', 'leasehold_effects_skipped_total', 'leasehold_effects_rerun_total', 'leasehold_reap_deferred_total',
      'leasehold_expired_leases', 'leasehold_oldest_running_job_age_seconds', 'leasehold_running_jobs',
    ]) {
      expect([name, total(s, name, idle)]).toEqual([name, name === 'leasehold_jobs_enqueued_total' ? 1 : 0]);
    }
    for (const reason of ['reaped_due_to_expired_lease', 'deadline_exceeded', 'lost_too_many_times', 'attempts_exhausted']) {
      expect(total(s, 'leasehold_jobs_reaped_total', `${idle},reason="${reason}"`)).toBe(0);
    }
    expect(total(s, 'leasehold_jobs', `${idle},status="running"`)).toBe(0);
    expect(total(s, 'leasehold_running_jobs_by_heartbeat_lag', `${idle},lag_at_most_seconds="+Inf"`)).toBe(0);
    for (const histogram of ['leasehold_job_runtime_seconds', 'leasehold_job_queue_wait_seconds', 'leasehold_heartbeat_interval_seconds']) {
      expect([histogram, total(s, `${histogram}_bucket`, `${idle},le="+Inf"`), total(s, `${histogram}_count`, idle), total(s, `${histogram}_sum`, idle)]).toEqual([histogram, 0, 0, 0]);
    }
    // Typed honestly: every _total is a counter, the three durable histograms are histograms, the rest gauges.
    const text = await (await t.app.request('/metrics')).text();
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
    const histograms = ['leasehold_job_runtime_seconds', 'leasehold_job_queue_wait_seconds', 'leasehold_heartbeat_interval_seconds'];
    for (const [name, type] of types) expect([name, type]).toEqual([name, name.endsWith('_total') ? 'counter' : histograms.includes(name) ? 'histogram' : 'gauge']);
  });
});

describe('duplicate executions', () => {
  const duplicates = async () => total(await scrape(), 'leasehold_duplicate_executions_total');

  test('a claim after a reap counts once; the claim after that does not', async () => {
    await bed();
    const e = await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`, {})).json.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    expect(await duplicates()).toBe(0); // taken back, not yet run again
    t.clock.advance(60_000);
    const [b] = await t.claim('q', 'B');
    expect(await duplicates()).toBe(1);
    const dup = (await t.events(e.id)).find((x) => x.type === 'duplicate_execution');
    expect(dup).toMatchObject({ reason: 'reaped: reaped_due_to_expired_lease', workerId: 'B' });
    // B fails it (retryable): the next claim is an ordinary retry, not a duplicate.
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'B', lockToken: b!.lockToken, error: 'boom' })).status).toBe(200);
    t.clock.advance(120_000);
    await t.claim('q', 'C');
    expect(await duplicates()).toBe(1);
    expect((await apiMetrics('q')).duplicateExecutions).toEqual({ total: 1, lastHour: 1, last5m: 1 });
    t.clock.advance(5 * 60_000);
    expect((await apiMetrics('q')).duplicateExecutions).toEqual({ total: 1, lastHour: 1, last5m: 0 });
  });

  test('a claim after a forced requeue counts; after a release or a retryable failure it does not', async () => {
    await bed();
    const e = await t.enqueue('q');
    const [a] = await t.claim('q', 'A');
    expect((await t.post(`${api}/jobs/${e.id}/release`, { workerId: 'A', lockToken: a!.lockToken })).status).toBe(200);
    const [a2] = await t.claim('q', 'A');
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'A', lockToken: a2!.lockToken, error: 'boom', retryAfterMs: 0 })).status).toBe(200);
    await t.claim('q', 'A');
    expect(await duplicates()).toBe(0);
    expect((await t.post(`${api}/jobs/${e.id}/requeue`, { force: true, reason: 'operator thinks A hung' })).status).toBe(200);
    expect(await duplicates()).toBe(0);
    await t.claim('q', 'B');
    expect(await duplicates()).toBe(1);
    expect((await t.events(e.id)).filter((x) => x.type === 'duplicate_execution').map((x) => x.reason)).toEqual(['force_requeued_by_operator: operator thinks A hung']);
  });

  test('a job reaped to failed and retried by an operator: its next claim counts', async () => {
    await bed();
    const e = await t.enqueue('q', { payload: {}, maxAttempts: 1 });
    await t.claim('q', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`, {})).json.failed).toEqual([{ id: e.id, reason: 'attempts_exhausted' }]);
    expect((await t.post(`${api}/jobs/${e.id}/retry`, { reason: 'again' })).status).toBe(200);
    await t.claim('q', 'B');
    expect(await duplicates()).toBe(1);
  });

  test('the duplicate_executions alert fires above its threshold, per queue, and the overview shows the hour', async () => {
    await bed();
    const takeBackAndReclaim = async (n: number) => {
      for (let i = 0; i < n; i++) await t.enqueue('q');
      await t.claim('q', 'A', { limit: n });
      t.clock.advance(PAST_LEASE_OWNER_DEAD);
      await t.post(`${api}/reaper/run`, {});
      t.clock.advance(60_000);
      await t.claim('q', 'B', { limit: n });
    };
    const alert = async () => (await t.get(`${api}/alerts`)).json.alerts.find((a: { queue: string; name: string }) => a.queue === 'q' && a.name === 'duplicate_executions');
    await takeBackAndReclaim(5);
    expect(await alert()).toMatchObject({ state: 'ok', value: 5, threshold: 5, unit: 'count' });
    await takeBackAndReclaim(1);
    expect(await alert()).toMatchObject({ state: 'firing', value: 6, threshold: 5 });
    expect((await alert()).message).toContain('6 jobs ran again in 5 minutes');
    // A queue may ask to hear of every one.
    expect((await t.call('PUT', `${api}/queues/q/alerts`, { duplicateExecutionsPer5m: 10 })).status).toBe(200);
    expect(await alert()).toMatchObject({ state: 'ok', threshold: 10, overridden: ['duplicateExecutionsPer5m'] });

    const html = await (await t.app.request('/dashboard')).text();
    const start = html.indexOf('<a href="/dashboard/jobs?queue=q">q</a>');
    expect(html.slice(start, html.indexOf('</tr>', start))).toMatch(/<td class="warn duplicates"[^>]*>6<\/td>/);
    expect(html).toContain('<th>Duplicate runs (1 h)</th>');
  });
});

describe('once() effects', () => {
  test('skipped when recorded done, run again when started and never recorded', async () => {
    await bed();
    const e = await t.enqueue('q');
    const [a] = await t.claim('q', 'A');
    const effect = (worker: string, lockToken: string, key: string) => t.post(`${api}/jobs/${e.id}/effects/start`, { workerId: worker, lockToken, key });
    // "charge" runs and is recorded; "email" starts and A dies before recording it.
    expect((await effect('A', a!.lockToken, 'charge')).json).toEqual({ state: 'run' });
    expect((await t.post(`${api}/jobs/${e.id}/effects/finish`, { workerId: 'A', lockToken: a!.lockToken, key: 'charge', result: 'ch_1' })).status).toBe(200);
    expect((await effect('A', a!.lockToken, 'email')).json).toEqual({ state: 'run' });
    // A start sent twice by the same claim (a retried request) is not a rerun.
    expect((await effect('A', a!.lockToken, 'email')).json).toEqual({ state: 'run' });
    let q = await apiMetrics('q');
    expect([q.effectsSkipped.total, q.effectsRerun.total]).toEqual([0, 0]);

    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    await t.post(`${api}/reaper/run`, {});
    t.clock.advance(60_000);
    const [b] = await t.claim('q', 'B');
    expect((await effect('B', b!.lockToken, 'charge')).json).toEqual({ state: 'done', result: 'ch_1' });
    expect((await effect('B', b!.lockToken, 'email')).json).toEqual({ state: 'run' });
    q = await apiMetrics('q');
    expect([q.effectsSkipped.total, q.effectsRerun.total]).toEqual([1, 1]);
    const s = await scrape();
    expect([total(s, 'leasehold_effects_skipped_total'), total(s, 'leasehold_effects_rerun_total')]).toEqual([1, 1]);
    const events = (await t.events(e.id)).filter((x) => x.type.startsWith('effect_'));
    expect(events.map((x) => [x.type, x.reason, x.workerId])).toEqual([
      ['effect_skipped', 'charge', 'B'],
      ['effect_rerun', 'email', 'B'],
    ]);
  });
});

describe('who may read the metrics', () => {
  test('/metrics: the read-only or admin token 200, the worker token 403, none or a wrong one 401', async () => {
    await bed(TOKENS);
    await t.post(`${api}/queues/q/jobs`, { payload: {} }, admin);
    const get = (path: string, token?: string) => t.get(path, token ? { authorization: `Bearer ${token}` } : {});
    for (const path of ['/metrics', `${api}/metrics`, `${api}/alerts`, `${api}/tuning`]) {
      expect([path, (await get(path, TOKENS.readonlyToken)).status]).toEqual([path, 200]);
      expect([path, (await get(path, TOKENS.adminToken)).status]).toEqual([path, 200]);
      const worker = await get(path, TOKENS.workerToken);
      expect([path, worker.status, worker.json?.error?.code]).toEqual([path, 403, 'forbidden']);
      expect(worker.json.error.message).toContain('read-only or admin token');
      expect([path, (await get(path)).status]).toEqual([path, 401]);
      expect([path, (await get(path, 'not-a-token-of-anyone-here')).status]).toEqual([path, 401]);
    }
    expect((await get('/metrics', TOKENS.readonlyToken)).text).toContain('leasehold_jobs_enqueued_total{queue="q"} 1');
    // The read-only token reads metrics, nothing else of the API.
    const queues = await get(`${api}/queues`, TOKENS.readonlyToken);
    expect([queues.status, queues.json.error.code]).toEqual([403, 'forbidden']);
    expect((await t.post(`${api}/reaper/run`, {}, { authorization: `Bearer ${TOKENS.readonlyToken}` })).status).toBe(403);
    expect((await t.post(`${api}/queues/q/claim`, { workerId: 'w' }, { authorization: `Bearer ${TOKENS.readonlyToken}` })).status).toBe(403);
  });
});

describe('the migration that adds the durable counters', () => {
  test('backfills them from the retained events and flags jobs taken back but not run since', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-migrate-'));
    try {
      const before = join(dir, 'before');
      mkdirSync(join(before, 'meta'), { recursive: true });
      const journal = JSON.parse(readFileSync(join(MIGRATIONS, 'meta', '_journal.json'), 'utf8'));
      journal.entries = journal.entries.filter((e: { tag: string }) => e.tag < '0006');
      writeFileSync(join(before, 'meta', '_journal.json'), JSON.stringify(journal));
      for (const e of journal.entries as { tag: string }[]) copyFileSync(join(MIGRATIONS, `${e.tag}.sql`), join(before, `${e.tag}.sql`));
      expect(readdirSync(before).some((f) => f.startsWith('0006'))).toBe(false);

      const o = await openLibsql(`file:${join(dir, 'old.db')}`);
      try {
        await migrateLibsql(o, before);
        // Today's app also writes the columns of later migrations (0007's instance
        // ids): add them for the replay and drop them again below, so the
        // migration runs on the schema a pre-0006 server had.
        // (And 0012's queue limits and uniqueness windows, 0015's enqueued_by, 0021's occurrence columns, 0023's trace context.)
        const LATER_COLUMNS = [
          ['jobs', 'locked_by_instance', 'text'], ['jobs', 'enqueued_by', 'text'], ['jobs', 'schedule_name', 'text'], ['jobs', 'occurrence_at', 'integer'], ['workers', 'instance_id', 'text'], ['workers', 'restarts', 'integer DEFAULT 0 NOT NULL'],
          ['jobs', 'unique_while', "text DEFAULT 'retained' NOT NULL"], ['queues', 'max_running', 'integer'], ['queues', 'rate_max', 'integer'],
          ['queues', 'rate_window_ms', 'integer'], ['queues', 'rate_window_start', 'integer'], ['queues', 'rate_claims', 'integer DEFAULT 0 NOT NULL'],
          ['jobs', 'claim_id', 'text'], ['jobs', 'finished_token', 'text'], ['jobs', 'finished_write', 'text'],
          ['jobs', 'trace_parent', 'text'], ['jobs', 'trace_state', 'text'],
          ['jobs', 'on_lost', 'text'], ['jobs', 'held_at', 'integer'], ['jobs', 'held_attempt', 'text'], ['queues', 'on_lost', 'text'],
        ];
        for (const [table, column, type] of LATER_COLUMNS) await o.client.execute(`ALTER TABLE ${table} ADD ${column} ${type}`);
        // Today's enqueue names 0012's two key indexes as its conflict targets.
        const LATER_INDEXES = [
          `CREATE UNIQUE INDEX later_retained_key ON jobs (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND unique_while = 'retained'`,
          `CREATE UNIQUE INDEX later_active_key ON jobs (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND status IN ('pending', 'running')`,
        ];
        for (const statement of LATER_INDEXES) await o.client.execute(statement);
        // Today's reaper and requeue read 0018's hold (no row: no hold in force).
        await o.client.execute('CREATE TABLE reaper_hold (id integer PRIMARY KEY, hold_until integer NOT NULL, began_at integer NOT NULL, gap_ms integer, cause text NOT NULL)');
        // Today's enqueue counts the queues in use, schedules (0012) included.
        await o.client.execute('CREATE TABLE schedules (name text PRIMARY KEY NOT NULL, queue_name text NOT NULL)');
        // Today's claim and completion add their tallies through 0026's views (the completion's with 0038's columns; the counts they feed came later than this schema).
        await o.client.execute(`CREATE VIEW claim_tallies AS SELECT '' AS queue_name, 0 AS jobs, 0 AS at WHERE 0`);
        await o.client.execute('CREATE TRIGGER later_claim_tallies INSTEAD OF INSERT ON claim_tallies BEGIN SELECT 1; END');
        await o.client.execute(`CREATE VIEW completion_tallies AS SELECT '' AS queue_name, 0 AS jobs, 0 AS runtime_le_ms, 0 AS runtime_sum_ms, 0 AS silence_ms, 0 AS minute_at WHERE 0`);
        await o.client.execute('CREATE TRIGGER later_completion_tallies INSTEAD OF INSERT ON completion_tallies BEGIN SELECT 1; END');
        // And whatever later migrations added besides (groups, dependencies, dead letters, schedule policies...).
        const giveBack = await lendTodaysShape(o.client);
        // Today's claim looks for jobs without a group while the kept pending count
        // (0014's, kept by triggers this schema lacks) exceeds the grouped ones: stand in for it.
        await o.client.execute("INSERT INTO live_counts (queue_name, status, jobs) VALUES ('q', 'pending', 1000)");
        // An old server's life, through the app: 2 completed, one reaped and claimed again,
        // one reaped and not yet claimed, one stale write, one enqueue dedup.
        const clock = manualClock();
        const old = appOn({ db: o.db, config: defaultConfig({ databaseUrl: 'file:old' }), clock, log: silentLogger });
        const post = async (path: string, body: unknown) => (await old.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
        const ids: string[] = [];
        for (let i = 0; i < 4; i++) ids.push((await post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: `k${i}` })).job.id);
        await post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k0' });
        const claimed = (await post(`${api}/queues/q/claim`, { workerId: 'A', limit: 2 })).jobs;
        for (const c of claimed) await post(`${api}/jobs/${c.id}/complete`, { workerId: 'A', lockToken: c.lockToken });
        // Another result from a finished claim: a stale write (the same completion again would be a repeat, answered as stored).
        await post(`${api}/jobs/${claimed[0].id}/complete`, { workerId: 'A', lockToken: claimed[0].lockToken, result: 'again' });
        await post(`${api}/queues/q/claim`, { workerId: 'B', limit: 2 });
        clock.advance(PAST_LEASE_OWNER_DEAD);
        await post(`${api}/reaper/run`, {});
        clock.advance(60_000);
        await post(`${api}/queues/q/claim`, { workerId: 'C', limit: 1 });

        await giveBack();
        for (const index of ['later_retained_key', 'later_active_key']) await o.client.execute(`DROP INDEX ${index}`);
        await o.client.execute('DROP TABLE reaper_hold');
        await o.client.execute('DROP TABLE schedules');
        await o.client.execute('DROP VIEW claim_tallies');
        await o.client.execute('DROP VIEW completion_tallies');
        for (const [table, column] of LATER_COLUMNS) await o.client.execute(`ALTER TABLE ${table} DROP COLUMN ${column}`);
        await migrateLibsql(o, MIGRATIONS);
        const rows = async (q: string) => (await o.client.execute(q)).rows.map((r) => Object.values(r).join(':'));
        expect(await rows(`SELECT name, label, value FROM counters WHERE queue_name = 'q' ORDER BY 1, 2`)).toEqual([
          'claimed::5',
          'completed::2',
          'duplicate_execution::1',
          'enqueue_deduplicated::1',
          'enqueued::4',
          'reaped:reaped_due_to_expired_lease:2',
          'stale_write_rejected::1',
        ]);
        // The reaped job nobody claimed since: its next claim is a duplicate.
        expect(await rows(`SELECT taken_back FROM jobs WHERE taken_back IS NOT NULL`)).toEqual(['reaped: reaped_due_to_expired_lease']);
        const app = appOn({ db: o.db, config: defaultConfig({ databaseUrl: 'file:old' }), clock, log: silentLogger });
        await app.request(`${api}/queues/q/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workerId: 'D' }) });
        expect(await rows(`SELECT value FROM counters WHERE name = 'duplicate_execution'`)).toEqual(['2']);
      } finally {
        o.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
