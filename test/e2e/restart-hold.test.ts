/**
 * A real server is stopped past lease + grace while a worker holds jobs, and
 * started again on the same database file. Right after the restart, workers
 * that were alive have had no chance to renew through it, so nothing may take
 * a lease that ran out during the outage: not a non-forced requeue of one
 * job, not a bulk requeue, not POST /reaper/run (the moment operators
 * mass-requeue). The restarted server writes its hold to the database before
 * it answers anyone, so every path sees it, with when it ends. Force, with a
 * reason, still takes a job and says it overrode the hold. Once the hold is
 * over, each path takes its job.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

// Hold = heartbeat + grace = 4.5 s. The second server's own timer ticks only
// once a minute, so what takes the jobs after the hold is the operator's
// call under test, not that timer.
const T = { lease: 3_000, heartbeat: 1_500, grace: 3_000, alive: 1_500 };
const env = (intervalMs: number) => ({
  LEASEHOLD_LEASE_MS: String(T.lease),
  LEASEHOLD_HEARTBEAT_MS: String(T.heartbeat),
  LEASEHOLD_GRACE_MS: String(T.grace),
  LEASEHOLD_WORKER_ALIVE_MS: String(T.alive),
  LEASEHOLD_MAX_REAP_DEFER_MS: '1000',
  LEASEHOLD_REAPER_INTERVAL_MS: String(intervalMs),
});

let dir: string;
let servers: ServerProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-restart-'));
});
afterEach(async () => {
  for (const s of servers) s.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  servers = [];
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const getJson = async (url: string) => (await (await fetch(url)).json()) as any;

test('right after a restart, a plain requeue, a bulk requeue and POST /reaper/run leave leases that ran out during the outage alone; force does not; after the hold they take them', async () => {
  const database = ['--database-url', `file:${join(dir, 'q.db')}`];
  const first = await startServerProcess(database, env(200));
  servers.push(first);
  for (let i = 0; i < 4; i++) expect((await postJson(`${first.url}/api/v1/queues/q/jobs`, { payload: i })).status).toBe(201);
  const claimed = (await postJson(`${first.url}/api/v1/queues/q/claim`, { workerId: 'cut-off', limit: 4 })).json.jobs as { id: string }[];
  const [single, bulk, run, forced] = claimed.map((j) => j.id) as [string, string, string, string];

  first.child.kill('SIGKILL');
  await first.exited;
  // The outage: every lease runs out, past its grace, and the worker stops looking alive.
  await sleep(T.lease + T.grace + T.alive + 500);

  const second = await startServerProcess(database, env(60_000));
  servers.push(second);
  const url = `${second.url}/api/v1`;

  const refused = await postJson(`${url}/jobs/${single}/requeue`, { reason: 'mass requeue after the restart' });
  expect(refused.status).toBe(409);
  expect(refused.json.error.message).toMatch(/the reaper would not take it back now: the server just started: owners get [\d.]+ s more to renew \(the hold ends at \S+Z\)/);
  const heldUntil = Date.parse(refused.json.error.heldUntil);
  expect(heldUntil).toBeGreaterThan(Date.now());

  const bulkAnswer = await postJson(`${url}/queues/q/bulk`, { action: 'requeue', reason: 'mass requeue after the restart' });
  expect(bulkAnswer.json).toMatchObject({ changed: 0, hold: { until: refused.json.error.heldUntil } });
  const pass = await postJson(`${url}/reaper/run`, {});
  expect(pass.json.requeued).toEqual([]);
  expect(pass.json.held.map((h: { id: string }) => h.id).sort()).toEqual([single, bulk, run, forced].sort());

  const force = await postJson(`${url}/jobs/${forced}/requeue`, { force: true, reason: 'that host is gone for good' });
  expect(force.status).toBe(200);
  expect(force.json.requeue.overrodeHold).toMatchObject({ until: refused.json.error.heldUntil });
  expect((await getJson(`${url}/jobs/${forced}`)).events.at(-1)).toMatchObject({ type: 'force_requeued_by_operator', message: expect.stringContaining("overrode the reaper's hold") });
  for (const id of [single, bulk, run]) expect((await getJson(`${url}/jobs/${id}`)).job.status).toBe('running');

  // After the hold, each path takes its job.
  await until('the hold is over', async () => (Date.now() > heldUntil + 50 ? true : undefined));
  const requeued = await postJson(`${url}/jobs/${single}/requeue`, { reason: 'still stuck' });
  expect(requeued.status, JSON.stringify(requeued.json)).toBe(200);
  expect(requeued.json.job.status).toBe('pending');
  expect((await postJson(`${url}/queues/q/bulk`, { action: 'requeue', reason: 'after the hold', limit: 1 })).json).toMatchObject({ changed: 1, ids: [bulk], hold: null });
  expect((await postJson(`${url}/reaper/run`, {})).json.requeued.map((r: { id: string }) => r.id)).toEqual([run]);
  expect(second.output()).toContain(`expired leases held until ${refused.json.error.heldUntil} (the server just started)`);
}, 60_000);
