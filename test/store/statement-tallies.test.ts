/**
 * A claim's counts and a completion's are added once per statement
 * (drizzle/0026): the claim_tallies view after the claim, with changes(),
 * adds the claimed counter, the pending -> running move of the live counts
 * and the rate window's claims; the completion_tallies view, read with the
 * completion's guard right before it, adds the completed counter and
 * finished count and the running -> completed move. Each shape must add
 * exactly what it moved: a claim of 200, a claim the rate limit or
 * max_running cuts short, a claim that takes nothing, a claim sent again
 * (its jobs renewed, none moved), the claim that rides on a completion, a
 * completion batch that partly fails its guard, names a job twice, spans two
 * queues or is sent again. And a database migrated from 0025 keeps exact
 * counts, before and after its first claims and completions.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { jobsCompleteIfOwned } from '../../src/db/store/finish.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { manualClock } from '../../src/core/clock.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { appOn, MIGRATIONS, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed | undefined;
const opened: OpenedDb[] = [];
afterEach(() => {
  if (t) expect(t.errors).toEqual([]);
  t?.close();
  t = undefined;
  for (const o of opened.splice(0)) o.close();
});

type Client = OpenedDb['client'];

/** The kept counts a claim touches, and the same read from the jobs and events themselves. */
async function keptAndCounted(client: Client, queue: string) {
  const one = async (sql: string) => Number((await client.execute({ sql, args: [queue] })).rows[0]?.n ?? 0);
  return {
    kept: {
      claimed: await one(`SELECT value AS n FROM counters WHERE queue_name = ? AND name = 'claimed' AND label = ''`),
      pending: await one(`SELECT jobs AS n FROM live_counts WHERE queue_name = ? AND status = 'pending'`),
      running: await one(`SELECT jobs AS n FROM live_counts WHERE queue_name = ? AND status = 'running'`),
      completed: await one(`SELECT value AS n FROM counters WHERE queue_name = ? AND name = 'completed' AND label = ''`),
      finished: await one(`SELECT jobs AS n FROM finished_counts WHERE queue_name = ? AND status = 'completed'`),
      minutes: await one(`SELECT sum(completed) AS n FROM queue_minutes WHERE queue_name = ?`),
    },
    counted: {
      claimed: await one(`SELECT count(*) AS n FROM events WHERE queue_name = ? AND type = 'claimed'`),
      pending: await one(`SELECT count(*) AS n FROM jobs WHERE queue_name = ? AND status = 'pending'`),
      running: await one(`SELECT count(*) AS n FROM jobs WHERE queue_name = ? AND status = 'running'`),
      completed: await one(`SELECT count(*) AS n FROM jobs WHERE queue_name = ? AND status = 'completed'`),
      finished: await one(`SELECT count(*) AS n FROM jobs WHERE queue_name = ? AND status = 'completed'`),
      minutes: await one(`SELECT count(*) AS n FROM jobs WHERE queue_name = ? AND status = 'completed'`),
    },
  };
}

/** The kept counts, checked against the recount; answered as { claimed, pending, running, completed }. */
async function expectExact(client: Client, queue: string) {
  const { kept, counted } = await keptAndCounted(client, queue);
  expect(kept).toEqual(counted);
  const { claimed, pending, running, completed } = kept;
  return { claimed, pending, running, completed };
}

const rateClaims = async (client: Client, queue: string) =>
  Number((await client.execute({ sql: 'SELECT rate_claims AS n FROM queues WHERE name = ?', args: [queue] })).rows[0]?.n);

async function enqueueMany(bed: TestBed, queue: string, n: number) {
  const res = await bed.post(`${api}/queues/${queue}/jobs`, { jobs: Array.from({ length: n }, (_, i) => ({ payload: i })) });
  expect(res.status).toBe(201);
}

test('a claim of 200 adds 200 once; a claim that finds nothing adds nothing and writes no counter row', async () => {
  t = await setup({ maxClaimBatch: 500 });
  const empty = await t.claim('q', 'w', { limit: 50 });
  expect(empty).toEqual([]);
  expect((await t.client.execute(`SELECT count(*) AS n FROM counters WHERE name = 'claimed'`)).rows[0]!.n).toBe(0);

  await enqueueMany(t, 'q', 250);
  await enqueueMany(t, 'other', 3);
  expect(await t.claim('q', 'w', { limit: 200 })).toHaveLength(200);
  expect(await expectExact(t.client, 'q')).toEqual({ claimed: 200, pending: 50, running: 200, completed: 0 });
  // Another queue's counts are not touched by this queue's claim.
  expect(await expectExact(t.client, 'other')).toEqual({ claimed: 0, pending: 3, running: 0, completed: 0 });
  expect(await t.claim('q', 'w', { limit: 200 })).toHaveLength(50);
  expect(await expectExact(t.client, 'q')).toEqual({ claimed: 250, pending: 0, running: 250, completed: 0 });
});

