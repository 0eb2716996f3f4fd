/**
 * A database made by the previous release (test/support/fixtures/release-2026-12-05.md
 * says how), with every feature in use and live leases, upgraded in place by
 * this release's migrations: nothing is lost or changes meaning, the live
 * worker keeps its leases (its heartbeat and completion are accepted with the
 * tokens it was given before the upgrade), and every feature goes on working
 * on the upgraded rows.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { manualClock } from '../../src/core/clock.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { MIGRATIONS, recordingLogger } from '../support/helpers.ts';

const FIXTURES = join(import.meta.dirname, '..', 'support', 'fixtures');
const made = JSON.parse(readFileSync(join(FIXTURES, 'release-2026-12-05.json'), 'utf8')) as {
  now: number;
  held: string;
  live: { id: string; lockToken: string }[];
  liveWorker: string;
  waitingFlow: string[];
  failedFlow: string[];
  deadLettered: string;
  retrying: string;
};

let opened: OpenedDb | undefined;
let dir: string | undefined;
afterEach(() => {
  opened?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  opened = undefined;
});

/** What a reader relies on, read with plain SQL so the same read works before and after the upgrade. */
async function facts(o: OpenedDb) {
  const rows = async (sql: string) => (await o.client.execute(sql)).rows.map((r) => Object.values(r).map((v) => (typeof v === 'bigint' ? Number(v) : v)));
  return {
    jobs: await rows(`SELECT id, queue_name, status, attempt_count, lock_token, locked_by, lease_expires_at, deadline_at, available_at, held_at,
      dependencies_unmet, dependency_failed_by, dead_letter_queue, idempotency_key, group_key, last_error, result FROM jobs ORDER BY id`),
    events: await rows(`SELECT id, job_id, type, reason, actor FROM events ORDER BY id`),
    counters: await rows(`SELECT queue_name, name, label, value FROM counters ORDER BY 1, 2, 3`),
    live: await rows(`SELECT queue_name, status, jobs FROM live_counts WHERE jobs <> 0 ORDER BY 1, 2`),
    finished: await rows(`SELECT queue_name, status, jobs FROM finished_counts WHERE jobs <> 0 ORDER BY 1, 2`),
    groups: await rows(`SELECT queue_name, group_key, pending, running FROM job_groups ORDER BY 1, 2`),
    links: await rows(`SELECT dependent_id, dependency_id, state FROM job_dependencies ORDER BY 1, 2`),
    histograms: await rows(`SELECT queue_name, name, le_ms, count, sum_ms FROM histogram_buckets ORDER BY 1, 2, 3`),
    schedules: await rows(`SELECT name, queue_name FROM schedules ORDER BY 1`),
    workers: await rows(`SELECT id FROM workers ORDER BY 1`),
  };
}

