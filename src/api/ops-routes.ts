/**
 * The operator's API (admin), what `leasehold workers` and the bulk forms of
 * `leasehold jobs` call:
 *
 * - GET /workers (operationId listWorkers, tag operators): the registry, each
 *   worker's liveness, what it reports and what the database says it holds.
 * - POST /queues/:queue/bulk (operationId bulkQueueAction, tag operators):
 *   retry, cancel or requeue the jobs of one queue and status, lowest id
 *   first, at most `limit` and never more than LEASEHOLD_BULK_ACTION_CAP.
 *   `dryRun` lists what it would touch and changes nothing. The same guarded
 *   statements as the dashboard's bulk actions (src/db/store/operator.ts):
 *   requeue does only what the reaper would do now (requeue, or fail for
 *   good where a job's budgets are spent; nothing during a server's hold,
 *   whose end the answer gives), unless `force` (which needs a reason);
 *   every changed job is in the audit trail with who and why.
 */
import { invalid } from '../core/errors.ts';
import { BULK_KINDS, bulkKindFor, type BulkKind } from '../core/bulk-kind.ts';
import { JOB_STATUSES, type JobStatus } from '../core/wire.ts';
import { iso } from '../core/job-record.ts';
import { holdWhy } from '../core/reaper.ts';
import { requeueWire } from './outcomes.ts';
import { apiActor } from './audit-actor.ts';
import { parseQueue, queueName } from './http.ts';
import { workerView } from './worker-view.ts';
import { forceRuleProblem } from '../engine/operator-actions.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import type { BulkDoneWire, BulkDryRunWire, WorkersWire } from './view-schemas.ts';
import { bool, int, obj, optional, queryBool, str, word, type Infer } from '../core/validate.ts';

const DAY = 24 * 3600 * 1000;
/** Workers not seen for a day are left out, as on the dashboard's workers page. */
const WORKERS_SINCE_MS = DAY;
const WORKERS_LIMIT = 500;
/** Matching jobs are counted up to this many (a dry run stays cheap on a huge table), as on the dashboard. */
const BULK_COUNT_LIMIT = 100_000;

/** The status each action takes when none is given. */
const DEFAULT_STATUS: Record<BulkKind, JobStatus> = { retry: 'failed', cancel: 'pending', requeue: 'running' };

const workersQuery = obj({
  queue: optional(queueName),
  alive: optional(queryBool('only live workers (true), or only those not seen within LEASEHOLD_WORKER_ALIVE_MS (false)')),
});

