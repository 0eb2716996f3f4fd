/**
 * One wait on many jobs (POST /jobs/wait, the producer client's waitForJob,
 * waitForJobs and events): read their states, wait on the engine's watchers
 * (src/engine/job-watchers.ts) until the condition holds, then read the
 * jobs that count, whole, within WAIT_ANSWER_BYTES. The route decodes and
 * encodes; this is the rest.
 */
import type { Config } from '../core/config.ts';
import type { JobStore, JobWatchState } from '../db/store/port.ts';
import { counts, waitHolds, waitIsolated, WAIT_ANSWER_BYTES, type JobWatchers, type WatchEntry } from './job-watchers.ts';

export interface JobWaitRequest {
  entries: readonly WatchEntry[];
  /** Every entry must count, not just one. */
  all: boolean;
  /** Longest to wait, in ms; 0: answer now. */
  waitMs: number;
  /** Aborts when the client went away. */
  signal?: AbortSignal | undefined;
}

export interface JobWaitAnswer {
  /** The jobs that count, whole, each with its version, in the order named (within WAIT_ANSWER_BYTES). */
  jobs: Awaited<ReturnType<JobStore['jobsGetWithinBytes']>>;
  /** Ids named that no job has. */
  missing: number[];
  /** Some jobs that count were left out of `jobs` (asking again answers them at once). */
  more: boolean;
}

export async function waitOnJobs(
  deps: { store: JobStore; config: Config; watchers: JobWatchers; isolatedRequests: boolean },
  p: JobWaitRequest,
): Promise<JobWaitAnswer> {
  const { store, watchers } = deps;
  const read = (q: { ids: readonly number[]; versionsOf: readonly number[] }) => store.jobsWatchStates(q);
  const ids = p.entries.map((e) => e.id);
  const versionsOf = p.entries.filter((e) => e.seen !== undefined).map((e) => e.id);
  watchers.admit(deps.config.maxJobWaits);
  try {
    const holds = (states: JobWatchState[]) => waitHolds(p.entries, p.all, new Map(states.map((s) => [s.id, s])));
    let states = await read({ ids, versionsOf });
    if (!holds(states) && p.waitMs > 0) {
      const w = { entries: p.entries, all: p.all, ms: p.waitMs, signal: p.signal, read };
      if (deps.isolatedRequests) await waitIsolated({ ...w, closed: () => watchers.isClosed });
      else await watchers.wait(w);
      states = await read({ ids, versionsOf });
    }
    const byId = new Map(states.map((s) => [s.id, s]));
    const counting = p.entries.filter((e) => counts(e, byId.get(e.id)));
    const missing = counting.filter((e) => !byId.has(e.id)).map((e) => e.id);
    const wanted = counting.filter((e) => byId.has(e.id)).map((e) => e.id);
    const jobs = await store.jobsGetWithinBytes({ ids: wanted, maxBytes: WAIT_ANSWER_BYTES });
    return { jobs, missing, more: jobs.length < wanted.length };
  } finally {
    watchers.leave();
  }
}
