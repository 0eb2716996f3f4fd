/**
 * Dead letters (admin): POST /queues/:queue/redrive (operationId
 * redriveDeadLetters, tag queues), where :queue is a dead-letter queue (the
 * deadLetterQueue another queue names). Sends its jobs back to their own
 * queues, pending now with a fresh attempt budget (src/db/store/dead-letters.ts),
 * lowest id first, at most `limit` and never more than
 * LEASEHOLD_BULK_ACTION_CAP; `fromQueue` or `ids` narrow it. `dryRun` lists
 * what it would send back and changes nothing. As a bulk requeue: a reason is
 * required unless dryRun, and the run is in the audit trail with who and why.
 */
import { invalid } from '../core/errors.ts';
import { iso } from '../core/job-record.ts';
import { apiActor } from './audit-actor.ts';
import { parseQueue, queueName } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, bool, int, obj, optional, str, type Infer } from '../core/validate.ts';

/** Matching dead letters are counted up to this many, as for bulk actions. */
const COUNT_LIMIT = 100_000;

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
      if (!b.dryRun && !b.reason) throw invalid('reason', 'a redrive needs a reason (kept in the audit trail); or send dryRun: true to see what it would send back');
      const limit = b.limit ?? cap();
      const filter = { deadLetterQueue, fromQueue: b.fromQueue, ids: b.ids?.map(Number) };
      const now = clock.now();
      const listed = await store.jobsDeadLetterList({ ...filter, limit, max: COUNT_LIMIT });
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
            died: `${j.last_event}${j.last_event_reason ? ` (${j.last_event_reason})` : ''}`,
            lastError: j.last_error,
            deadLetteredAt: iso(j.dead_lettered_at),
          })),
        });
      }
      const by = apiActor(c, config, b.actor);
      const audit = {
        by,
        action: 'jobs.bulk' as const,
        queue: deadLetterQueue,
        target: `redrive dead letters of ${deadLetterQueue}`,
        after: JSON.stringify({ redrive: deadLetterQueue, fromQueue: b.fromQueue ?? null, ids: b.ids ?? null, limit }),
        reason: b.reason!,
        now,
      };
      const ids = await store.jobsRedrive({ ...filter, actor: by.actor, reason: b.reason!, now, limit, also: { audit } });
      return c.json({ ...answer, dryRun: false, changed: ids.length, ids: ids.map(String) });
    },
  );
}
