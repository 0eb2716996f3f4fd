/**
 * Canary requeues over HTTP (admin), what `leasehold jobs requeue --canary`
 * and the dashboard's canary form call:
 *
 * - POST /queues/:queue/canary (operationId startCanaryRequeue): freezes
 *   the queue's running jobs a requeue would take (with `force`: all of
 *   them, which needs a reason anyway), takes the first step at once, and
 *   answers the run (201). `dryRun` answers the jobs and the steps, and
 *   starts nothing. Each later step is taken by the maintenance pass
 *   (src/maintenance/canary.ts) once the one before stayed healthy for its
 *   window; the run stops by itself, naming why, when it did not.
 * - GET /canary (listCanaryRuns), GET /canary/:id (getCanaryRun): progress.
 * - POST /canary/:id/cancel (cancelCanaryRun): nothing more is requeued;
 *   what was requeued stays.
 * Every check comes before anything is read or written: a refused request
 * starts nothing.
 */
import { CANARY_LIMITS, CANARY_MAX_JOBS, canarySteps, type CanaryOptions } from '../core/canary.ts';
import { invalid, LeaseholdError } from '../core/errors.ts';
import { iso } from '../core/job-record.ts';
import { holdWhy } from '../core/reaper.ts';
import { canaryOptions, startCanary } from '../engine/canary-start.ts';
import { apiActor } from './audit-actor.ts';
import { canaryRunWire } from './canary-view.ts';
import { parseQueue } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import type { CanaryPlanWire } from './view-schemas.ts';
import { bool, int, obj, optional, str, type Infer } from '../core/validate.ts';
import { FORCE_NEEDS_REASON } from '../engine/operator-actions.ts';

const RUNS_LISTED = 50;

const limitOf = (k: keyof CanaryOptions, description: string) => int({ ...CANARY_LIMITS[k], description });

const startBody = obj({
  first: limitOf('first', 'jobs in the first step'),
  growth: optional(limitOf('growth', 'each next step takes this many times the jobs of the one before (default 2)')),
  windowMs: optional(limitOf('windowMs', 'how long each step is watched before the next is taken (default 60000)')),
  maxFailures: optional(limitOf('maxFailures', "failed attempts allowed among a step's jobs before the run stops (default 0)")),
  maxStaleWrites: optional(limitOf('maxStaleWrites', "stale writes refused on a step's jobs allowed before the run stops (default 0)")),
  maxDuplicates: optional(limitOf('maxDuplicates', 'duplicate executions reported allowed before the run stops (default 0)')),
  maxHeartbeatLagMs: optional(limitOf('maxHeartbeatLagMs', 'the oldest heartbeat a new attempt may have before the run stops (default heartbeat interval + grace)')),
  limit: optional(int({ min: 1, max: CANARY_MAX_JOBS, description: `freeze at most this many jobs, lowest id first (default and most: ${CANARY_MAX_JOBS})` })),
  force: optional(bool('also take live leases (their jobs may run twice); needs a reason')),
  reason: optional(str({ min: 1, max: 500, description: 'why: kept on the run and in the audit trail; required unless dryRun' })),
  actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
  dryRun: optional(bool('list the jobs it would freeze and its steps, and start nothing')),
});

const cancelBody = obj({
  reason: str({ min: 1, max: 500, description: 'why: kept on the run and in the audit trail' }),
  actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
});

/** A run id as the path gives it: an unknown or malformed one is a 404 (ids are opaque). */
function runId(raw: string): number {
  const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id)) throw new LeaseholdError('not_found', `no canary run has id ${JSON.stringify(raw.slice(0, 40))}`, 'id');
  return id;
}

