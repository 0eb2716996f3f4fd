/** Admin API: queue health and settings, pause/resume, delete, one reaper pass now. */
import type { AlertThresholds } from '../core/alerts.ts';
import { checkQueueSettings, MAX_JOB_TIMEOUT_MS, type QueueDefaults } from '../core/config.ts';
import { invalid, LeaseholdError } from '../core/errors.ts';
import { iso } from '../core/job-record.ts';
import { ON_LOST_POLICIES } from '../core/wire.ts';
import { apiActor } from './audit-actor.ts';
import { parseQueue, queueName } from './http.ts';
import { DEFAULT_MAX_SNOOZES } from '../core/snooze.ts';
import { queueView } from './queue-view.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import type { ReaperWire } from './view-schemas.ts';
import { bool, int, nullable, obj, optional, queryBool, word, type Infer } from '../core/validate.ts';
import { alertThresholdsBody, groupMaxRunningField, groupRateLimitField, maxRunningField, rateLimitField, rateLimitModeField } from './fields.ts';
import { deleteQueue } from '../engine/queue-delete.ts';

const DAY = 24 * 3600 * 1000;

/** DELETE /queues/:queue?purge=true: also delete the queue's finished jobs. */
const deleteQuery = obj({
  purge: optional(queryBool("true: delete the queue's finished jobs (completed, failed, cancelled) with it")),
});

