/**
 * The worker API: claim, heartbeat (one or many), extend, checkpoint, complete
 * (one or many), fail, release, and the worker's liveness beat. Every write to
 * a running job is fenced by its lock token (src/db/store/owned.ts).
 */
import { jobsClaimPending } from '../db/store/claim.js';
import { jobFailIfOwned, jobsCompleteIfOwned, jobsReleaseIfOwned } from '../db/store/finish.js';
import { jobCheckpointIfOwned, jobsHeartbeatIfOwned } from '../db/store/lease.js';
import { iso, toJob } from '../db/store/record.js';
import { workerBeat } from '../db/store/workers.js';
import { jsonOrNull } from '../db/sql.js';
import type { OwnedOutcome } from '../db/store/owned.js';
import { jobIdField, lockTokenField, parseJobId, parseQueue, queueName, workerIdField } from './http.js';
import { batchEntry, leaseFields, ownedError } from './outcomes.js';
import type { AppDeps, Routes } from './router.js';
import { arr, bool, int, json, obj, optional, str } from './validate.js';

const MAX_BATCH = 1_000;
const MAX_ERROR_CHARS = 16_000;

function single(outcomes: OwnedOutcome[]) {
  const o = outcomes[0]!;
  if (!o.ok) throw ownedError(o);
  return o.job;
}

