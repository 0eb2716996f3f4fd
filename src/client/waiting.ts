/**
 * Waiting on jobs, over POST /api/v1/jobs/wait: the server holds one request
 * for many jobs and answers when they change, so the number of requests
 * follows the wake-ups, not the jobs.
 *
 * - waitForJob(id): calls made in the same tick (`Promise.all(ids.map(...))`)
 *   share one request that answers as soon as any of their jobs finished;
 *   each caller keeps its own timeout and signal.
 * - waitForJobs(ids): one request per 1,000 jobs that answers when all of
 *   them finished (or its 30 s pass, and it is sent again).
 * - events(ids): every change of the named jobs (waiting, active, progress,
 *   completed, failed, cancelled, removed), from each job's state now.
 *
 * A busy server's 429 is waited out (its Retry-After) and the call sent
 * again; any other error rejects the callers it concerns.
 */
import type { Job, JobStatus } from '../core/wire.ts';
import { LeaseholdApiError, LeaseholdTimeoutError } from './errors.ts';
import type { Request } from './request.ts';
import type { JobHandle, TypedJob } from './typed.ts';

/** What the server takes per wait, and the longest it holds one. */
const MAX_JOBS_PER_WAIT = 1_000;
const MAX_WAIT_MS = 30_000;

const FINISHED: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface WaitOptions {
  /** Give up (LeaseholdTimeoutError) after this long. Default: wait as long as it takes. */
  timeoutMs?: number;
  /** Stop waiting when aborted (rejects with the signal's reason). */
  signal?: AbortSignal;
  /** @deprecated Ignored: the server holds the wait and answers when the job finishes, so the client no longer polls. */
  pollMs?: number;
  /** @deprecated Ignored, as pollMs. */
  maxPollMs?: number;
}

/** One change of a watched job. `removed`: no job has the id (never enqueued, or pruned after its retention). */
export type JobEvent<P = unknown, R = unknown> =
  | { type: 'waiting' | 'active' | 'progress' | 'completed' | 'failed' | 'cancelled'; id: string; job: TypedJob<P, R> }
  | { type: 'removed'; id: string; job: null };

export interface EventsOptions {
  /** Ends the iteration (it returns; the request in flight is cancelled). */
  signal?: AbortSignal;
  /** Stop watching a job once it finished (the default), so the iteration ends when all have. false: watch on (a failed job may be retried). */
  untilFinished?: boolean;
}

interface WaitAnswer {
  jobs: { version: string; job: Job }[];
  missing: string[];
  more: boolean;
}

export const idOf = (h: JobHandle): string => {
  const id = typeof h === 'string' ? h : h?.id;
  if (typeof id !== 'string' || id === '') throw new TypeError(`a job is named by its id (a string) or by what enqueue answered, got ${JSON.stringify(h)}`);
  return id;
};

const notFound = (id: string) => new LeaseholdApiError(404, 'not_found', `no job has id ${id}`, 'id');

