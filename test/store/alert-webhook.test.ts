/**
 * The alert webhook (src/maintenance/alerts.ts), driven through runMaintenancePass on a real
 * database with the manual clock, POSTing to a real HTTP receiver on
 * 127.0.0.1: one POST when an alert starts firing and one when it clears,
 * evaluation rate-limited across reapers, failed deliveries retried until
 * delivered once, racing reapers sending once, and the signature.
 *
 * The alert driven is heartbeat_lag: a claimed job of a live worker that
 * has not heartbeated for over 3 heartbeat intervals (15 s with the
 * defaults) fires it (one late job of one is 100%), a heartbeat clears it.
 * Worker A counts as alive for an hour here: a dead worker's late job is
 * the reaper's business and does not fire heartbeat_lag.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../../src/core/config.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { alertStatesList } from '../../src/db/store/alert-states.ts';
import { openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, any>;
}

/** A webhook receiver: records every POST and answers `status` (after `delayMs`). */
async function receiver(port = 0) {
  const r = {
    received: [] as Received[],
    status: 200,
    delayMs: 0,
    url: '',
    port: 0,
    server: undefined as Server | undefined,
    close: () => new Promise<void>((resolve) => (r.server ? r.server.close(() => resolve()) : resolve())),
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      r.received.push({ headers: req.headers, raw, body: JSON.parse(raw) });
      setTimeout(() => res.writeHead(r.status).end('thanks'), r.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  r.server = server;
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}/hooks/leasehold`;
  return r;
}

let t: TestBed;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  t?.close();
});

async function bed(overrides: Partial<Config> = {}) {
  t = await setup({ workerAliveMs: 3_600_000, ...overrides });
  return t;
}
async function listening(port = 0) {
  const r = await receiver(port);
  cleanups.push(() => r.close());
  return r;
}
/** A second handle on the same database file: another reaper (another server, a cron). */
async function otherReaper(): Promise<OpenedDb> {
  const opened = await openLibsql(t.url);
  cleanups.push(() => opened.close());
  return opened;
}

const api = '/api/v1';
const LAG_FIRES_AFTER = 15_001;
const reap = (config: Config = t.config, db = t.db) => runMaintenancePass(db, t.clock.now(), config);

/** A claimed job in queue q (worker A), so heartbeat_lag fires LAG_FIRES_AFTER ms from now. */
async function stalledJob() {
  const e = await t.enqueue('q');
  const [c] = await t.claim('q', 'A');
  const beat = async () => expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
  return { id: e.id, beat };
}
const lagState = async () => (await alertStatesList(t.db)).find((s) => s.queue === 'q' && s.name === 'heartbeat_lag');

describe('once when it starts firing, once when it clears', () => {
  test('one alert.firing POST across several passes, then one alert.resolved', async () => {
    const hook = await listening();
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000 });
    const job = await stalledJob();
    const t0 = t.clock.now();

    // Every alert is new and ok: recorded, nothing owed.
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 0, cleared: 0, delivered: 0, failed: 0 });
    expect(hook.received).toEqual([]);

    t.clock.set(t0 + LAG_FIRES_AFTER);
    const fired = t.clock.now();
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 1, cleared: 0, delivered: 1, failed: 0 });
    expect(hook.received).toHaveLength(1);
    const [first] = hook.received;
    expect(first!.headers['content-type']).toBe('application/json');
    expect(first!.headers['x-leasehold-signature']).toBeUndefined();
    expect(first!.body).toEqual({
      type: 'alert.firing',
      id: `q/heartbeat_lag/${fired}`,
      queue: 'q',
      alert: 'heartbeat_lag',
      state: 'firing',
      since: new Date(fired).toISOString(),
      value: 1,
      threshold: 2,
      unit: 'count',
      message: expect.stringContaining(`have not heartbeated for over 15000 ms (3 heartbeat intervals): jobs ${job.id}`),
      at: new Date(fired).toISOString(),
      dashboard: '/dashboard/alerts',
    });

    // Still firing: evaluated again, nothing new to say.
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      expect((await reap()).alerts).toEqual({ evaluated: true, started: 0, cleared: 0, delivered: 0, failed: 0 });
    }
    expect(hook.received).toHaveLength(1);
    expect(await lagState()).toMatchObject({ state: 'firing', since: fired, notifiedState: 'firing', value: 1, notifyUntil: null });

    await job.beat();
    t.clock.advance(1000);
    const cleared = t.clock.now();
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 0, cleared: 1, delivered: 1, failed: 0 });
    expect(hook.received).toHaveLength(2);
    expect(hook.received[1]!.body).toMatchObject({
      type: 'alert.resolved',
      id: `q/heartbeat_lag/${cleared}`,
      state: 'ok',
      since: new Date(cleared).toISOString(),
      value: 0,
      threshold: 2,
      unit: 'count',
    });

    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      await reap();
    }
    expect(hook.received).toHaveLength(2);
    expect(await lagState()).toMatchObject({ state: 'ok', since: cleared, notifiedState: 'ok', notifyAttempts: 0, lastNotifyError: null });
    expect(t.errors).toEqual([]);
  });

  test('without a webhook URL the states are still recorded and nothing is sent; set later, only what fires now is sent', async () => {
    const hook = await listening();
    await bed({ alertEveryMs: 1000 });
    const job = await stalledJob();
    t.clock.advance(LAG_FIRES_AFTER);
    const fired = t.clock.now();
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 1, cleared: 0, delivered: 0, failed: 0 });
    const states = await alertStatesList(t.db);
    expect(states.map((s) => s.name).sort()).toEqual(['duplicate_executions', 'enqueue_dedup_rate', 'heartbeat_lag', 'long_running', 'pending_backlog', 'reaper_burst', 'stale_write_rate', 'stalled_jobs']);
    expect(await lagState()).toMatchObject({ state: 'firing', since: fired, notifiedState: 'ok', notifyUntil: null, notifyAttempts: 0 });
    t.clock.advance(1000);
    await reap();

    // The URL is set (a restart with the setting): the firing alert is owed, sent once.
    const withHook = { ...t.config, alertWebhookUrl: hook.url };
    t.clock.advance(1000);
    expect((await reap(withHook)).alerts).toMatchObject({ started: 0, delivered: 1 });
    t.clock.advance(1000);
    expect((await reap(withHook)).alerts).toMatchObject({ delivered: 0 });
    expect(hook.received.map((r) => r.body.id)).toEqual([`q/heartbeat_lag/${fired}`]);

    // Cleared without a URL, then the URL comes back: the resolution is still owed.
    await job.beat();
    t.clock.advance(1000);
    expect((await reap()).alerts).toMatchObject({ cleared: 1, delivered: 0 });
    t.clock.advance(1000);
    expect((await reap(withHook)).alerts).toMatchObject({ delivered: 1 });
    expect(hook.received.map((r) => r.body.type)).toEqual(['alert.firing', 'alert.resolved']);
  });
});

describe('rate limit', () => {
  test('alerts are evaluated at most once per alertEveryMs, across reapers sharing the database', async () => {
    const hook = await listening();
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 10_000 });
    const other = await otherReaper();
    await stalledJob();
    const t0 = t.clock.now();
    t.clock.set(t0 + 6000);
    expect((await reap()).alerts.evaluated).toBe(true);
    // Not due for this reaper, nor for another server on the same database.
    t.clock.set(t0 + 9000);
    expect((await reap(t.config, other.db)).alerts.evaluated).toBe(false);
    // The lag passed the threshold at t0 + 15001, but no evaluation is due before t0 + 16000.
    t.clock.set(t0 + LAG_FIRES_AFTER);
    expect((await reap()).alerts).toEqual({ evaluated: false, started: 0, cleared: 0, delivered: 0, failed: 0 });
    t.clock.set(t0 + 15_999);
    expect((await reap(t.config, other.db)).alerts.evaluated).toBe(false);
    expect(hook.received).toEqual([]);
    t.clock.set(t0 + 16_000);
    expect((await reap(t.config, other.db)).alerts).toEqual({ evaluated: true, started: 1, cleared: 0, delivered: 1, failed: 0 });
    expect(hook.received.map((r) => r.body.id)).toEqual([`q/heartbeat_lag/${t0 + 16_000}`]);
    expect((await reap()).alerts.evaluated).toBe(false);
  });
});

describe('failed deliveries', () => {
  test('a receiver answering 500 is retried on a later pass, then delivered exactly once', async () => {
    const hook = await listening();
    // A long lease: the stalled job must outlive the retries (a reap would clear the alert).
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000, leaseMs: 300_000 });
    await stalledJob();
    hook.status = 500;
    t.clock.advance(LAG_FIRES_AFTER);
    const fired = t.clock.now();
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 1, cleared: 0, delivered: 0, failed: 1 });
    expect(await lagState()).toMatchObject({ notifiedState: 'ok', notifyAttempts: 1, lastNotifyError: 'HTTP 500 Internal Server Error', notifyUntil: fired + 10_000 });

    // Backing off: passes before the retry time send nothing.
    t.clock.advance(5000);
    expect((await reap()).alerts).toMatchObject({ delivered: 0, failed: 0 });
    expect(hook.received).toHaveLength(1);

    // Due again, still failing: a second attempt, a longer wait (20 s).
    t.clock.set(fired + 10_000);
    expect((await reap()).alerts).toMatchObject({ delivered: 0, failed: 1 });
    expect(await lagState()).toMatchObject({ notifyAttempts: 2, notifyUntil: fired + 30_000 });

    hook.status = 204;
    t.clock.set(fired + 30_000);
    expect((await reap()).alerts).toMatchObject({ delivered: 1, failed: 0 });
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      expect((await reap()).alerts).toMatchObject({ delivered: 0, failed: 0 });
    }
    expect(hook.received).toHaveLength(3);
    // The same transition every time: the same id and since, so a receiver can drop repeats.
    expect(new Set(hook.received.map((r) => r.body.id))).toEqual(new Set([`q/heartbeat_lag/${fired}`]));
    expect(await lagState()).toMatchObject({ notifiedState: 'firing', notifyAttempts: 0, lastNotifyError: null, notifyUntil: null });
  });

  test('a receiver that is down is retried, and delivered once it listens again', async () => {
    const first = await receiver();
    const port = first.port;
    const url = first.url;
    await first.close(); // nothing listens on the port now
    await bed({ alertWebhookUrl: url, alertEveryMs: 1000 });
    await stalledJob();
    t.clock.advance(LAG_FIRES_AFTER);
    expect((await reap()).alerts).toMatchObject({ started: 1, delivered: 0, failed: 1 });
    const state = await lagState();
    expect(state?.lastNotifyError).toMatch(/ECONNREFUSED|fetch failed/);
    expect(state?.lastNotifyError).not.toContain('/hooks/leasehold');

    const hook = await listening(port);
    t.clock.advance(10_000);
    expect((await reap()).alerts).toMatchObject({ delivered: 1, failed: 0 });
    t.clock.advance(10_000);
    expect((await reap()).alerts).toMatchObject({ delivered: 0, failed: 0 });
    expect(hook.received.map((r) => r.body.type)).toEqual(['alert.firing']);
  });

  test('an alert that clears before its firing was delivered owes nothing', async () => {
    const hook = await listening();
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000 });
    const job = await stalledJob();
    hook.status = 503;
    t.clock.advance(LAG_FIRES_AFTER);
    expect((await reap()).alerts).toMatchObject({ started: 1, failed: 1 });
    await job.beat();
    hook.status = 200;
    t.clock.advance(10_000);
    expect((await reap()).alerts).toEqual({ evaluated: true, started: 0, cleared: 1, delivered: 0, failed: 0 });
    t.clock.advance(60_000);
    await reap();
    expect(hook.received).toHaveLength(1); // the one failed firing attempt, and no resolution for it
    expect(await lagState()).toMatchObject({ state: 'ok', notifiedState: 'ok' });
  });
});

describe('concurrent reapers', () => {
  test('runMaintenancePass racing on the same database (and a slow receiver) delivers each transition once', async () => {
    const hook = await listening();
    hook.delayMs = 150; // the other reapers' passes run while a POST is in flight
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000 });
    const dbs = [t.db, (await otherReaper()).db, (await otherReaper()).db];
    const race = async () => (await Promise.all(dbs.map((db) => reap(t.config, db)))).map((r) => r.alerts);
    const job = await stalledJob();

    // Recorded by a pass without the URL, so the firing is already owed when the three race for it.
    t.clock.advance(LAG_FIRES_AFTER);
    expect((await reap({ ...t.config, alertWebhookUrl: undefined })).alerts).toMatchObject({ started: 1, delivered: 0 });
    t.clock.advance(1000);
    let reports = await race();
    expect(reports.filter((a) => a.evaluated)).toHaveLength(1);
    expect(reports.reduce((n, a) => n + a.delivered, 0)).toBe(1);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      await race();
    }
    expect(hook.received.map((r) => r.body.type)).toEqual(['alert.firing']);

    await job.beat();
    t.clock.advance(1000);
    reports = await race();
    expect(reports.reduce((n, a) => n + a.cleared, 0)).toBe(1);
    expect(reports.reduce((n, a) => n + a.delivered, 0)).toBe(1);
    t.clock.advance(1000);
    await race();
    expect(hook.received.map((r) => r.body.type)).toEqual(['alert.firing', 'alert.resolved']);
  });

  test('a pass started while another holds a notification does not send it too', async () => {
    const hook = await listening();
    hook.delayMs = 300;
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000 });
    const other = await otherReaper();
    await stalledJob();
    t.clock.advance(LAG_FIRES_AFTER);
    const slow = reap();
    // Once the first POST has arrived, the first reaper holds the row: a second pass, later, finds nothing to send.
    await until('the first POST', () => hook.received.length > 0);
    t.clock.advance(1000);
    expect((await reap(t.config, other.db)).alerts).toMatchObject({ evaluated: true, started: 0, delivered: 0, failed: 0 });
    expect((await slow).alerts).toMatchObject({ started: 1, delivered: 1 });
    expect(hook.received).toHaveLength(1);
  });
});

describe('a flip while a POST is in flight', () => {
  test('cleared while its firing is being sent: the resolution follows, it is not lost', async () => {
    const hook = await listening();
    hook.delayMs = 300;
    await bed({ alertWebhookUrl: hook.url, alertEveryMs: 1000 });
    const other = await otherReaper();
    const job = await stalledJob();
    t.clock.advance(LAG_FIRES_AFTER);
    const slow = reap();
    await until('the first POST', () => hook.received.length > 0);
    // The alert clears while the firing POST waits for its answer.
    await job.beat();
    t.clock.advance(1000);
    expect((await reap(t.config, other.db)).alerts).toMatchObject({ evaluated: true, cleared: 1, delivered: 0 });
    expect((await slow).alerts).toMatchObject({ started: 1, delivered: 1 });
    // Recorded as "the receiver knows it fires", which is not the state now: the resolution is owed.
    expect(await lagState()).toMatchObject({ state: 'ok', notifiedState: 'firing' });
    t.clock.advance(1000);
    expect((await reap()).alerts).toMatchObject({ delivered: 1 });
    expect(hook.received.map((r) => r.body.type)).toEqual(['alert.firing', 'alert.resolved']);
  });
});

describe('signature', () => {
  test('x-leasehold-signature is sha256=HMAC-SHA256(secret, raw body)', async () => {
    const hook = await listening();
    const secret = 'a-webhook-secret-0123456789';
    await bed({ alertWebhookUrl: hook.url, alertWebhookSecret: secret, alertEveryMs: 1000 });
    await stalledJob();
    t.clock.advance(LAG_FIRES_AFTER);
    expect((await reap()).alerts).toMatchObject({ delivered: 1 });
    const [r] = hook.received;
    const expected = `sha256=${createHmac('sha256', secret).update(r!.raw).digest('hex')}`;
    expect(r!.headers['x-leasehold-signature']).toBe(expected);
    const forged = `sha256=${createHmac('sha256', 'another-secret-0123456789').update(r!.raw).digest('hex')}`;
    expect(r!.headers['x-leasehold-signature']).not.toBe(forged);
  });
});

describe('the alert pass never breaks reaping', () => {
  test('with the alert table unusable, jobs are still taken back and the error is reported', async () => {
    await bed({ alertEveryMs: 1000, workerAliveMs: 5000 });
    const e = await t.enqueue('q');
    await t.claim('q', 'A');
    await t.client.execute('DROP TABLE alert_states');
    t.clock.advance(30_000 + 10_000 + 1);
    const r = await reap();
    expect(r.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    expect(r.alerts).toMatchObject({ evaluated: false, delivered: 0, error: expect.stringContaining('alert_states') });
  });
});

describe('configuration', () => {
  function problems(env: Record<string, string>, args: string[] = []) {
    try {
      loadConfig(env, args);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    throw new Error('expected a ConfigError');
  }

  test('defaults: no webhook, evaluated at most every 15 s', () => {
    expect(loadConfig({}).config).toMatchObject({ alertWebhookUrl: undefined, alertWebhookSecret: undefined, alertEveryMs: 15_000 });
  });

  test('read from the environment and flags', () => {
    const { config } = loadConfig(
      { LEASEHOLD_ALERT_WEBHOOK_URL: 'https://hooks.example.com/x', LEASEHOLD_ALERT_WEBHOOK_SECRET: 'sixteen-chars-long!' },
      ['--alert-every-ms', '60000'],
    );
    expect(config).toMatchObject({ alertWebhookUrl: 'https://hooks.example.com/x', alertWebhookSecret: 'sixteen-chars-long!', alertEveryMs: 60_000 });
    expect(loadConfig({}, ['--alert-webhook-url=http://127.0.0.1:9/h']).config.alertWebhookUrl).toBe('http://127.0.0.1:9/h');
  });

  test.each(['ftp://hooks.example.com/x', 'hooks.example.com/x', 'not a url', 'javascript:alert(1)', 'file:///etc/passwd'])(
    'a webhook URL %j is a config error naming LEASEHOLD_ALERT_WEBHOOK_URL (without echoing it)',
    (url) => {
      const p = problems({ LEASEHOLD_ALERT_WEBHOOK_URL: url });
      expect(p).toEqual([{ setting: 'LEASEHOLD_ALERT_WEBHOOK_URL', rule: expect.stringContaining('http') }]);
      expect(p[0]!.rule).not.toContain(url);
    },
  );

  test('a short secret, a zero interval: errors naming them; a secret without a URL: a warning', () => {
    expect(problems({ LEASEHOLD_ALERT_WEBHOOK_URL: 'https://h.example/x', LEASEHOLD_ALERT_WEBHOOK_SECRET: 'short' }).map((p) => p.setting)).toEqual(['LEASEHOLD_ALERT_WEBHOOK_SECRET']);
    expect(problems({ LEASEHOLD_ALERT_EVERY_MS: '0' }).map((p) => p.setting)).toEqual(['LEASEHOLD_ALERT_EVERY_MS']);
    expect(loadConfig({ LEASEHOLD_ALERT_WEBHOOK_SECRET: 'sixteen-chars-long!' }).warnings.map((w) => w.setting)).toEqual(['LEASEHOLD_ALERT_WEBHOOK_SECRET']);
  });
});