export function workerRoutes(r: Routes, deps: AppDeps) {
  const { db, config, clock } = deps;
  const leaseMs = int({ min: 1_000, max: config.maxLeaseMs, description: 'lease length in ms' });

  r.add(
    {
      method: 'post',
      path: '/queues/:queue/claim',
      role: 'worker',
      summary: 'Claim up to `limit` ready jobs; an empty list means nothing is ready',
      body: obj({ workerId: workerIdField, limit: optional(int({ min: 1, max: config.maxClaimBatch })), leaseMs: optional(leaseMs) }),
    },
    async (c, body) => {
      const claimed = await jobsClaimPending(db, {
        queue: parseQueue(c.req.param('queue')),
        workerId: body.workerId,
        limit: body.limit ?? 1,
        leaseMs: body.leaseMs,
        now: clock.now(),
        defaults: config,
      });
      return c.json({
        jobs: claimed.map((j) => ({
          ...toJob(j),
          lockToken: j.lock_token,
          heartbeatIntervalMs: j.heartbeat_ms,
          ...leaseFields(j),
        })),
      });
    },
  );

  const heartbeatBody = obj({ workerId: workerIdField, lockToken: lockTokenField, progress: optional(json('progress, any JSON')), leaseMs: optional(leaseMs) });
  for (const path of ['/jobs/:id/heartbeat', '/jobs/:id/extend'] as const) {
    r.add(
      {
        method: 'post',
        path,
        role: 'worker',
        summary: path.endsWith('extend') ? 'Extend the lease to leaseMs from now (before a long blocking step)' : 'Renew the lease, optionally reporting progress',
        body: heartbeatBody,
      },
      async (c, body) => {
        const job = single(
          await jobsHeartbeatIfOwned(db, {
            workerId: body.workerId,
            leases: [{ id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, data: jsonOrNull(body.progress) }],
            leaseMs: body.leaseMs,
            now: clock.now(),
          }),
        );
        return c.json({ id: String(job.id), ...leaseFields(job) });
      },
    );
  }

  r.add(
    {
      method: 'post',
      path: '/heartbeats',
      role: 'worker',
      summary: "Renew many of one worker's leases in one call; one result per lease",
      body: obj({
        workerId: workerIdField,
        leases: arr(obj({ id: jobIdField, lockToken: lockTokenField, progress: optional(json()) }), { min: 1, max: MAX_BATCH }),
        leaseMs: optional(leaseMs),
      }),
    },
    async (c, body) => {
      const outcomes = await jobsHeartbeatIfOwned(db, {
        workerId: body.workerId,
        leases: body.leases.map((l) => ({ id: Number(l.id), lockToken: l.lockToken, data: jsonOrNull(l.progress) })),
        leaseMs: body.leaseMs,
        now: clock.now(),
      });
      return c.json({ results: outcomes.map((o) => batchEntry(o, leaseFields)) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/checkpoint',
      role: 'worker',
      summary: 'Save state for the next attempt (also renews the lease)',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, checkpoint: json('any JSON') }),
    },
    async (c, body) => {
      const job = single(
        await jobCheckpointIfOwned(db, {
          workerId: body.workerId,
          id: parseJobId(c.req.param('id')!),
          lockToken: body.lockToken,
          checkpoint: JSON.stringify(body.checkpoint),
          now: clock.now(),
        }),
      );
      return c.json({ id: String(job.id), ...leaseFields(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/complete',
      role: 'worker',
      summary: 'Complete the job with an optional result',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, result: optional(json()) }),
    },
    async (c, body) => {
      const job = single(
        await jobsCompleteIfOwned(db, {
          workerId: body.workerId,
          results: [{ id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, data: jsonOrNull(body.result) }],
          now: clock.now(),
        }),
      );
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/completions',
      role: 'worker',
      summary: 'Complete many jobs in one statement; each is fenced by its own token; one outcome per job',
      body: obj({
        workerId: workerIdField,
        results: arr(obj({ id: jobIdField, lockToken: lockTokenField, result: optional(json()) }), { min: 1, max: MAX_BATCH }),
      }),
    },
    async (c, body) => {
      const outcomes = await jobsCompleteIfOwned(db, {
        workerId: body.workerId,
        results: body.results.map((x) => ({ id: Number(x.id), lockToken: x.lockToken, data: jsonOrNull(x.result) })),
        now: clock.now(),
      });
      return c.json({ results: outcomes.map((o) => batchEntry(o, (job) => ({ status: job.status, completedAt: iso(job.completed_at) }))) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/fail',
      role: 'worker',
      summary: 'Fail the attempt: retried with backoff while attempts remain, unless retryable is false',
      body: obj({
        workerId: workerIdField,
        lockToken: lockTokenField,
        error: str({ min: 1, max: MAX_ERROR_CHARS, description: 'what went wrong' }),
        retryable: optional(bool('default true')),
        retryAfterMs: optional(int({ min: 0, max: 365 * 24 * 3600 * 1000 })),
      }),
    },
    async (c, body) => {
      const job = single(
        await jobFailIfOwned(db, {
          workerId: body.workerId,
          id: parseJobId(c.req.param('id')!),
          lockToken: body.lockToken,
          error: body.error,
          retryable: body.retryable ?? true,
          retryAfterMs: body.retryAfterMs,
          now: clock.now(),
          defaults: config,
        }),
      );
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/release',
      role: 'worker',
      summary: 'Give the lease back (shutdown): the job is ready again at once and the attempt does not count',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, reason: optional(str({ min: 1, max: 200 })) }),
    },
    async (c, body) => {
      const job = single(
        await jobsReleaseIfOwned(db, {
          workerId: body.workerId,
          leases: [{ id: parseJobId(c.req.param('id')!), lockToken: body.lockToken }],
          reason: body.reason ?? 'released_by_worker',
          now: clock.now(),
        }),
      );
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/workers/beat',
      role: 'worker',
      summary: "A worker's liveness beat: lets the reaper tell a dead worker from a slow job",
      body: obj({
        workerId: workerIdField,
        host: optional(str({ max: 255 })),
        pid: optional(int({ min: 0, max: 2 ** 31 })),
        version: optional(str({ max: 100 })),
        queues: optional(arr(queueName, { min: 0, max: 100 })),
        runningCount: optional(int({ min: 0, max: 1_000_000 })),
      }),
    },
    async (c, body) => {
      await workerBeat(db, { id: body.workerId, ...body, now: clock.now() });
      return c.json({ ok: true });
    },
  );
}
