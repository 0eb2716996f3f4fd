/**
 * Dead letters (admin): POST /queues/:queue/redrive (operationId
 * redriveDeadLetters, tag queues), where :queue is a dead-letter queue (the
 * deadLetterQueue another queue names). Sends its jobs back to their own
 * queues, pending now with a fresh attempt budget (src/db/store/dead-letters.ts),
 * lowest id first, at most `limit` and never more than
 * LEASEHOLD_BULK_ACTION_CAP; `fromQueue` or `ids` narrow it. `dryRun` lists
 * what it would send back and changes nothing. As a bulk requeue: a reason is
 * required unless dryRun, and the run is in the audit trail with who and why.
 * The plan and the redrive are the engine's (src/engine/redrive.ts), as for
 * the dashboard's dead-letter page; the answer says how many went back to
 * each queue (`movedTo`).
 */
import { invalid } from '../core/errors.ts';
import { iso } from '../core/job-record.ts';
import { diedText, planRedrive, REDRIVE_NEEDS_REASON } from '../engine/redrive.ts';
import { apiActor } from './audit-actor.ts';
import { parseQueue, queueName } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, bool, int, obj, optional, str, type Infer } from '../core/validate.ts';

export function deadLetterRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  const cap = () => config.bulkActionCap ?? 100;
  const body = obj({
    dryRun: optional(bool('list the jobs it would send back (up to limit) and change nothing')),
    limit: optional(int({ min: 1, max: cap(), description: `send back at most this many, lowest id first (default and most: the cap, ${cap()})` })),
    fromQueue: optional(queueName),
    ids: optional(arr(str({ min: 1, max: 20, pattern: /^[1-9][0-9]{0,15}$/, description: 'a job id', patternHelp: 'must be a job id' }), { min: 1, max: cap() })),
    reason: optional(str({ min: 1, max: 500, description: 'why: kept in the audit trail; required unless dryRun' })),
    actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
  });

  r.add<Infer<typeof body>>(
    {
      method: 'post',
      path: '/queues/:queue/redrive',
      role: 'admin',
      operationId: 'redriveDeadLetters',
      tag: 'queues',
      answers: { schema: 'redrive' },
      summary: `Send this dead-letter queue's jobs back to their own queues (pending now, fresh attempts), at most limit (never more than the cap, ${cap()}); dryRun lists what it would send back`,
      body,
    },
    async (c, b) => {
      const deadLetterQueue = parseQueue(c.req.param('queue'));
      if (!b.dryRun && !b.reason) throw invalid('reason', `${REDRIVE_NEEDS_REASON}; or send dryRun: true to see what it would send back`);
      const limit = b.limit ?? cap();
      const filter = { deadLetterQueue, fromQueue: b.fromQueue, ids: b.ids?.map(Number) };
      const now = clock.now();
      const listed = await planRedrive(store, { ...filter, limit });
      const answer = { deadLetterQueue, matching: listed.matching, limit };
      if (b.dryRun) {
        return c.json({
          ...answer,
          dryRun: true,
          ids: listed.jobs.map((j) => String(j.id)),
          jobs: listed.jobs.map((j) => ({
            id: String(j.id),
            queue: j.queue_name,
            attempt: j.attempt_count,
            maxAttempts: j.max_attempts,
            died: diedText(j),
            lastError: j.last_error,
            deadLetteredAt: iso(j.dead_lettered_at),
          })),
        });
      }
      const done = await deps.engine.redrive({ ...filter, limit, by: apiActor(c, config, b.actor), reason: b.reason!, now });
      return c.json({ ...answer, dryRun: false, changed: done.moved.length, ids: done.moved.map((j) => String(j.id)), movedTo: done.movedTo });
    },
  );
}