export function canaryRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  const cap = () => config.bulkActionCap ?? 100;

  r.add<Infer<typeof startBody>>(
    {
      method: 'post',
      path: '/queues/:queue/canary',
      role: 'admin',
      operationId: 'startCanaryRequeue',
      tag: 'queues',
      summary:
        "Requeue this queue's running jobs in watched steps: the first `first`, then `growth` times more after each step stayed healthy for `windowMs` (no failures, stale writes, duplicates or late heartbeats past the limits); stops by itself, naming why, when one did not. dryRun lists the jobs and steps",
      body: startBody,
      answers: {
        status: 201,
        schema: 'canaryRun',
        description: 'Started, its first step taken',
        also: { status: 200, schema: 'canaryPlan', description: 'dryRun: the jobs it would freeze and the size of each step; nothing started' },
      },
      errors: ['conflict'],
    },
    async (c, body) => {
      const queue = parseQueue(c.req.param('queue'));
      const force = body.force ?? false;
      if (force && !body.reason) throw invalid('reason', FORCE_NEEDS_REASON);
      if (!body.dryRun && !body.reason) throw invalid('reason', 'a canary requeue needs a reason (kept in the audit trail); or send dryRun: true to see what it would take');
      const options = canaryOptions(config, body);
      const now = clock.now();
      if (body.dryRun) {
        const jobIds = await store.canaryRunSelect({ queue, force, now, rules: config, limit: body.limit ?? CANARY_MAX_JOBS });
        const held = force ? null : await store.reaperHoldRead({ now });
        return c.json({
          dryRun: true,
          queue,
          force,
          selected: jobIds.length,
          jobIds: jobIds.map(String),
          steps: canarySteps({ first: options.first, growth: options.growth, cap: cap() }, jobIds.length),
          hold: held ? { until: iso(held.holdUntil), why: holdWhy({ holdUntil: held.holdUntil, holdCause: held.cause }, held.now) } : null,
        } satisfies CanaryPlanWire);
      }
      const by = apiActor(c, config, body.actor);
      const started = await startCanary({ store, config, jobsBecameClaimable: deps.engine.jobsBecameClaimable }, { queue, force, options, limit: body.limit, by, reason: body.reason!, now });
      return c.json({ run: canaryRunWire(started) }, 201);
    },
  );

  r.add(
    { method: 'get', path: '/canary', role: 'admin', operationId: 'listCanaryRuns', tag: 'queues', summary: `The latest ${RUNS_LISTED} canary requeues, newest first`, answers: { schema: 'canaryRuns' } },
    async (c) => {
      const runs = await store.canaryRunsList({ limit: RUNS_LISTED });
      return c.json({ runs: runs.map((run) => canaryRunWire({ run })) });
    },
  );

  r.add(
    {
      method: 'get',
      path: '/canary/:id',
      role: 'admin',
      operationId: 'getCanaryRun',
      tag: 'queues',
      summary: 'A canary requeue: its options, progress, each step (its jobs, and why any was skipped) and every decision with its reason',
      answers: { schema: 'canaryRun' },
    },
    async (c) => {
      const id = runId(c.req.param('id') ?? '');
      const found = await store.canaryRunRead({ id });
      if (!found) throw new LeaseholdError('not_found', `no canary run has id ${id}`, 'id');
      return c.json({ run: canaryRunWire(found) });
    },
  );

  r.add<Infer<typeof cancelBody>>(
    {
      method: 'post',
      path: '/canary/:id/cancel',
      role: 'admin',
      operationId: 'cancelCanaryRun',
      tag: 'queues',
      summary: 'Cancel a canary requeue that is still watching: no further step is taken; the jobs already requeued stay as they are',
      body: cancelBody,
      answers: { schema: 'canaryRun' },
      errors: ['conflict'],
    },
    async (c, body) => {
      const id = runId(c.req.param('id') ?? '');
      const by = apiActor(c, config, body.actor);
      const now = clock.now();
      const outcome = await store.canaryRunCancel({ runId: id, by, reason: body.reason, now });
      if (!outcome.ok && outcome.reason === 'not_found') throw new LeaseholdError('not_found', `no canary run has id ${id}`, 'id');
      if (!outcome.ok) throw new LeaseholdError('conflict', `canary run ${id} is ${outcome.state}; only a run still watching can be cancelled`, 'id', { state: outcome.state });
      return c.json({ run: canaryRunWire((await store.canaryRunRead({ id }))!) });
    },
  );
}