export function opsRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  const cap = () => config.bulkActionCap ?? 100;

  const bulkBody = obj({
    action: word(BULK_KINDS),
    status: optional(word(JOB_STATUSES, 'retry: failed (default) or cancelled; cancel: pending; requeue: running')),
    dryRun: optional(bool('list the jobs it would touch (up to limit) and change nothing')),
    limit: optional(int({ min: 1, max: cap(), description: `act on at most this many jobs, lowest id first (default and most: the cap, ${cap()})` })),
    reason: optional(str({ min: 1, max: 500, description: 'why: kept in the audit trail; required unless dryRun' })),
    actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
    force: optional(bool('requeue only: also take live leases (their jobs may run twice); needs a reason')),
  });

  r.add<undefined, Infer<typeof workersQuery>>(
    {
      method: 'get',
      path: '/workers',
      role: 'admin',
      operationId: 'listWorkers',
      tag: 'observability',
      answers: { schema: 'workers' },
      summary: 'The worker registry (seen in the last 24 hours): liveness, queues, host, pid, version, started, last seen, restarts, running jobs reported and held, and the counters the SDK reports with its beats (event-loop blocks and the longest, heartbeat failures, leases lost; null from SDKs that do not send them)',
      query: workersQuery,
    },
    async (c, _body, q) => {
      // One "now" for the whole answer: alive and lease expiry are judged at the same instant.
      const n = clock.now();
      const now = typeof n === 'number' ? n : await store.readNow();
      const listed = await store.workersList({ sinceMs: now - WORKERS_SINCE_MS, limit: WORKERS_LIMIT });
      const held = await store.workersHeldJobs({ workerIds: listed.map((w) => w.id), now });
      const views = listed.map((w) => workerView(w, now, config.workerAliveMs, held.get(w.id)));
      const filtered = views.filter(
        (w) => (q.queue === undefined || w.queues?.includes(q.queue)) && (q.alive === undefined || w.alive === q.alive),
      );
      return c.json({
        at: new Date(now).toISOString(),
        workerAliveMs: config.workerAliveMs,
        alive: views.filter((w) => w.alive).length,
        workers: filtered,
      } satisfies WorkersWire);
    },
  );

  r.add(
    {
      method: 'post',
      path: '/queues/:queue/bulk',
      role: 'admin',
      operationId: 'bulkQueueAction',
      tag: 'queues',
      answers: { schema: 'bulk' },
      summary: `Retry, cancel or requeue this queue's jobs of one status, at most limit (never more than the cap, ${cap()}); dryRun lists what it would touch`,
      body: bulkBody,
    },
    async (c, body) => {
      const queue = parseQueue(c.req.param('queue'));
      const kind = body.action;
      const status = body.status ?? DEFAULT_STATUS[kind];
      // Every check before anything is read or written: a refused request changes nothing.
      if (bulkKindFor(status) !== kind) {
        throw invalid('status', `status ${status} does not fit ${kind}: retry takes failed or cancelled jobs, cancel pending ones, requeue running ones`);
      }
      const problem = forceRuleProblem({ action: kind, force: body.force ?? false, reason: body.reason });
      if (problem) throw invalid(problem.field, problem.message);
      if (!body.dryRun && !body.reason) throw invalid('reason', 'a bulk action needs a reason (kept in the audit trail); or send dryRun: true to see what it would touch');
      const limit = body.limit ?? cap();
      const filter = { kind, queue, status, force: body.force ?? false, rules: config };
      const now = clock.now();
      const matching = await store.jobsBulkMatching({ ...filter, now, max: BULK_COUNT_LIMIT });
      // A server's hold after its restart or pause leaves expired leases alone: say until when.
      const held = kind === 'requeue' && !filter.force ? await store.reaperHoldRead({ now }) : null;
      const answer = {
        queue,
        action: kind,
        status,
        force: filter.force,
        // At least this many when matchingCapped: counting stops there.
        matching,
        matchingCapped: matching >= BULK_COUNT_LIMIT,
        cap: cap(),
        limit,
        ...(kind === 'requeue' && !filter.force ? { hold: held ? { until: iso(held.holdUntil), why: holdWhy({ holdUntil: held.holdUntil, holdCause: held.cause }, held.now) } : null } : {}),
      };
      if (body.dryRun) {
        const jobs = await store.jobsBulkPreview({ ...filter, now, limit });
        return c.json({
          ...answer,
          dryRun: true,
          wouldChange: jobs.length,
          jobs: jobs.map((j) => ({
            id: String(j.id),
            queue: j.queue_name,
            status: j.status,
            attempt: j.attempt_count,
            maxAttempts: j.max_attempts,
            lockedBy: j.locked_by,
            leaseExpiresAt: iso(j.lease_expires_at),
            updatedAt: iso(j.updated_at),
            lastError: j.last_error,
            // A requeue without force: what it does to this job (requeue, or fail for good as the reaper would).
            ...(j.requeue ? { requeue: requeueWire(j.requeue) } : {}),
          })),
        } satisfies BulkDryRunWire);
      }
      const by = apiActor(c, config, body.actor);
      const audit = {
        by,
        action: 'jobs.bulk' as const,
        queue,
        target: `${kind} ${status} jobs in queue ${queue}`,
        after: JSON.stringify({ queue, status, action: kind, limit, force: filter.force }),
        reason: body.reason!,
        now,
      };
      const ids = await deps.engine.bulkAct({ ...filter, actor: by.actor, reason: body.reason!, now, limit, also: { audit } });
      return c.json({ ...answer, dryRun: false, changed: ids.length, ids: ids.map(String) } satisfies BulkDoneWire);
    },
  );
}
