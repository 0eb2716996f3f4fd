/**
 * /metrics as Prometheus' own linter reads it, and the alerting rules we ship:
 * `promtool check metrics` on the real app's exposition after a workload that
 * makes every kind of series (histograms with observations, reaps by reason,
 * rate limits, percentiles of the hour), `promtool check rules` and
 * `promtool test rules` on deploy/prometheus/, and the Grafana dashboard's
 * queries (deploy/grafana/leasehold.json) parsed by promtool as rules and
 * naming only series /metrics has. Needs promtool (Debian:
 * apt-get install -y --no-install-recommends prometheus; CI installs it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const PROMTOOL = 'promtool';
const hasPromtool = spawnSync(PROMTOOL, ['--version'], { encoding: 'utf8' }).status === 0;
if (!hasPromtool) {
  console.warn('test/api/prometheus-lint.test.ts: skipped, promtool is missing (apt-get install -y --no-install-recommends prometheus)');
}

const ROOT = join(import.meta.dirname, '..', '..');
const RULES_DIR = join(ROOT, 'deploy', 'prometheus');
const GRAFANA = join(ROOT, 'deploy', 'grafana', 'leasehold.json');
const api = '/api/v1';
/** Lease 30 s + grace 10 s + worker-alive 15 s: the reaper takes the job without deferring. */
const PAST_LEASE_OWNER_DEAD = 30_000 + 10_000 + 15_000 + 1;

const promtool = (args: string[], input?: string) => {
  const res = spawnSync(PROMTOOL, args, { input, encoding: 'utf8', cwd: RULES_DIR });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
};

let t: TestBed;
afterEach(() => t?.close());

describe.skipIf(!hasPromtool)('promtool', () => {
  test('check metrics: /metrics passes the linter, histograms with observations included', async () => {
    t = await setup();
    // Completed jobs of several run times (the hour's percentiles and the histograms), on two queues.
    for (const [queue, ms] of [['emails', 40], ['emails', 1_200], ['reports', 7_000]] as const) {
      const job = await t.enqueue(queue);
      t.clock.advance(300);
      const [c] = await t.claim(queue, 'W');
      t.clock.advance(ms);
      await t.post(`${api}/heartbeats`, { workerId: 'W', leases: [{ id: c!.id, lockToken: c!.lockToken }] });
      expect((await t.post(`${api}/jobs/${job.id}/complete`, { workerId: 'W', lockToken: c!.lockToken })).status).toBe(200);
    }
    // A dedup, a stale write, a reap (a reason label), a rate-limited queue, a job still running.
    await t.enqueue('emails', { payload: {}, idempotencyKey: 'k' });
    await t.post(`${api}/queues/emails/jobs`, { payload: {}, idempotencyKey: 'k' });
    const lost = await t.enqueue('reports');
    await t.claim('reports', 'gone');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`)).json.requeued).toEqual([{ id: lost.id, reason: 'reaped_due_to_expired_lease' }]);
    expect((await t.post(`${api}/jobs/${lost.id}/complete`, { workerId: 'gone', lockToken: 'f'.repeat(32) })).status).toBe(409);
    expect((await t.call('PATCH', `${api}/queues/limited/settings`, { rateLimit: { max: 1, windowMs: 60_000 } })).status).toBe(200);
    await t.enqueue('limited');
    await t.enqueue('limited');
    await t.claim('limited', 'W');
    // Groups whose keys need the format's escapes, or none of JSON's (a tab, a control character), one running.
    const keys = ['quote " back \\ slash', 'line\nbreak', 'tab\there', 'ctl\u0001', 'uni é 😀', '__other__'];
    expect((await t.post(`${api}/queues/tenants/jobs`, { jobs: keys.map((group) => ({ payload: {}, group })) })).status).toBe(201);
    await t.claim('tenants', 'W');

    const res = await t.get('/metrics');
    expect(res.status).toBe(200);
    // promtool passes an empty input: make sure there is something to lint.
    for (const line of [
      '# TYPE leasehold_job_runtime_seconds histogram',
      '# TYPE leasehold_job_queue_wait_seconds histogram',
      '# TYPE leasehold_heartbeat_interval_seconds histogram',
      'leasehold_job_runtime_seconds_count{queue="emails"} 2',
      'leasehold_job_runtime_recent_seconds{queue="reports",percentile="99"} 7',
      'leasehold_jobs_reaped_total{queue="reports",reason="reaped_due_to_expired_lease"} 1',
      'leasehold_queue_rate_limited{queue="limited"} 1',
      'leasehold_groups{queue="tenants"} 6',
      'leasehold_group_jobs{queue="tenants",group="line\\nbreak",state="pending"} 1',
    ]) {
      expect(res.text).toContain(line);
    }
    const lint = promtool(['check', 'metrics'], res.text);
    expect(lint).toEqual({ status: 0, output: '' });

    // The linter is not a no-op: the shapes /metrics used to have (a gauge with `le`, one with `quantile`) fail it.
    const old = promtool(['check', 'metrics'], '# HELP x_lag Lag.\n# TYPE x_lag gauge\nx_lag{le="1"} 0\n# HELP x_runtime_seconds Runtime.\n# TYPE x_runtime_seconds gauge\nx_runtime_seconds{quantile="0.5"} 1\n');
    expect(old.status).not.toBe(0);
    expect(old.output).toContain('non-histogram metrics should not have "le" label');
    expect(old.output).toContain('non-summary metrics should not have "quantile" label');
    expect(t.errors).toEqual([]);
  });

  test('check rules and test rules: the alerting rules we ship are valid and fire as their unit tests say', () => {
    const check = promtool(['check', 'rules', 'leasehold-alerts.yml']);
    expect(check.output).toContain('SUCCESS');
    expect(check.status).toBe(0);
    const unit = promtool(['test', 'rules', 'leasehold-alerts.test.yml']);
    expect(unit.output).toContain('SUCCESS');
    expect(unit.status).toBe(0);
  });

  test("the Grafana dashboard's queries are PromQL promtool accepts, over series /metrics has", async () => {
    const dashboard = JSON.parse(readFileSync(GRAFANA, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((x) => x.expr));
    expect(exprs.length).toBeGreaterThan(10);
    // Each query as a recording rule: `promtool check rules` parses its PromQL.
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-grafana-'));
    try {
      const file = join(dir, 'queries.yml');
      const rules = exprs.map((expr, i) => `      - record: leasehold_grafana:query_${i}\n        expr: ${JSON.stringify(expr)}`);
      writeFileSync(file, `groups:\n  - name: grafana\n    rules:\n${rules.join('\n')}\n`);
      const check = promtool(['check', 'rules', file]);
      expect(check.output).toContain(`SUCCESS: ${exprs.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Every leasehold_ series a query names is one /metrics serves (histograms by their _bucket).
    t = await setup();
    await t.enqueue('q');
    const text = (await t.get('/metrics')).text;
    const served = new Set([...text.matchAll(/^(leasehold_\w+?)(?:\{| )/gm)].map((m) => m[1]!));
    const named = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(leasehold_[a-z_]+)\b/g)].map((m) => m[1]!)));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((n) => !served.has(n))).toEqual([]);
  });
});
