/**
 * POST /jobs/wait: one request waits on many jobs (what the producer
 * client's waitForJob, waitForJobs and events are built on). The waiting is
 * the engine's (src/engine/job-wait.ts); this file decodes and encodes.
 */
import { invalid } from '../core/errors.ts';
import { toJob } from '../core/job-record.ts';
import { jobIdField } from './http.ts';
import { MAX_JOB_WAIT_MS, MAX_WAIT_JOBS, WAIT_ANSWER_BYTES, type WatchEntry } from '../engine/job-watchers.ts';
import { logField } from './request-log.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, int, obj, optional, str } from '../core/validate.ts';

const waitBody = obj({
  jobs: arr(
    obj({
      id: jobIdField,
      seen: optional(
        str({
          min: 0,
          max: 100,
          description: "the job's version as a previous answer gave it: the job counts once its version differs (any change of status, a new claim, new progress or checkpoint). '' counts at once, answering its current state. Left out: the job counts once it is completed, failed or cancelled",
        }),
      ),
    }),
    { min: 1, max: MAX_WAIT_JOBS },
  ),
  waitMs: optional(int({ min: 0, max: MAX_JOB_WAIT_MS, description: 'longest to wait for the condition, in ms; 0 or absent: answer now' })),
  until: optional(str({ min: 3, max: 3, pattern: /^(any|all)$/, patternHelp: 'must be any or all', description: 'any, the default: answer as soon as one job counts; all: only when every job counts, or when waitMs passes' })),
});

export function waitRoutes(r: Routes, deps: AppDeps) {

  r.add(
    {
      method: 'post',
      path: '/jobs/wait',
      role: 'worker',
      operationId: 'waitForJobs',
      tag: 'jobs',
      answers: { schema: 'waited' },
      summary:
        `Wait on up to ${MAX_WAIT_JOBS} jobs at once: answers when one of them counts (or, with until: all, every one; a job that does not exist answers at once either way), or after waitMs (at most ${MAX_JOB_WAIT_MS} ms). A job counts when it is completed, failed or cancelled, or, given the version it was last seen at (seen), when that changed. The answer has the jobs that count, whole, each with its version, in the order named and within ${WAIT_ANSWER_BYTES / 1024 / 1024} MiB of JSON (always at least one; more: true says some were left out, and asking again answers them at once), and the ids no job has (missing). Changes made on this server answer at once; changes made elsewhere (another server on the database, the reaper, the dashboard) at the next re-read (every 250 ms, longer when many jobs are watched; on Workers each wait re-reads at most 20 times). At most LEASEHOLD_MAX_JOB_WAITS waits at once per server: past it, 429 with Retry-After. The worker token may wait`,
      body: waitBody,
    },
    async (c, body) => {
      const entries: WatchEntry[] = body.jobs.map((j) => ({ id: Number(j.id), seen: j.seen }));
      const seenIds = new Set<number>();
      entries.forEach((e, i) => {
        if (seenIds.has(e.id)) throw invalid(`jobs[${i}].id`, `jobs[${i}].id names job ${e.id} a second time`);
        seenIds.add(e.id);
      });
      const answer = await deps.engine.waitForJobs({ entries, all: body.until === 'all', waitMs: body.waitMs ?? 0, signal: c.req.raw.signal });
      logField(c, { jobCount: answer.jobs.length });
      return c.json({
        jobs: answer.jobs.map((row) => ({ version: row.version, job: toJob(row) })),
        missing: answer.missing.map(String),
        more: answer.more,
      });
    },
  );
}
