/**
 * Recurring jobs (admin): /schedules CRUD. A schedule is a cron expression
 * read in an IANA time zone, or a fixed interval; the maintenance pass
 * enqueues its due occurrences (src/maintenance/schedules.ts). Creating,
 * changing or resuming a schedule sets its next run from now: occurrences
 * from before (or from while it was paused) are not run.
 */
import { invalid, LeaseholdError, requireStorableText } from '../core/errors.ts';
import { nextOccurrence, scheduleSpecProblem, type ScheduleSpec } from '../core/schedule.ts';
import { MAX_JOB_TIMEOUT_MS } from '../core/config.ts';
import { parseQueue, QUEUE_PATTERN, queueName } from './http.ts';
import { scheduleView } from './schedule-view.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { bool, int, json, nullable, obj, optional, str, word } from '../core/validate.ts';
import { SCHEDULE_CATCH_UP, SCHEDULE_OVERLAP } from '../core/wire.ts';
import { CATCH_UP_MAX_WINDOW_MS } from '../maintenance/schedules.ts';
import type { ScheduleJobOptions } from '../db/store/port.ts';

const DAY = 24 * 3600 * 1000;

const jobOptions = obj(
  {
    priority: optional(int({ min: -1000, max: 1000, description: 'higher runs first; default 0' })),
    maxAttempts: optional(int({ min: 1, max: 1000 })),
    timeoutMs: optional(int({ min: 1, max: MAX_JOB_TIMEOUT_MS })),
  },
  'options of every job the schedule enqueues',
);

const fields = {
  queue: queueName,
  cron: optional(nullable(str({ min: 1, max: 200, description: 'a cron expression (5 or 6 fields, croner syntax), read in timeZone; give it or intervalMs' }))),
  timeZone: optional(nullable(str({ min: 1, max: 64, description: 'IANA time zone for cron, such as Europe/Berlin; default UTC' }))),
  intervalMs: optional(nullable(int({ min: 1_000, max: 366 * DAY, description: 'run every this many ms instead of a cron expression' }))),
  payload: optional(json('the payload of every job it enqueues')),
  jobOptions: optional(jobOptions),
  paused: optional(bool('a paused schedule enqueues nothing; resuming sets its next run from now')),
  catchUp: optional(word(SCHEDULE_CATCH_UP, "missed occurrences (no pass or timer ran at their time): 'latest' (default) runs the latest once, 'all' runs each within catchUpWindowMs (oldest first, at most 100 per schedule per pass), 'none' runs only an occurrence still on time")),
  catchUpWindowMs: optional(nullable(int({ min: 1_000, max: CATCH_UP_MAX_WINDOW_MS, description: "catchUp 'all': how far back occurrences are run (default 1 hour, at most 7 days)" }))),
  overlap: optional(word(SCHEDULE_OVERLAP, "'allow' (default) enqueues every occurrence; 'skip' skips one while an earlier occurrence's job is pending or running")),
};

const createBody = obj({ name: str({ min: 1, max: 128, pattern: QUEUE_PATTERN, patternHelp: 'must be 1-128 characters of letters, digits, _ . : -, starting with a letter or digit' }), ...fields });
const patchBody = obj({ ...fields, queue: optional(queueName) });

const scheduleName = (raw: string | undefined) => {
  const name = raw ?? '';
  if (!QUEUE_PATTERN.test(name)) throw invalid('name', 'name must be 1-128 characters of letters, digits, _ . : -, starting with a letter or digit');
  return name;
};

