/**
 * Configuration rules (src/core/config.ts): impossible settings stop the start
 * with a ConfigError naming the setting; risky ones are warnings. The same
 * lease rules guard per-queue overrides over the API.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { ConfigError, checkConfig, defaultConfig, loadConfig, type ConfigProblem } from '../../src/core/config.ts';
import { setup, type TestBed } from '../support/helpers.ts';

function problemsOf(fn: () => unknown): ConfigProblem[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

const settingsOf = (problems: ConfigProblem[]) => problems.map((p) => p.setting);

describe('loadConfig', () => {
  test('no environment: the defaults, no warnings', () => {
    const { config, warnings } = loadConfig({});
    expect(config).toEqual(defaultConfig());
    expect(config).toMatchObject({ leaseMs: 30_000, heartbeatMs: 5000, graceMs: 10_000, host: '127.0.0.1', port: 8787 });
    expect(warnings).toEqual([]);
  });

  test('reads the environment; flags win over it', () => {
    const { config } = loadConfig({ LEASEHOLD_LEASE_MS: '60000', LEASEHOLD_PORT: '9000' }, ['--port', '9100', '--grace-ms=20000']);
    expect(config).toMatchObject({ leaseMs: 60_000, port: 9100, graceMs: 20_000 });
  });

  test('the connection limits: timeouts under a second and a field budget under 1 KiB are refused; headers longer than the request is a warning', () => {
    expect(loadConfig({}).config).toMatchObject({ headersTimeoutMs: 10_000, writeTimeoutMs: 30_000, maxPipelinedRequests: 16, dashboardFieldBytes: 32 * 1024 });
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_HEADERS_TIMEOUT_MS: '500', LEASEHOLD_WRITE_TIMEOUT_MS: '999', LEASEHOLD_DASHBOARD_FIELD_BYTES: '100' }));
    expect(settingsOf(problems).sort()).toEqual(['LEASEHOLD_DASHBOARD_FIELD_BYTES', 'LEASEHOLD_HEADERS_TIMEOUT_MS', 'LEASEHOLD_WRITE_TIMEOUT_MS']);
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_MAX_PIPELINED: '0' })))).toEqual(['LEASEHOLD_MAX_PIPELINED']);
    const { config, warnings } = loadConfig({ LEASEHOLD_REQUEST_TIMEOUT_MS: '5000' }, ['--headers-timeout-ms', '8000', '--max-pipelined', '4']);
    expect(config).toMatchObject({ requestTimeoutMs: 5_000, headersTimeoutMs: 8_000, maxPipelinedRequests: 4 });
    expect(settingsOf(warnings)).toEqual(['LEASEHOLD_HEADERS_TIMEOUT_MS']);
  });

  test('a heartbeat over half the lease is an error naming LEASEHOLD_HEARTBEAT_MS', () => {
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_LEASE_MS: '10000', LEASEHOLD_HEARTBEAT_MS: '6000' }));
    expect(settingsOf(problems)).toContain('LEASEHOLD_HEARTBEAT_MS');
    const err = (() => {
      try {
        loadConfig({ LEASEHOLD_LEASE_MS: '10000', LEASEHOLD_HEARTBEAT_MS: '6000' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toContain('LEASEHOLD_HEARTBEAT_MS');
  });

  test('exactly half the lease is allowed, with a warning', () => {
    const { warnings } = loadConfig({ LEASEHOLD_LEASE_MS: '20000', LEASEHOLD_HEARTBEAT_MS: '10000' });
    expect(settingsOf(warnings)).toContain('LEASEHOLD_HEARTBEAT_MS');
  });

  test('a heartbeat over a third of the lease is a warning, not an error', () => {
    const { config, warnings } = loadConfig({ LEASEHOLD_HEARTBEAT_MS: '12000', LEASEHOLD_GRACE_MS: '12000' });
    expect(config.heartbeatMs).toBe(12_000);
    expect(settingsOf(warnings)).toEqual(['LEASEHOLD_HEARTBEAT_MS']);
  });

  test('a short lease given alone gets its heartbeat and grace from it (a third each), and says so', () => {
    const { config, derived } = loadConfig({}, ['--lease-ms', '1000']);
    expect(config).toMatchObject({ leaseMs: 1_000, heartbeatMs: 333, graceMs: 333 });
    expect(derived).toEqual([
      { setting: 'LEASEHOLD_HEARTBEAT_MS', rule: 'not set: 333 ms, a third of the 1000 ms lease (LEASEHOLD_LEASE_MS), instead of the default 5000 ms' },
      { setting: 'LEASEHOLD_GRACE_MS', rule: 'not set: 333 ms, a third of the 1000 ms lease (LEASEHOLD_LEASE_MS), instead of the default 10000 ms' },
    ]);
    // Between: the heartbeat keeps its default, the grace follows the lease.
    expect(loadConfig({ LEASEHOLD_LEASE_MS: '20000' }).config).toMatchObject({ heartbeatMs: 5_000, graceMs: 6_666 });
    // A long lease keeps both defaults and says nothing.
    const long = loadConfig({ LEASEHOLD_LEASE_MS: '120000' });
    expect(long.config).toMatchObject({ heartbeatMs: 5_000, graceMs: 10_000 });
    expect(long.derived).toEqual([]);
    // What is given is kept, and checked: a heartbeat given over half the lease is still refused.
    expect(loadConfig({ LEASEHOLD_LEASE_MS: '1000', LEASEHOLD_GRACE_MS: '2000' }).config).toMatchObject({ heartbeatMs: 333, graceMs: 2_000 });
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_LEASE_MS: '1000', LEASEHOLD_HEARTBEAT_MS: '5000' })))).toEqual(['LEASEHOLD_HEARTBEAT_MS']);
  });

  test('grace shorter than the heartbeat interval is an error naming LEASEHOLD_GRACE_MS', () => {
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_GRACE_MS: '1000' }));
    expect(settingsOf(problems)).toEqual(['LEASEHOLD_GRACE_MS']);
  });

  test.each([
    ['LEASEHOLD_LEASE_MS', '0'],
    ['LEASEHOLD_LEASE_MS', '-30000'],
    ['LEASEHOLD_HEARTBEAT_MS', '0'],
    ['LEASEHOLD_GRACE_MS', '-1'],
    ['LEASEHOLD_REAPER_INTERVAL_MS', '0'],
    ['LEASEHOLD_RETENTION_MS', '-5'],
    ['LEASEHOLD_MAX_ATTEMPTS', '0'],
    ['LEASEHOLD_REAPER_BATCH', '0'],
  ])('%s=%s (zero or negative) is an error naming it', (name, value) => {
    const problems = problemsOf(() => loadConfig({ [name]: value }));
    expect(settingsOf(problems)).toContain(name);
  });

  test.each(['abc', '30s', '1.5', '1e4', '0x10', ' ', '12 000'])('a non-numeric duration %j is an error naming the variable', (value) => {
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_LEASE_MS: value }));
    expect(settingsOf(problems)).toEqual(['LEASEHOLD_LEASE_MS']);
  });

  test('a non-numeric flag is named by its flag', () => {
    const problems = problemsOf(() => loadConfig({}, ['--lease-ms', 'soon']));
    expect(settingsOf(problems)).toEqual(['--lease-ms']);
  });

  test('off loopback without tokens is an error naming LEASEHOLD_HOST', () => {
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_HOST: '0.0.0.0' }));
    expect(settingsOf(problems)).toContain('LEASEHOLD_HOST');
    // One token is not enough.
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_HOST: '0.0.0.0', LEASEHOLD_WORKER_TOKEN: 'w'.repeat(20) })))).toContain('LEASEHOLD_HOST');
    // Both tokens: fine.
    const { config } = loadConfig({ LEASEHOLD_HOST: '0.0.0.0', LEASEHOLD_WORKER_TOKEN: 'w'.repeat(20), LEASEHOLD_ADMIN_TOKEN: 'a'.repeat(20) });
    expect(config.host).toBe('0.0.0.0');
    // Loopback without tokens: fine.
    expect(loadConfig({ LEASEHOLD_HOST: '127.0.0.1' }).config.workerToken).toBeUndefined();
  });

  test('short or equal tokens are errors', () => {
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_ADMIN_TOKEN: 'short' })))).toContain('LEASEHOLD_ADMIN_TOKEN');
    const same = 's'.repeat(20);
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_WORKER_TOKEN: same, LEASEHOLD_ADMIN_TOKEN: same })))).toContain('LEASEHOLD_ADMIN_TOKEN');
  });

  test('an unknown CLI flag is an error naming it', () => {
    const problems = problemsOf(() => loadConfig({}, ['--lease-msec=100']));
    expect(settingsOf(problems)).toEqual(['--lease-msec']);
    expect(settingsOf(problemsOf(() => loadConfig({}, ['--heartbeat'])))).toContain('--heartbeat');
  });

  test('a flag without a value is an error', () => {
    expect(settingsOf(problemsOf(() => loadConfig({}, ['--lease-ms'])))).toEqual(['--lease-ms']);
  });

  test('an empty value counts as unset', () => {
    expect(loadConfig({ LEASEHOLD_LEASE_MS: '' }).config.leaseMs).toBe(30_000);
  });

  test('every problem is reported at once', () => {
    const problems = problemsOf(() => loadConfig({ LEASEHOLD_LEASE_MS: 'x', LEASEHOLD_GRACE_MS: 'y' }));
    expect(settingsOf(problems).sort()).toEqual(['LEASEHOLD_GRACE_MS', 'LEASEHOLD_LEASE_MS']);
  });

  test('workerAliveMs below the heartbeat interval is an error', () => {
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_WORKER_ALIVE_MS: '1000' })))).toContain('LEASEHOLD_WORKER_ALIVE_MS');
  });

  test('a port out of range is an error; 0 (pick a free one) is allowed', () => {
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_PORT: '70000' })))).toEqual(['LEASEHOLD_PORT']);
    expect(loadConfig({ LEASEHOLD_PORT: '0' }).config.port).toBe(0);
  });

  test('a database URL of an unknown kind is an error', () => {
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_DATABASE_URL: 'postgres://x' })))).toContain('LEASEHOLD_DATABASE_URL');
  });
});

describe('checkConfig', () => {
  test('the defaults pass without warnings', () => {
    expect(checkConfig(defaultConfig())).toEqual({ errors: [], warnings: [] });
  });

  test('backoff max below base is an error', () => {
    const { errors } = checkConfig(defaultConfig({ backoffBaseMs: 5000, backoffMaxMs: 1000 }));
    expect(settingsOf(errors)).toContain('LEASEHOLD_BACKOFF_MAX_MS');
  });

  test('the claim budget: below twice the payload limit is a warning; over 256 MiB, or a payload limit over 128 MiB, is an error', () => {
    expect(defaultConfig().maxClaimBytes).toBeGreaterThanOrEqual(2 * defaultConfig().maxPayloadBytes);
    expect(checkConfig(defaultConfig({ maxClaimBytes: 2 * 1024 * 1024 }))).toEqual({ errors: [], warnings: [] });
    const low = checkConfig(defaultConfig({ maxClaimBytes: 1024 * 1024 }));
    expect(low.errors).toEqual([]);
    expect(low.warnings).toEqual([{ setting: 'LEASEHOLD_MAX_CLAIM_BYTES', rule: expect.stringMatching(/twice LEASEHOLD_MAX_PAYLOAD_BYTES.*claimed alone/) }]);
    expect(settingsOf(checkConfig(defaultConfig({ maxClaimBytes: 256 * 1024 * 1024 + 1 })).errors)).toEqual(['LEASEHOLD_MAX_CLAIM_BYTES']);
    expect(settingsOf(checkConfig(defaultConfig({ maxPayloadBytes: 128 * 1024 * 1024 + 1, maxClaimBytes: 256 * 1024 * 1024 })).errors)).toEqual(['LEASEHOLD_MAX_PAYLOAD_BYTES']);
    expect(settingsOf(problemsOf(() => loadConfig({ LEASEHOLD_MAX_CLAIM_BYTES: '0' })))).toEqual(['LEASEHOLD_MAX_CLAIM_BYTES']);
    expect(loadConfig({}, ['--max-claim-bytes', '4194304']).config.maxClaimBytes).toBe(4 * 1024 * 1024);
  });
});

describe('PATCH /queues/:queue/settings', () => {
  let t: TestBed;
  afterEach(() => t?.close());

  async function queue(name: string) {
    const res = await t.get(`/api/v1/queues/${name}`);
    expect(res.status).toBe(200);
    return res.json.queue;
  }

  test.each([
    [{ heartbeatMs: 20_000 }, 'heartbeatMs'],
    [{ leaseMs: 6000 }, 'heartbeatMs'],
    [{ graceMs: 1000 }, 'graceMs'],
    [{ heartbeatMs: 12_000, graceMs: 11_000 }, 'graceMs'],
    [{ backoffBaseMs: 10_000, backoffMaxMs: 5000 }, 'backoffMaxMs'],
  ])('an impossible combination %j is a 400 naming %s, and changes nothing', async (patch, field) => {
    t = await setup();
    await t.enqueue('q');
    await t.call('PATCH', '/api/v1/queues/q/settings', { graceMs: 15_000 });
    const before = await queue('q');
    const res = await t.call('PATCH', '/api/v1/queues/q/settings', patch);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', field });
    expect(await queue('q')).toEqual(before);
    expect(t.errors).toEqual([]);
  });

  test('out-of-range and mistyped values are 400 naming the field', async () => {
    t = await setup();
    await t.enqueue('q');
    const before = await queue('q');
    for (const [patch, field] of [
      [{ leaseMs: 0 }, 'leaseMs'],
      [{ leaseMs: '30000' }, 'leaseMs'],
      [{ graceMs: -1 }, 'graceMs'],
      [{ maxAttempts: 1.5 }, 'maxAttempts'],
      [{ paused: 'yes' }, 'paused'],
      [{ leseMs: 1000 }, 'leseMs'],
    ] as const) {
      const res = await t.call('PATCH', '/api/v1/queues/q/settings', patch);
      expect(res.status).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    expect(await queue('q')).toEqual(before);
  });

  test('a valid combination is stored; null goes back to the default', async () => {
    t = await setup();
    await t.enqueue('q');
    const res = await t.call('PATCH', '/api/v1/queues/q/settings', { leaseMs: 60_000, heartbeatMs: 20_000, graceMs: 20_000 });
    expect(res.status).toBe(200);
    expect(res.json.queue.settings).toMatchObject({ leaseMs: 60_000, heartbeatMs: 20_000, graceMs: 20_000 });
    // Lowering the lease alone would break the heartbeat rule with the stored heartbeat.
    const bad = await t.call('PATCH', '/api/v1/queues/q/settings', { leaseMs: 30_000 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.field).toBe('heartbeatMs');
    const reset = await t.call('PATCH', '/api/v1/queues/q/settings', { leaseMs: null, heartbeatMs: null, graceMs: null });
    expect(reset.status).toBe(200);
    expect(reset.json.queue.overrides).toEqual({});
    expect(reset.json.queue.settings).toMatchObject({ leaseMs: 30_000, heartbeatMs: 5000, graceMs: 10_000 });
    expect(t.errors).toEqual([]);
  });
});

test('openLeasehold with a short lease alone derives heartbeat and grace as the server does', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { openLeasehold } = await import('../../src/embedded/leasehold.ts');
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-embedded-lease-'));
  try {
    const lh = await openLeasehold({ databaseUrl: `file:${join(dir, 'db.sqlite')}`, config: { leaseMs: 1_000 } });
    expect(lh.config).toMatchObject({ leaseMs: 1_000, heartbeatMs: 333, graceMs: 333 });
    lh.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