test('a claim the rate limit or max_running cuts short counts only the jobs it took, in the window it took them', async () => {
  t = await setup({ maxClaimBatch: 500 });
  t.clock.set(Date.UTC(2030, 0, 1, 12, 0, 0));
  await enqueueMany(t, 'r', 300);
  expect((await t.call('PATCH', `${api}/queues/r/settings`, { rateLimit: { max: 150, windowMs: 60_000 } })).status).toBe(200);
  expect(await t.claim('r', 'w', { limit: 200 })).toHaveLength(150);
  expect(await rateClaims(t.client, 'r')).toBe(150);
  expect(await t.claim('r', 'w', { limit: 200 })).toHaveLength(0);
  expect(await rateClaims(t.client, 'r')).toBe(150);
  expect(await expectExact(t.client, 'r')).toEqual({ claimed: 150, pending: 150, running: 150, completed: 0 });
  // The next window counts from the claims made in it.
  t.clock.advance(60_000);
  expect(await t.claim('r', 'w', { limit: 40 })).toHaveLength(40);
  expect(await rateClaims(t.client, 'r')).toBe(40);
  expect(await expectExact(t.client, 'r')).toEqual({ claimed: 190, pending: 110, running: 190, completed: 0 });

  await enqueueMany(t, 'm', 30);
  expect((await t.call('PATCH', `${api}/queues/m/settings`, { maxRunning: 12 })).status).toBe(200);
  expect(await t.claim('m', 'w', { limit: 100 })).toHaveLength(12);
  expect(await expectExact(t.client, 'm')).toEqual({ claimed: 12, pending: 18, running: 12, completed: 0 });
});

test('a claim sent again answers its jobs and moves none; the claim riding on a completion counts what it took', async () => {
  t = await setup({ maxClaimBatch: 500 });
  await enqueueMany(t, 'q', 120);
  const first = await t.claim('q', 'w', { limit: 100, claimId: 'c1' });
  expect(first).toHaveLength(100);
  const again = await t.claim('q', 'w', { limit: 100, claimId: 'c1' });
  expect(again.map((j) => j.id).sort()).toEqual(first.map((j) => j.id).sort());
  expect(await expectExact(t.client, 'q')).toEqual({ claimed: 100, pending: 20, running: 100, completed: 0 });

  // 60 completed, 20 claimed in the same transaction (all that is left), and
  // the same completion sent again: repeats, and a replayed claim.
  const body = { workerId: 'w', results: first.slice(0, 60).map((j) => ({ id: j.id, lockToken: j.lockToken })), claim: { queue: 'q', limit: 60, claimId: 'c2' } };
  const done = await t.post(`${api}/completions`, body);
  expect(done.status).toBe(200);
  expect(done.json.jobs).toHaveLength(20);
  expect(await expectExact(t.client, 'q')).toEqual({ claimed: 120, pending: 0, running: 60, completed: 60 });
  const repeated = await t.post(`${api}/completions`, body);
  expect(repeated.status).toBe(200);
  expect(repeated.json.jobs).toHaveLength(20);
  expect(await expectExact(t.client, 'q')).toEqual({ claimed: 120, pending: 0, running: 60, completed: 60 });
});

test('a completion batch counts only the jobs its guard let through, once each, per queue', async () => {
  t = await setup({ maxClaimBatch: 500 });
  await enqueueMany(t, 'a', 10);
  await enqueueMany(t, 'b', 10);
  const a = await t.claim('a', 'w', { limit: 10 });
  const b = await t.claim('b', 'w', { limit: 10 });
  const other = await t.claim('b', 'x', { limit: 1 });
  expect(other).toEqual([]);
  const ref = (j: { id: string; lockToken: string }) => ({ id: j.id, lockToken: j.lockToken });
  const results = [
    ...a.slice(0, 4).map(ref),
    { id: a[5]!.id, lockToken: 'f'.repeat(32) }, // a stale token: refused
    ...b.slice(0, 3).map(ref),
  ];
  const done = await t.post(`${api}/completions`, { workerId: 'w', results });
  expect(done.status).toBe(200);
  expect(await expectExact(t.client, 'a')).toEqual({ claimed: 10, pending: 0, running: 6, completed: 4 });
  expect(await expectExact(t.client, 'b')).toEqual({ claimed: 10, pending: 0, running: 7, completed: 3 });
  // The API refuses a job named twice; the store, called directly, counts it once.
  const twice = [a[4]!, a[4]!].map((j) => ({ id: Number(j.id), lockToken: j.lockToken }));
  expect((await jobsCompleteIfOwned(t.db, { workerId: 'w', results: twice, now: t.clock.now() })).filter((o) => o.ok)).toHaveLength(2);
  expect(await expectExact(t.client, 'a')).toEqual({ claimed: 10, pending: 0, running: 5, completed: 5 });
  // Another worker's completion of a's jobs: refused, nothing counted.
  expect((await t.post(`${api}/completions`, { workerId: 'x', results: a.slice(6).map(ref) })).status).toBe(200);
  expect(await expectExact(t.client, 'a')).toEqual({ claimed: 10, pending: 0, running: 5, completed: 5 });
  // A single completion, and the same one sent again (a repeat: counted once).
  for (let i = 0; i < 2; i++) expect((await t.post(`${api}/jobs/${a[9]!.id}/complete`, { workerId: 'w', lockToken: a[9]!.lockToken })).status).toBe(200);
  expect(await expectExact(t.client, 'a')).toEqual({ claimed: 10, pending: 0, running: 4, completed: 6 });
});

