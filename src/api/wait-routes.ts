/**
 * POST /jobs/wait: one request waits on many jobs (what the producer
 * client's waitForJob, waitForJobs and events are built on). The waiting is
 * src/api/job-watchers.ts; this file decodes, reads the answer and encodes.
 */
import { invalid } from '../core/errors.ts';
import { toJob } from '../core/job-record.ts';
import type { JobWatchState } from '../db/store/watch.ts';
import { jobIdField } from './http.ts';
import { counts, jobWatchers, waitHolds, MAX_JOB_WAIT_MS, MAX_WAIT_JOBS, WAIT_ANSWER_BYTES, waitIsolated, type WatchEntry } from '../engine/job-watchers.ts';
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
  const { store, config } = deps;
  const read = (p: { ids: readonly number[]; versionsOf: readonly number[] }) => store.jobsWatchStates(p);

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
      const all = body.until === 'all';
      const ids = entries.map((e) => e.id);
      const versionsOf = entries.filter((e) => e.seen !== undefined).map((e) => e.id);
      const watchers = jobWatchers(deps.db);
      watchers.admit(config.maxJobWaits);
      try {
        const holds = (states: JobWatchState[]) => waitHolds(entries, all, new Map(states.map((s) => [s.id, s])));
        let states = await read({ ids, versionsOf });
        const waitMs = body.waitMs ?? 0;
        if (!holds(states) && waitMs > 0) {
          const p = { entries, all, ms: waitMs, signal: c.req.raw.signal, read };
          if (deps.isolatedRequests) await waitIsolated({ ...p, closed: () => watchers.isClosed });
          else await watchers.wait(p);
          states = await read({ ids, versionsOf });
        }
        const byId = new Map(states.map((s) => [s.id, s]));
        const counting = entries.filter((e) => counts(e, byId.get(e.id)));
        const missing = counting.filter((e) => !byId.has(e.id)).map((e) => String(e.id));
        const wanted = counting.filter((e) => byId.has(e.id)).map((e) => e.id);
        const rows = await store.jobsGetWithinBytes({ ids: wanted, maxBytes: WAIT_ANSWER_BYTES });
        logField(c, { jobCount: rows.length });
        return c.json({
          jobs: rows.map((row) => ({ version: row.version, job: toJob(row) })),
          missing,
          more: rows.length < wanted.length,
        });
      } finally {
        watchers.leave();
      }
    },
  );
}