export function adminRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;

  r.add({ method: 'get', path: '/queues', role: 'admin', operationId: 'listQueues', tag: 'queues', summary: 'Counts, health and settings of every queue', answers: { schema: 'queues' } }, async (c) => {
    const queues = await store.queuesHealth({ now: clock.now(), defaults: config });
    return c.json({ queues: queues.map(queueView) });
  });

  r.add({ method: 'get', path: '/queues/:queue', role: 'admin', operationId: 'getQueue', tag: 'queues', summary: 'Counts, health and settings of one queue', answers: { schema: 'queue' }, errors: ['not_found'] }, async (c) => {
    const name = parseQueue(c.req.param('queue'));
    const [queue] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
    if (!queue) throw new LeaseholdError('not_found', `no queue is named ${name}`, 'queue');
    return c.json({ queue: queueView(queue) });
  });

  r.add<undefined, Infer<typeof deleteQuery>>(
    {
      method: 'delete',
      path: '/queues/:queue',
      role: 'admin',
      operationId: 'deleteQueue',
      tag: 'queues',
      summary:
        'Delete a queue that holds nothing: its settings and bookkeeping go, audited. Refused (409, saying why) while it holds pending or running jobs or a schedule enqueues to it, and while it keeps finished jobs unless purge=true deletes them with it',
      answers: { schema: 'queueDeleted' },
      errors: ['not_found', 'conflict'],
      query: deleteQuery,
    },
    async (c, _body, q) => {
      const name = parseQueue(c.req.param('queue'));
      const done = await deleteQueue(store, { queue: name, purge: q.purge === true, audit: { by: apiActor(c, config), now: clock.now() } });
      if (!done.deleted) throw new LeaseholdError(done.code, done.message, 'queue');
      return c.json({ deleted: name, purgedFinishedJobs: done.purgedFinishedJobs });
    },
  );

  const duration = (min: number, max: number) => optional(nullable(int({ min, max })));
  r.add(
    {
      method: 'patch',
      path: '/queues/:queue/settings',
      role: 'admin',
      operationId: 'updateQueueSettings',
      tag: 'queues',
      answers: { schema: 'queue' },
      summary: "Override the server's lease, heartbeat, grace, attempts, backoff or retention for one queue (null: back to the default)",
      body: obj({
        leaseMs: duration(1_000, config.maxLeaseMs),
        heartbeatMs: duration(100, config.maxLeaseMs),
        graceMs: duration(100, 30 * DAY),
        maxAttempts: duration(1, 1000),
        maxLostAttempts: duration(1, 1000),
        backoffBaseMs: duration(1, 30 * DAY),
        backoffMaxMs: duration(1, 30 * DAY),
        retentionMs: duration(60_000, 3650 * DAY),
        timeoutMs: optional(nullable(int({ min: 1_000, max: MAX_JOB_TIMEOUT_MS, description: 'hard time limit per attempt (a job\'s own timeoutMs wins); null: the server default' }))),
        stallMs: optional(nullable(int({ min: 1_000, max: MAX_JOB_TIMEOUT_MS, description: 'a running job without a progress or checkpoint change for this long is stalled; null: off' }))),
        maxRunning: maxRunningField,
        rateLimit: rateLimitField,
        rateLimitMode: rateLimitModeField,
        groupMaxRunning: groupMaxRunningField,
        groupRateLimit: groupRateLimitField,
        paused: optional(bool()),
        onLost: optional(
          nullable(
            word(ON_LOST_POLICIES, "what a lost attempt of this queue's jobs leads to: 'retry' runs it again (idempotent jobs); 'hold' keeps it for a person to release, complete or fail (side effects that cannot be fenced); null: back to 'retry'. A job's own onLost wins"),
          ),
        ),
        deadLetterQueue: optional(nullable(queueName)),
        maxSnoozes: optional(nullable(int({ min: 0, max: 1_000_000, description: `how many times one job may snooze before a snooze is refused; null: the default, ${DEFAULT_MAX_SNOOZES}` }))),
      }),
    },
    async (c, body) => {
      const name = parseQueue(c.req.param('queue'));
      const [current] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
      const merged: QueueDefaults = { ...config, ...current?.overrides };
      for (const [key, value] of Object.entries(body)) {
        if (key === 'paused' || key === 'onLost' || key === 'stallMs' || key === 'maxRunning' || key === 'rateLimit') continue;
        if (key === 'rateLimitMode' || key === 'groupMaxRunning' || key === 'groupRateLimit') continue;
        if (key === 'deadLetterQueue' || key === 'maxSnoozes') continue;
        (merged as unknown as Record<string, number>)[key] = value === null ? (config as unknown as Record<string, number>)[key]! : (value as number);
      }
      // A queue's dead letters are its own failed jobs: it cannot be its own dead-letter queue.
      if (body.deadLetterQueue === name) throw invalid('deadLetterQueue', `a queue cannot be its own dead-letter queue: name another queue than ${name}, or null for none`);
      // The same lease rules as the server's own settings, named by field.
      const { errors } = checkQueueSettings(merged, (key) => key);
      if (errors.length) throw invalid(errors[0]!.setting, `${errors[0]!.setting} ${errors[0]!.rule}`);
      const audit = { by: apiActor(c, config), action: 'queue.settings' as const, queue: name, target: `queue ${name}`, now: clock.now() };
      await store.queueUpsertSettings({ queue: name, patch: body, now: clock.now(), also: { audit } });
      const [queue] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
      return c.json({ queue: queueView(queue!) });
    },
  );

  r.add(
    {
      method: 'put',
      path: '/queues/:queue/alerts',
      role: 'admin',
      operationId: 'setQueueAlertThresholds',
      tag: 'queues',
      answers: { schema: 'queue' },
      summary: "Set this queue's alert thresholds (fields left out use the server's; {} clears every override)",
      body: alertThresholdsBody,
    },
    async (c, body) => {
      const name = parseQueue(c.req.param('queue'));
      const audit = { by: apiActor(c, config), action: 'queue.alert_thresholds' as const, queue: name, target: `queue ${name}`, now: clock.now() };
      await store.queueSetAlertThresholds({ queue: name, thresholds: body as Partial<AlertThresholds>, now: clock.now(), also: { audit } });
      const [queue] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
      return c.json({ queue: queueView(queue!) });
    },
  );

  for (const [action, paused] of [['pause', true], ['resume', false]] as const) {
    r.add(
      {
        method: 'post',
        path: `/queues/:queue/${action}`,
        role: 'admin',
        operationId: paused ? 'pauseQueue' : 'resumeQueue',
        tag: 'queues',
        summary: paused ? 'Stop claims from this queue (running jobs go on)' : 'Let claims take jobs again',
        answers: { schema: 'paused' },
      },
      async (c) => {
        const name = parseQueue(c.req.param('queue'));
        const audit = { by: apiActor(c, config), action: paused ? ('queue.pause' as const) : ('queue.resume' as const), queue: name, target: `queue ${name}`, now: clock.now() };
        await store.queueUpsertSettings({ queue: name, patch: { paused }, now: clock.now(), also: { audit } });
        return c.json({ queue: name, paused });
      },
    );
  }

  r.add(
    {
      method: 'post',
      path: '/reaper/run',
      role: 'admin',
      operationId: 'runReaper',
      tag: 'queues',
      summary: "Run one reaper pass now and say what it did; during the hold after a server's restart or pause it takes no expired lease (held, and hold says until when), as the servers' own reapers do",
      answers: { schema: 'reaperReport' },
    },
    async (c) => {
      const { hold, ...report } = await deps.engine.maintenancePass(clock.now());
      return c.json({ ...report, at: iso(report.at), ...(hold ? { hold: { until: iso(hold.until), why: hold.why } } : {}) } satisfies ReaperWire);
    },
  );
}