test('a database at 0025 with jobs in every status keeps exact counts through the migration and its first claims', async () => {
  // drizzle/ up to 0025, as a server before this change had it.
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-drizzle-0025-'));
  cpSync(MIGRATIONS, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= 25);
  writeFileSync(journalPath, JSON.stringify(journal));
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-claim-tallies-'));
  const o = await openLibsql(`file:${join(dir, 'x.db')}`);
  opened.push(o);
  await migrateLibsql(o, folder);

  // Jobs in every status and a rate window in use, written as 0025's triggers count them.
  await o.client.execute(`INSERT INTO queues (name, rate_max, rate_window_ms, rate_window_start, rate_claims, created_at, updated_at) VALUES ('q', 1000, 60000, 0, 0, 0, 0)`);
  const statuses = ['pending', 'pending', 'pending', 'pending', 'running', 'running', 'completed', 'failed', 'cancelled'];
  for (const [i, status] of statuses.entries()) {
    await o.client.execute({
      sql: `INSERT INTO jobs (queue_name, payload, max_attempts, status, available_at, last_event_actor, created_at, updated_at) VALUES ('q', '{}', 5, 'pending', ?1, 'old', 0, 0)`,
      args: [i === 3 ? 600_000 : 0],
    });
    if (status === 'pending') continue;
    await o.client.execute({
      sql: `UPDATE jobs SET status = 'running', started_at = 1000, last_heartbeat_at = 1000, lock_token = 't', locked_by = 'old', lease_ms = 30000, lease_expires_at = 31000, attempt_count = 1,
              last_event = 'claimed', last_event_actor = 'old', updated_at = 1000 WHERE id = ?`,
      args: [i + 1],
    });
    if (status === 'running') continue;
    await o.client.execute({
      sql: `UPDATE jobs SET status = ?2, finished_at = 2000, completed_at = CASE WHEN ?2 = 'completed' THEN 2000 END, failed_at = CASE WHEN ?2 = 'failed' THEN 2000 END,
              cancelled_at = CASE WHEN ?2 = 'cancelled' THEN 2000 END, lock_token = NULL, locked_by = NULL, lease_ms = NULL, lease_expires_at = NULL,
              last_event = ?2, updated_at = 2000 WHERE id = ?1`,
      args: [i + 1, status],
    });
  }
  const before = await expectExact(o.client, 'q');
  expect(before).toEqual({ claimed: 5, pending: 4, running: 2, completed: 1 });
  expect(await rateClaims(o.client, 'q')).toBe(5);
  o.close();
  opened.pop();

  // Today's migrations on the same file, then today's server claims.
  const url = `file:${join(dir, 'x.db')}`;
  const reopened = await openLibsql(url);
  opened.push(reopened);
  await migrateLibsql(reopened, MIGRATIONS);
  expect(await expectExact(reopened.client, 'q')).toEqual(before);
  reopened.close();
  opened.pop();

  const live = await openLibsql(url);
  opened.push(live);
  const clock = manualClock();
  clock.set(10_000);
  const app = appOn({ db: live.db, config: defaultConfig({ databaseUrl: url }), clock, log: silentLogger });
  const res = await app.request(`${api}/queues/q/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workerId: 'new', limit: 10 }) });
  expect(res.status).toBe(200);
  // Three due (the fourth is delayed ten minutes).
  const { jobs } = (await res.json()) as { jobs: { id: string; lockToken: string }[] };
  expect(jobs).toHaveLength(3);
  expect(await expectExact(live.client, 'q')).toEqual({ claimed: 8, pending: 1, running: 5, completed: 1 });
  const done = await app.request(`${api}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workerId: 'new', results: jobs.slice(0, 2).map((j) => ({ id: j.id, lockToken: j.lockToken })) }),
  });
  expect(done.status).toBe(200);
  expect(await expectExact(live.client, 'q')).toEqual({ claimed: 8, pending: 1, running: 3, completed: 3 });
  // The same rate window as the old server's five claims (at 1 s; this one at 10 s).
  expect(await rateClaims(live.client, 'q')).toBe(8);
});