export function waiting(request: Request) {
  /** POST /jobs/wait, with a 429 waited out (never past `deadline`). */
  async function waitCall(body: { jobs: { id: string; seen?: string }[]; waitMs: number; until: 'any' | 'all' }, signal: AbortSignal | undefined, deadline: number): Promise<WaitAnswer> {
    for (;;) {
      try {
        return await request<WaitAnswer>('POST', '/jobs/wait', body, { waitMs: body.waitMs, signal });
      } catch (err) {
        if (!(err instanceof LeaseholdApiError && err.status === 429)) throw err;
        const pause = Math.min(err.retryAfterMs ?? 1000, deadline - Date.now());
        if (pause <= 0) throw err;
        await sleep(pause, signal);
      }
    }
  }

  interface Caller {
    resolve(job: Job): void;
    reject(err: unknown): void;
    deadline: number;
  }
  /** waitForJob calls of one tick, by job id, and what cancels their shared request once none is left. */
  interface Group {
    callers: Map<string, Caller[]>;
    gone: AbortController;
  }
  /** The group of this tick; sent at its end. */
  let gathering: Group | undefined;

  /** A caller that gave up leaves its group; the group's request is cancelled once nobody waits on it. */
  function leave(group: Group, id: string, caller: Caller): void {
    const left = (group.callers.get(id) ?? []).filter((c) => c !== caller);
    if (left.length) group.callers.set(id, left);
    else group.callers.delete(id);
    if (group.callers.size === 0) group.gone.abort();
  }

  /** One shared request for a group's callers, again and again until each has its answer or gave up. */
  async function serve(group: Group): Promise<void> {
    const { callers, gone } = group;
    while (callers.size > 0) {
      const ids = [...callers.keys()].slice(0, MAX_JOBS_PER_WAIT);
      const latest = Math.max(...[...callers.values()].flat().map((c) => c.deadline));
      const waitMs = Math.max(0, Math.min(MAX_WAIT_MS, latest - Date.now()));
      let answer: WaitAnswer;
      try {
        answer = await waitCall({ jobs: ids.map((id) => ({ id })), waitMs, until: 'any' }, gone.signal, latest);
      } catch (err) {
        if (gone.signal.aborted) return;
        for (const list of [...callers.values()]) for (const c of list) c.reject(err);
        callers.clear();
        return;
      }
      for (const { job } of answer.jobs) {
        if (!FINISHED.has(job.status)) continue;
        for (const c of callers.get(job.id) ?? []) c.resolve(job);
        callers.delete(job.id);
      }
      for (const id of answer.missing) {
        for (const c of callers.get(id) ?? []) c.reject(notFound(id));
        callers.delete(id);
      }
    }
  }

  function waitForJob(handle: JobHandle, opts: WaitOptions = {}): Promise<Job> {
    const id = idOf(handle);
    return new Promise<Job>((resolve, reject) => {
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      if (!gathering) {
        const group: Group = (gathering = { callers: new Map(), gone: new AbortController() });
        queueMicrotask(() => {
          gathering = undefined;
          void serve(group);
        });
      }
      const group = gathering;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const end = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', aborted);
      };
      const caller: Caller = {
        deadline: opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs,
        resolve(job) {
          end();
          resolve(job);
        },
        reject(err) {
          end();
          reject(err);
        },
      };
      const giveUp = (err: unknown) => {
        leave(group, id, caller);
        caller.reject(err);
      };
      function aborted() {
        giveUp(opts.signal!.reason);
      }
      if (opts.timeoutMs !== undefined) timer = setTimeout(() => giveUp(new LeaseholdTimeoutError(`job ${id} is not finished after ${opts.timeoutMs} ms`)), opts.timeoutMs);
      opts.signal?.addEventListener('abort', aborted, { once: true });
      group.callers.set(id, [...(group.callers.get(id) ?? []), caller]);
    });
  }

  async function waitForJobs(handles: readonly JobHandle[], opts: WaitOptions = {}): Promise<Job[]> {
    const ids = handles.map(idOf);
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    const finished = new Map<string, Job>();
    const unique = [...new Set(ids)];
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += MAX_JOBS_PER_WAIT) chunks.push(unique.slice(i, i + MAX_JOBS_PER_WAIT));
    const gone = new AbortController();
    const stop = () => gone.abort(opts.signal?.reason);
    opts.signal?.throwIfAborted();
    opts.signal?.addEventListener('abort', stop, { once: true });
    try {
      await Promise.all(
        chunks.map(async (chunk) => {
          let left = chunk;
          while (left.length > 0) {
            if (gone.signal.aborted) throw gone.signal.reason;
            const time = deadline - Date.now();
            if (time <= 0) throw new LeaseholdTimeoutError(`${ids.filter((id) => !finished.has(id)).length} of ${ids.length} jobs are not finished after ${opts.timeoutMs} ms`);
            const answer = await waitCall({ jobs: left.map((id) => ({ id })), waitMs: Math.min(MAX_WAIT_MS, time), until: 'all' }, gone.signal, deadline);
            if (answer.missing.length > 0) throw notFound(answer.missing[0]!);
            for (const { job } of answer.jobs) if (FINISHED.has(job.status)) finished.set(job.id, job);
            left = left.filter((id) => !finished.has(id));
          }
        }),
      );
    } catch (err) {
      gone.abort(err);
      throw err;
    } finally {
      opts.signal?.removeEventListener('abort', stop);
    }
    return ids.map((id) => finished.get(id)!);
  }

  async function* events(handles: readonly JobHandle[], opts: EventsOptions = {}): AsyncGenerator<JobEvent, void, undefined> {
    const ids = [...new Set(handles.map(idOf))];
    if (ids.length > MAX_JOBS_PER_WAIT) throw new RangeError(`events watches at most ${MAX_JOBS_PER_WAIT} jobs at once (one wait request), got ${ids.length}: watch them in groups`);
    const untilFinished = opts.untilFinished ?? true;
    /** Each watched job's version last seen ('' until its first answer) and the job then. */
    const seen = new Map<string, { version: string; job: Job | null }>(ids.map((id) => [id, { version: '', job: null }]));
    const gone = new AbortController();
    const stop = () => gone.abort(opts.signal?.reason);
    if (opts.signal?.aborted) return;
    opts.signal?.addEventListener('abort', stop, { once: true });
    try {
      while (seen.size > 0) {
        let answer: WaitAnswer;
        try {
          const jobs = [...seen].map(([id, s]) => ({ id, seen: s.version }));
          answer = await waitCall({ jobs, waitMs: MAX_WAIT_MS, until: 'any' }, gone.signal, Infinity);
        } catch (err) {
          if (gone.signal.aborted) return;
          throw err;
        }
        for (const { version, job } of answer.jobs) {
          const before = seen.get(job.id);
          if (!before || before.version === version) continue;
          seen.set(job.id, { version, job });
          yield { type: eventType(before.job, job), id: job.id, job: job as TypedJob };
          if (untilFinished && FINISHED.has(job.status)) seen.delete(job.id);
        }
        for (const id of answer.missing) {
          if (!seen.delete(id)) continue;
          yield { type: 'removed', id, job: null };
        }
      }
    } finally {
      opts.signal?.removeEventListener('abort', stop);
      gone.abort();
    }
  }

  return { waitForJob, waitForJobs, events };
}

/** What changed, from the job as last seen (null: first seen) to now. */
function eventType(before: Job | null, now: Job): Exclude<JobEvent['type'], 'removed'> {
  switch (now.status) {
    case 'pending':
      return 'waiting';
    case 'running':
      // The same claim (fencing token) still running: its progress or checkpoint moved.
      return before?.status === 'running' && before.fencingToken === now.fencingToken ? 'progress' : 'active';
    default:
      return now.status;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
