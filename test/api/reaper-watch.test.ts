/**
 * When the reaper stops (a cron trigger removed, a timer dead), nothing in
 * its own pass can say so: alerts are evaluated by the pass. Each completed
 * pass records its time in the database, and these read it with the jobs
 * that wait for a reaper, at the moment of the read: /metrics gauges,
 * /healthz's `maintenance`, and the dashboard's banner. The real app, the
 * default settings (lease 30 s, grace 10 s, reaper interval 5 s: late past
 * 15 s) and the manual clock; no reaper runs unless a test runs a pass.
 */
import { afterEach, expect, test } from 'vitest';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const api = '/api/v1';
/** Past lease + grace (defaults), and past the worker-alive window (15 s), so the reaper takes the job at once. */
const PAST_LEASE_AND_GRACE = 30_000 + 10_000 + 1;

async function prometheus(): Promise<string> {
  const res = await t.get('/metrics');
  expect(res.status).toBe(200);
  return res.text;
}
/** One sample's value from the exposition text (`name{labels} value`). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
async function health() {
  const res = await t.get('/healthz');
  expect(res.status).toBe(200);
  return res.json as { ok: boolean; databaseTime: string; maintenance: Record<string, unknown> };
}

test('the last completed pass: none, then every pass (the admin API and runMaintenancePass), as Prometheus gauges on the database clock', async () => {
  t = await setup({});
  const t0 = t.clock.now();
  let text = await prometheus();
  expect(text).toContain('# TYPE leasehold_maintenance_last_pass_timestamp_seconds gauge');
  expect(sample(text, 'leasehold_maintenance_last_pass_timestamp_seconds')).toBe(0);
  expect(sample(text, 'leasehold_maintenance_last_pass_age_seconds')).toBe(-1);
  expect(sample(text, 'leasehold_maintenance_passes_total')).toBe(0);
  expect(sample(text, 'leasehold_maintenance_interval_seconds')).toBe(5);
  expect(sample(text, 'leasehold_maintenance_late')).toBe(0);

  expect((await t.post(`${api}/reaper/run`)).status).toBe(200);
  t.clock.advance(2_500);
  text = await prometheus();
  expect(sample(text, 'leasehold_maintenance_last_pass_timestamp_seconds')).toBe(t0 / 1000);
  expect(sample(text, 'leasehold_maintenance_last_pass_age_seconds')).toBe(2.5);
  expect(sample(text, 'leasehold_maintenance_passes_total')).toBe(1);

  // The pass the runtimes run (timer, cron, leasehold reap) records itself the same way.
  await runMaintenancePass(t.db, t.clock.now(), t.config);
  text = await prometheus();
  expect(sample(text, 'leasehold_maintenance_last_pass_timestamp_seconds')).toBe((t0 + 2_500) / 1000);
  expect(sample(text, 'leasehold_maintenance_passes_total')).toBe(2);
  expect((await health()).maintenance).toMatchObject({ lastPassAt: new Date(t0 + 2_500).toISOString(), lastPassAgeMs: 0, late: false, runningJobs: 0 });
  expect((await t.get(`${api}/metrics`)).json.maintenance).toMatchObject({ lastStartedAt: t0 + 2_500, lastCompletedAt: t0 + 2_500, passes: 2, late: false, ageMs: 0, lateAfterMs: 15_000 });
});

test('expired leases are counted at read time while no reaper runs, and /healthz and /metrics call the reaper late (200 all the same)', async () => {
  t = await setup({});
  const e = await t.enqueue('q');
  await t.claim('q', 'A');
  expect((await health()).maintenance).toMatchObject({ lastPassAt: null, late: false, runningJobs: 1, expiredLeases: 0 });

  // Nobody runs the reaper: the worker died, its lease and grace pass.
  t.clock.advance(PAST_LEASE_AND_GRACE);
  let text = await prometheus();
  expect(sample(text, 'leasehold_expired_leases_past_grace{queue="q"}')).toBe(1);
  expect(sample(text, 'leasehold_maintenance_late')).toBe(1);
  const h = await health();
  expect(h.ok).toBe(true);
  expect(h.maintenance).toMatchObject({ lastPassAt: null, lastPassAgeMs: null, late: true, lateAfterMs: 15_000, runningJobs: 1, expiredLeases: 1 });
  expect(h.maintenance.message).toMatch(/no maintenance pass has been recorded on this database, and 1 running job is past lease \+ grace/);

  // A pass takes the job back and records itself: nothing is late.
  expect((await t.post(`${api}/reaper/run`)).json.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
  expect((await health()).maintenance).toMatchObject({ late: false, runningJobs: 0, expiredLeases: 0, lastPassAgeMs: 0 });

  // Then the reaper stops again while a job runs and heartbeats: late after 3 intervals (15 s), expired or not.
  t.clock.advance(1_000); // past the retry's backoff
  const [c] = await t.claim('q', 'B');
  expect(c!.id).toBe(e.id);
  for (const step of [4_000, 5_000, 5_000]) {
    t.clock.advance(step);
    expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'B', lockToken: c!.lockToken })).status).toBe(200);
  }
  expect((await health()).maintenance).toMatchObject({ late: false, lastPassAgeMs: 15_000 });
  t.clock.advance(1);
  expect((await health()).maintenance).toMatchObject({ late: true, lastPassAgeMs: 15_001, runningJobs: 1, expiredLeases: 0 });
  text = await prometheus();
  expect(sample(text, 'leasehold_maintenance_late')).toBe(1);
  expect(sample(text, 'leasehold_expired_leases_past_grace{queue="q"}')).toBe(0);
  expect(sample(text, 'leasehold_maintenance_last_pass_age_seconds')).toBe(15.001);
});

test('the dashboard says the reaper is late on every page, and its polled banner clears once a pass completes', async () => {
  t = await setup({});
  await t.enqueue('q');
  await t.claim('q', 'A');
  const quiet = (await t.get('/dashboard')).text;
  expect(quiet).toContain('id="maintenance-banner"');
  expect(quiet).not.toContain('maintenance-late');

  t.clock.advance(PAST_LEASE_AND_GRACE);
  for (const path of ['/dashboard', '/dashboard/zombies', '/dashboard/jobs', '/dashboard/metrics']) {
    const html = (await t.get(path)).text;
    expect(html, path).toContain('id="maintenance-late"');
    expect(html, path).toContain('Reaper late.');
    expect(html, path).toContain('No maintenance pass has been recorded on this database, while 1 job runs and 1 is past lease + grace');
  }
  expect((await t.get('/dashboard/live/maintenance')).text).toContain('Reaper late.');

  expect((await t.post(`${api}/reaper/run`)).status).toBe(200);
  expect((await t.get('/dashboard/live/maintenance')).text).toBe('');
  expect((await t.get('/dashboard')).text).not.toContain('maintenance-late');

  // A job runs and no pass has completed for 3 intervals: late again, with the time of the last one.
  t.clock.advance(1_000); // past the retry's backoff
  expect(await t.claim('q', 'B')).toHaveLength(1);
  t.clock.advance(14_001);
  const late = (await t.get('/dashboard')).text;
  expect(late).toContain('Reaper late.');
  expect(late).toContain('The last maintenance pass completed 15.0 s ago');
});
