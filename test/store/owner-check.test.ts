/**
 * The owner check (LEASEHOLD_OWNER_CHECK_URL): before taking a job whose
 * lease expired, the reaper asks a real HTTP endpoint on 127.0.0.1 whether
 * the owner's process exists. gone takes the job at once, even inside its
 * grace; alive defers it within the usual bound, even when the registry has
 * not heard from the worker; unknown, a bad answer or no answer in time
 * leaves today's rule. Every decision names the check in its event.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { checkConfig, defaultConfig, type Config } from '../../src/core/config.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed | undefined;
let check: Server | undefined;
afterEach(async () => {
  t?.close();
  check?.closeAllConnections();
  await new Promise((r) => (check ? check.close(r) : r(undefined)));
  t = check = undefined;
});

type Answer = { status?: number; body?: string } | 'never';

/** The platform's side: answers per worker id, and remembers what it was asked. */
async function platform(answers: Record<string, Answer>) {
  const asked: URLSearchParams[] = [];
  check = createServer((req: IncomingMessage, res) => {
    const q = new URL(req.url!, 'http://x').searchParams;
    asked.push(q);
    const a = answers[q.get('worker') ?? ''] ?? { body: '{"state":"unknown"}' };
    if (a === 'never') return; // holds the request open
    res.writeHead(a.status ?? 200, { 'content-type': 'application/json' }).end(a.body ?? '');
  });
  await new Promise<void>((r) => check!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(check.address() as AddressInfo).port}/owner`, asked };
}

async function bed(answers: Record<string, Answer>, overrides: Partial<Config> = {}) {
  const p = await platform(answers);
  t = await setup({ ownerCheckUrl: p.url, ...overrides });
  return p;
}

/** A job claimed by `worker` (process `instance` on host-a, pid 101), then the clock moved by `ms`. */
async function claimedThenSilent(worker: string, ms: number) {
  const job = await t!.enqueue('q');
  expect((await t!.post('/api/v1/workers/beat', { workerId: worker, instanceId: `${worker}-p1`, host: 'host-a', pid: 101 })).status).toBe(200);
  const [c] = await t!.claim('q', worker, { instanceId: `${worker}-p1` });
  expect(c!.id).toBe(job.id);
  t!.clock.advance(ms);
  return job.id as string;
}

const events = async (id: string) => (await t!.client.execute({ sql: "SELECT type, reason, message FROM events WHERE job_id = ? AND type IN ('reaped', 'reap_deferred') ORDER BY id", args: [id] })).rows;

// Defaults: lease 30 s, grace 10 s, alive = seen within 15 s, the reaper waits up to 30 s for a live owner.
test('gone: a job whose lease expired a moment ago is taken at once, without waiting out the grace, and the question named the process', async () => {
  const p = await bed({ w1: { body: '{"state":"gone"}' } });
  const id = await claimedThenSilent('w1', 30_001);
  const report = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  expect(report.requeued).toEqual([{ id, reason: 'owner_gone' }]);
  expect(Object.fromEntries(p.asked[0]!)).toEqual({ worker: 'w1', instance: 'w1-p1', host: 'host-a', pid: '101' });
  const [e] = await events(id);
  expect(e).toMatchObject({ type: 'reaped', reason: 'owner_gone' });
  expect(String(e!.message)).toMatch(/owner check says w1's process is gone \(asked about worker w1 on host-a, pid 101: gone\)/);
});

test('without an owner check, the same job is left inside its grace (today\'s rule), and nothing is asked', async () => {
  const p = await platform({ w1: { body: '{"state":"gone"}' } });
  t = await setup();
  const id = await claimedThenSilent('w1', 30_001);
  const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
  expect(report.requeued).toEqual([]);
  expect(p.asked).toEqual([]);
  expect((await t.get(`/api/v1/jobs/${id}`)).json.job.status).toBe('running');
});

test('alive: a worker the registry has not heard from is deferred like a live one, then taken at the usual bound', async () => {
  await bed({ w1: { body: '{"state":"alive"}' } });
  // Past lease + grace, and not seen for 40 s: without the check it would be taken now.
  const id = await claimedThenSilent('w1', 40_001);
  const first = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  expect(first.deferred.map((d) => d.id)).toEqual([id]);
  expect(first.requeued).toEqual([]);
  const [e] = await events(id);
  expect(e).toMatchObject({ type: 'reap_deferred', reason: 'owner_alive' });
  expect(String(e!.message)).toMatch(/the owner check says w1's process is alive/);
  // Past grace + maxReapDeferMs the job is taken even though the check still says alive.
  t!.clock.advance(30_000);
  const later = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  expect(later.requeued).toEqual([{ id, reason: 'reaped_due_to_expired_lease' }]);
});

test('unknown, an error status, an answer not understood: today\'s rule, and the event says what the check answered', async () => {
  await bed({ w1: { body: '{"state":"unknown"}' }, w2: { status: 503, body: 'down' }, w3: { body: 'yes it is alive' } });
  const ids = [await claimedThenSilent('w1', 0), await claimedThenSilent('w2', 0), await claimedThenSilent('w3', 0)];
  // Inside the grace: nothing is taken.
  t!.clock.advance(30_001);
  expect((await runMaintenancePass(t!.db, t!.clock.now(), t!.config)).requeued).toEqual([]);
  // Past lease + grace, owners unseen for 40 s: taken as without a check.
  t!.clock.advance(10_000);
  const report = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  expect(report.requeued.map((r) => r.reason)).toEqual(['reaped_due_to_expired_lease', 'reaped_due_to_expired_lease', 'reaped_due_to_expired_lease']);
  const messages = await Promise.all(ids.map(async (id) => String((await events(id))[0]!.message)));
  expect(messages[0]).toMatch(/owner check: unknown \(asked about worker w1 on host-a, pid 101: unknown\)/);
  expect(messages[1]).toMatch(/owner check: unknown \(asked about worker w2 on host-a, pid 101: the check answered HTTP 503\)/);
  expect(messages[2]).toMatch(/owner check: unknown \(asked about worker w3 on host-a, pid 101: the check's answer was not/);
});

test('no answer within the timeout counts as unknown: the pass goes on after it and takes what today\'s rule takes', async () => {
  await bed({ w1: 'never' }, { ownerCheckTimeoutMs: 300 });
  const id = await claimedThenSilent('w1', 40_001);
  const started = performance.now();
  const report = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  // The pass waited for the check (its deadline), not for ever.
  expect(performance.now() - started).toBeLessThan(10_000);
  expect(report.requeued).toEqual([{ id, reason: 'reaped_due_to_expired_lease' }]);
  expect(String((await events(id))[0]!.message)).toMatch(/owner check: unknown \(asked about worker w1 on host-a, pid 101: no answer within 300 ms\)/);
});

test('each owner process is asked about once per pass, however many of its jobs expired; a passed deadline asks nothing', async () => {
  const p = await bed({ w1: { body: '{"state":"gone"}' } }, { timeoutMs: 60_000 });
  await t!.post('/api/v1/workers/beat', { workerId: 'w1', instanceId: 'w1-p1', host: 'host-a', pid: 101 });
  for (let i = 0; i < 3; i++) await t!.enqueue('q');
  const claimed = await t!.claim('q', 'w1', { instanceId: 'w1-p1', limit: 3 });
  expect(claimed).toHaveLength(3);
  t!.clock.advance(30_001);
  expect((await runMaintenancePass(t!.db, t!.clock.now(), t!.config)).requeued.map((r) => r.reason)).toEqual(['owner_gone', 'owner_gone', 'owner_gone']);
  expect(p.asked).toHaveLength(1);

  // A job past its deadline (60 s) is taken for it, with no question asked.
  await t!.enqueue('other');
  const [again] = await t!.claim('other', 'w1', { instanceId: 'w1-p1', limit: 1, leaseMs: 120_000 });
  t!.clock.advance(60_001);
  const report = await runMaintenancePass(t!.db, t!.clock.now(), t!.config);
  expect(report.requeued).toEqual([{ id: again!.id, reason: 'deadline_exceeded' }]);
  expect(p.asked).toHaveLength(1);
});

test('the settings are checked: an owner check URL must be http(s), its timeout 100 ms to 10 s', () => {
  const problems = (c: Partial<Config>) => checkConfig(defaultConfig(c)).errors.map((e) => `${e.setting} ${e.rule}`);
  expect(problems({ ownerCheckUrl: 'ftp://x' })).toEqual(['LEASEHOLD_OWNER_CHECK_URL must be an http:// or https:// URL']);
  expect(problems({ ownerCheckUrl: 'http://127.0.0.1:9/owner', ownerCheckTimeoutMs: 50 })).toEqual(['LEASEHOLD_OWNER_CHECK_TIMEOUT_MS must be between 100 ms and 10 s: the reaper pass waits for it']);
  expect(problems({ ownerCheckUrl: 'https://platform.example/owner' })).toEqual([]);
});