test('the previous release\'s database upgrades in place: nothing lost or changed, live leases kept, every feature working', async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-upgrade-'));
  const file = join(dir, 'leasehold.db');
  copyFileSync(join(FIXTURES, 'release-2026-12-05.db'), file);
  opened = await openLibsql(`file:${file}`);
  const before = await facts(opened);
  expect(before.jobs.length).toBeGreaterThan(50);

  const migrationsBefore = Number((await opened.client.execute('SELECT count(*) AS n FROM __drizzle_migrations')).rows[0]!.n);
  await migrateLibsql(opened, MIGRATIONS);
  const migrationsAfter = Number((await opened.client.execute('SELECT count(*) AS n FROM __drizzle_migrations')).rows[0]!.n);
  expect(migrationsAfter).toBeGreaterThan(migrationsBefore);
  expect(await facts(opened)).toEqual(before);

  const clock = manualClock(made.now + 60_000);
  const errors: unknown[] = [];
  const engine = createEngine({ store: createStore(opened.db), config: defaultConfig({ databaseUrl: `file:${file}` }), clock, log: recordingLogger([], errors) });
  const app = createApp({ engine });
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await app.request(url, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const api = '/api/v1';

  // The live worker's leases: renewed, then completed, with the tokens it got before the upgrade.
  const beat = await call('POST', `${api}/heartbeats`, { workerId: made.liveWorker, leases: made.live.map((l) => ({ id: l.id, lockToken: l.lockToken })) });
  expect(beat.status).toBe(200);
  expect(beat.json.results.map((r: { ok: boolean }) => r.ok)).toEqual(made.live.map(() => true));
  const done = await call('POST', `${api}/completions`, { workerId: made.liveWorker, results: made.live.map((l) => ({ id: l.id, lockToken: l.lockToken, result: 'after upgrade' })) });
  expect(done.json.results.map((r: { ok: boolean }) => r.ok)).toEqual(made.live.map(() => true));

  // The held job is still held, and runs once more when released.
  expect((await call('GET', `${api}/jobs/${made.held}`)).json.job.heldAt).not.toBeNull();
  expect((await call('POST', `${api}/jobs/${made.held}/held/release`, { reason: 'after the upgrade' })).status).toBe(200);
  const [held] = (await call('POST', `${api}/queues/pay/claim`, { workerId: 'w', limit: 5 })).json.jobs;
  expect(held).toMatchObject({ id: made.held, attempt: 2 });

  // The waiting flow goes on: its root completes, then its middle job is claimable, then its last.
  const [root, middle, last] = made.waitingFlow;
  const [r] = (await call('POST', `${api}/queues/step-a/claim`, { workerId: 'w', limit: 5 })).json.jobs;
  expect(r.id).toBe(root);
  expect((await call('POST', `${api}/jobs/${r.id}/complete`, { workerId: 'w', lockToken: r.lockToken })).status).toBe(200);
  const [m] = (await call('POST', `${api}/queues/step-b/claim`, { workerId: 'w', limit: 5 })).json.jobs.map((j: { id: string; lockToken: string }) => j);
  expect(m.id).toBe(middle);
  expect((await call('POST', `${api}/jobs/${m.id}/complete`, { workerId: 'w', lockToken: m.lockToken })).status).toBe(200);
  expect((await call('POST', `${api}/queues/step-b/claim`, { workerId: 'w', limit: 5 })).json.jobs.map((j: { id: string }) => j.id)).toEqual([last]);
  // The failed flow stays failed, and a retry of its root undoes the cascade (in steps).
  expect((await call('GET', `${api}/jobs/${made.failedFlow[1]}`)).json.job.status).toBe('failed');
  expect((await call('POST', `${api}/jobs/${made.failedFlow[0]}/retry`, { reason: 'restocked' })).status).toBe(200);
  await engine.maintenancePass(clock.now());
  expect((await call('GET', `${api}/jobs/${made.failedFlow[1]}`)).json.job.status).toBe('pending');

  // Groups: the claim takes turns across the due groups, never the delayed one, until it comes due.
  const grouped = (await call('POST', `${api}/queues/grouped/claim`, { workerId: 'w', limit: 3 })).json.jobs as { group: string }[];
  expect(new Set(grouped.map((j) => j.group)).size).toBe(3);
  expect(grouped.some((j) => j.group === 'tenant-later')).toBe(false);
  clock.advance(3_600_000);
  const due = (await call('POST', `${api}/queues/grouped/claim`, { workerId: 'w', limit: 50 })).json.jobs as { group: string }[];
  expect(due.filter((j) => j.group === 'tenant-later')).toHaveLength(4);

  // Dead letters, the debounced key, the schedule: as they were.
  expect((await call('GET', `${api}/jobs/${made.deadLettered}`)).json.job).toMatchObject({ status: 'failed', deadLetterQueue: 'mail-dead' });
  const again = await call('POST', `${api}/queues/search/jobs`, { payload: 9, idempotencyKey: 'reindex', uniqueWhile: 'debounce', debounceMs: 60_000 });
  expect(again.json).toMatchObject({ replaced: true });
  expect((await call('GET', `${api}/schedules/nightly`)).status).toBe(200);

  // The kept counts still agree with the rows.
  const counted = await opened.client.execute(`SELECT queue_name, status, count(*) AS n FROM jobs WHERE status IN ('pending', 'running') GROUP BY 1, 2 ORDER BY 1, 2`);
  const kept = await opened.client.execute(`SELECT queue_name, status, jobs AS n FROM live_counts WHERE jobs <> 0 ORDER BY 1, 2`);
  expect(kept.rows.map((r) => [r.queue_name, r.status, Number(r.n)])).toEqual(counted.rows.map((r) => [r.queue_name, r.status, Number(r.n)]));
  engine.close();
  expect(errors).toEqual([]);
});