export function scheduleRoutes(r: Routes, deps: AppDeps) {
  const { store, clock } = deps;
  const nowMs = async () => {
    const n = clock.now();
    return typeof n === 'number' ? n : store.readNow();
  };
  /** The spec checked (400 naming the field) and its first run after now. */
  const firstRun = (spec: ScheduleSpec, now: number) => {
    // Stored as text: a lone surrogate or NUL is refused by name before croner sees it (src/core/text.ts).
    if (spec.cron !== null) requireStorableText(spec.cron, 'cron');
    if (spec.timeZone !== null) requireStorableText(spec.timeZone, 'timeZone');
    const problem = scheduleSpecProblem(spec);
    if (problem) throw invalid(problem.field, problem.message);
    const next = nextOccurrence(spec, now);
    if (next === null) throw invalid('cron', 'cron never matches a time after now');
    return next;
  };

  r.add({ method: 'get', path: '/schedules', role: 'admin', operationId: 'listSchedules', tag: 'schedules', summary: 'Every schedule, with its next runs and last run', answers: { schema: 'schedules' } }, async (c) =>
    c.json({ schedules: (await store.schedulesList()).map(scheduleView) }),
  );

  r.add(
    {
      method: 'post',
      path: '/schedules',
      role: 'admin',
      operationId: 'createSchedule',
      tag: 'schedules',
      summary: 'Create a schedule: name, queue, cron (+ timeZone) or intervalMs, payload, jobOptions, paused',
      body: createBody,
      answers: { schema: 'schedule', status: 201 },
      errors: ['conflict'],
    },
    async (c, body) => {
      const now = await nowMs();
      const spec: ScheduleSpec = { cron: body.cron ?? null, timeZone: body.timeZone ?? null, intervalMs: body.intervalMs ?? null };
      if (spec.cron !== null) requireStorableText(spec.cron, 'cron');
      if (spec.timeZone !== null) requireStorableText(spec.timeZone, 'timeZone');
      const nextRunAt = firstRun(spec, now);
      const created = await store.scheduleCreate({
        name: body.name,
        queue: parseQueue(body.queue),
        ...spec,
        payload: body.payload ?? null,
        jobOptions: body.jobOptions ?? {},
        paused: body.paused ?? false,
        nextRunAt,
        catchUp: body.catchUp ?? 'latest',
        catchUpWindowMs: body.catchUpWindowMs ?? null,
        overlap: body.overlap ?? 'allow',
        now,
      });
      if (!created) throw new LeaseholdError('conflict', `a schedule is named ${body.name} already: change it with PATCH /schedules/${body.name}; nothing was created`, 'name');
      deps.engine.schedulesChanged();
      return c.json({ schedule: scheduleView(created) }, 201);
    },
  );

  r.add({ method: 'get', path: '/schedules/:name', role: 'admin', operationId: 'getSchedule', tag: 'schedules', summary: 'One schedule', answers: { schema: 'schedule' }, errors: ['not_found'] }, async (c) => {
    const name = scheduleName(c.req.param('name'));
    const s = await store.scheduleGet({ name });
    if (!s) throw new LeaseholdError('not_found', `no schedule is named ${name}`, 'name');
    return c.json({ schedule: scheduleView(s) });
  });

  r.add(
    {
      method: 'patch',
      path: '/schedules/:name',
      role: 'admin',
      operationId: 'updateSchedule',
      tag: 'schedules',
      summary: 'Change a schedule (fields left out stay); a new timing or a resume sets the next run from now',
      body: patchBody,
      answers: { schema: 'schedule' },
      errors: ['not_found'],
    },
    async (c, body) => {
      // The body's text first (as a create does), then the schedule it names.
      if (typeof body.cron === 'string') requireStorableText(body.cron, 'cron');
      if (typeof body.timeZone === 'string') requireStorableText(body.timeZone, 'timeZone');
      const name = scheduleName(c.req.param('name'));
      const s = await store.scheduleGet({ name });
      if (!s) throw new LeaseholdError('not_found', `no schedule is named ${name}`, 'name');
      const now = await nowMs();
      const timing = body.cron !== undefined || body.intervalMs !== undefined || body.timeZone !== undefined;
      // Switching to cron clears the interval and the other way round, unless both are given (then the spec check says so).
      const spec: ScheduleSpec = {
        cron: body.cron !== undefined ? body.cron : body.intervalMs != null ? null : s.cron,
        intervalMs: body.intervalMs !== undefined ? body.intervalMs : body.cron != null ? null : s.interval_ms,
        timeZone: body.timeZone !== undefined ? body.timeZone : body.intervalMs != null ? null : s.time_zone,
      };
      const resumed = body.paused === false && Boolean(s.paused);
      const nextRunAt = timing || resumed ? firstRun(spec, now) : s.next_run_at;
      const updated = await store.scheduleReplace({
        name,
        queue: body.queue === undefined ? s.queue_name : parseQueue(body.queue),
        ...spec,
        payload: body.payload !== undefined ? body.payload : JSON.parse(s.payload),
        jobOptions: body.jobOptions ?? (JSON.parse(s.job_options) as ScheduleJobOptions),
        paused: body.paused ?? Boolean(s.paused),
        nextRunAt,
        catchUp: body.catchUp ?? s.catch_up,
        catchUpWindowMs: body.catchUpWindowMs !== undefined ? body.catchUpWindowMs : s.catch_up_window_ms,
        overlap: body.overlap ?? s.overlap,
        now,
      });
      if (!updated) throw new LeaseholdError('not_found', `no schedule is named ${name}`, 'name');
      deps.engine.schedulesChanged();
      return c.json({ schedule: scheduleView(updated) });
    },
  );

  r.add({ method: 'delete', path: '/schedules/:name', role: 'admin', operationId: 'deleteSchedule', tag: 'schedules', summary: 'Delete a schedule (the jobs it enqueued stay)', answers: { schema: 'scheduleDeleted' }, errors: ['not_found'] }, async (c) => {
    const name = scheduleName(c.req.param('name'));
    if (!(await store.scheduleDelete({ name }))) throw new LeaseholdError('not_found', `no schedule is named ${name}`, 'name');
    return c.json({ deleted: name });
  });
}
