/**
 * Observability API (role `reader`: the read-only or the admin token):
 * metrics as JSON, alerts, tuning. All three read
 * one metrics snapshot computed from the database (the store's
 * metricsSnapshot, src/db/store/metrics.ts).
 * Times are epoch ms in `snapshot.now`, plus ISO `at`; durations are ms.
 */
import { DEFAULT_ALERT_THRESHOLDS, evaluateAlerts } from '../core/alerts.ts';
import { snapshotMaintenanceVerdict } from '../core/maintenance-watch.ts';
import { tuningWithEvidence, whatIfForQueue, whatIfQuery } from '../engine/what-if.ts';
import { parseQueue } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import type { AlertsWire, MetricsWire, TuningWire, WhatIfWire } from './view-schemas.ts';

export function observabilityRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  const snapshot = () => store.metricsSnapshot({ now: clock.now(), config });

  r.add({ method: 'get', path: '/metrics', role: 'reader', operationId: 'getMetrics', tag: 'observability', answers: { schema: 'metrics' }, summary: 'Metrics as JSON: per-queue counts, leases, heartbeat lag, suspect jobs, reaps, stale writes, enqueue dedup, duplicate executions, once() effects, all-time totals, attempts, runtimes; the last maintenance pass' }, async (c) => {
    const m = await snapshot();
    // `maintenance`: the last completed reaper pass and whether it is late (src/core/maintenance-watch.ts), as /healthz says it.
    const maintenance = { ...m.maintenance, ...snapshotMaintenanceVerdict(m, config.reaperIntervalMs) };
    return c.json({ at: new Date(m.now).toISOString(), now: m.now, windows: m.windows, workers: m.workers, maintenance, queues: m.queues } satisfies MetricsWire);
  });

  r.add({ method: 'get', path: '/alerts', role: 'reader', operationId: 'listAlerts', tag: 'observability', answers: { schema: 'alerts' }, summary: 'Every alert per queue, firing or ok, with its value and threshold' }, async (c) => {
    const m = await snapshot();
    const alerts = evaluateAlerts(m);
    // `thresholds`: the server's; each alert says which of them its queue overrides.
    return c.json({ at: new Date(m.now).toISOString(), firing: alerts.filter((a) => a.state === 'firing').length, thresholds: DEFAULT_ALERT_THRESHOLDS, alerts } satisfies AlertsWire);
  });

  r.add({ method: 'get', path: '/tuning', role: 'reader', operationId: 'getTuning', tag: 'observability', answers: { schema: 'tuning' }, summary: 'Recommended lease, heartbeat and grace per queue beside the current values, with rule violations' }, async (c) => {
    const m = await snapshot();
    return c.json({ at: new Date(m.now).toISOString(), queues: await tuningWithEvidence(store, m) } satisfies TuningWire);
  });

  r.add(
    {
      method: 'get',
      path: '/queues/:queue/tuning/what-if',
      role: 'reader',
      operationId: 'getTuningWhatIf',
      tag: 'observability',
      answers: { schema: 'whatIf' },
      errors: ['not_found'],
      query: whatIfQuery(config.maxLeaseMs),
      summary: "The window's heartbeat silences, reaps and workers' blocks replayed against today's lease and grace and a candidate: false reaps (healthy jobs taken back) and how much later real zombies are recovered",
    },
    async (c, _body, q) => {
      const queue = parseQueue(c.req.param('queue'));
      const report = await whatIfForQueue(deps, { queue, candidate: { leaseMs: q.leaseMs, graceMs: q.graceMs, heartbeatMs: q.heartbeatMs }, windowMs: q.windowMs, now: clock.now() });
      return c.json({ at: new Date(report.window.untilMs - 1).toISOString(), ...report } satisfies WhatIfWire);
    },
  );
}
