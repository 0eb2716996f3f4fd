/**
 * The producer client: enqueue, read, wait for, cancel and retry jobs over the
 * HTTP API, with nothing but `fetch`.
 *
 * Enqueues made together (in the same tick, e.g. `Promise.all(items.map(...))`)
 * go out as one bulk request per queue, which the server writes 500 at a time;
 * each caller still gets its own job, or its own error: a bulk refused because
 * of one item rejects that item's caller and is sent again without it.
 */
import type { Enqueued, Job, JobStatus } from '../core/wire.ts';
import { sdkFetch } from '../http/node-fetch.ts';
import { LeaseholdApiError, LeaseholdNetworkError, LeaseholdTimeoutError } from './errors.ts';
import { withProducerSpans } from './tracing.ts';

export interface ClientOptions {
  /** Base URL of the leasehold server, e.g. http://127.0.0.1:8787 */
  url: string;
  /**
   * LEASEHOLD_WORKER_TOKEN (enqueue, getJob, waitForJob) or
   * LEASEHOLD_ADMIN_TOKEN (everything, including cancel and retry).
   */
  token?: string | undefined;
  /** Per-request timeout. Default 30 s. */
  requestTimeoutMs?: number;
  /** Most jobs in one coalesced bulk request. Default 1,000 (the server takes up to 10,000). */
  maxBatchSize?: number;
  fetch?: typeof fetch;
}

export interface EnqueueOptions {
  /** Unique per queue: a duplicate returns the existing job (`deduplicated: true`). */
  idempotencyKey?: string;
  /**
   * How long the key deduplicates. 'retained' (default): while a job enqueued
   * with it that way is kept, finished or not. 'active': only while a job
   * with it is pending or running; once it finished, the key makes a new job.
   */
  uniqueWhile?: 'retained' | 'active';
  /** Higher runs first (-1000 to 1000, default 0). */
  priority?: number;
  /** Run no earlier than this many ms from now (or give runAt). */
  delayMs?: number;
  /** Run no earlier than this time. */
  runAt?: Date | string;
  /** Attempts before the job fails for good. */
  maxAttempts?: number;
  /** Hard deadline per attempt, enforced by the reaper. */
  timeoutMs?: number;
}

export interface EnqueueItem extends EnqueueOptions {
  payload: unknown;
}

/** What an enqueue answers: the new job (or the existing one, for a duplicate idempotency key). */
export type { Enqueued };

export interface WaitOptions {
  /** Give up (LeaseholdTimeoutError) after this long. Default: wait as long as it takes. */
  timeoutMs?: number;
  /** Stop waiting when aborted (rejects with the signal's reason). */
  signal?: AbortSignal;
  /** First poll interval; it grows by half each poll up to maxPollMs. Default 200 ms. */
  pollMs?: number;
  /** Default 2 s. */
  maxPollMs?: number;
}

export interface Client {
  enqueue(queue: string, payload: unknown, options?: EnqueueOptions): Promise<Enqueued>;
  /** One bulk request (several, beyond 10,000 items); one answer per item, in order. */
  enqueueMany(queue: string, items: readonly EnqueueItem[]): Promise<Enqueued[]>;
  getJob(id: string): Promise<Job>;
  /** Polls until the job is completed, failed or cancelled, and answers it. */
  waitForJob(id: string, options?: WaitOptions): Promise<Job>;
  /** Cancels a pending job (admin token). */
  cancel(id: string, options?: { reason?: string }): Promise<Job>;
  /** Runs a failed or cancelled job again with a fresh attempt budget (admin token). */
  retry(id: string, options?: { reason?: string }): Promise<Job>;
}

const SERVER_MAX_BULK = 10_000;
const FINISHED: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

interface Caller {
  job: Record<string, unknown>;
  resolve(e: Enqueued): void;
  reject(err: unknown): void;
}

type BulkAnswer = { jobs: Enqueued[] };
type SingleAnswer = { job: Job; deduplicated?: boolean };

export function createClient(options: ClientOptions): Client {
  const base = options.url.replace(/\/+$/, '') + '/api/v1';
  const doFetch = options.fetch ?? sdkFetch;
  const timeout = options.requestTimeoutMs ?? 30_000;
  const maxBatch = Math.min(options.maxBatchSize ?? 1000, SERVER_MAX_BULK);
  /** Enqueues waiting for the end of the tick, per queue. */
  const gathering = new Map<string, Caller[]>();

  async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await doFetch(base + path, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeout),
      });
    } catch (err) {
      throw new LeaseholdNetworkError(`cannot reach leasehold at ${options.url}: ${(err as Error).message}`, { cause: err });
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new LeaseholdNetworkError(`leasehold answered ${res.status} without JSON on ${method} ${path}`);
    }
    if (res.ok) return json as T;
    const error = (json as { error?: { code?: string; message?: string; field?: string } }).error ?? {};
    throw new LeaseholdApiError(res.status, error.code ?? `http_${res.status}`, error.message ?? `${method} ${path} answered ${res.status}`, error.field);
  }

  const jobPath = (id: string) => `/jobs/${encodeURIComponent(id)}`;
  const queuePath = (queue: string) => `/queues/${encodeURIComponent(queue)}/jobs`;

  async function sendOne(queue: string, caller: Caller): Promise<void> {
    try {
      const { job, deduplicated } = await request<SingleAnswer>('POST', queuePath(queue), caller.job);
      caller.resolve({ id: job.id, queue: job.queue, status: job.status, priority: job.priority, availableAt: job.availableAt, idempotencyKey: job.idempotencyKey, deduplicated: deduplicated === true });
    } catch (err) {
      caller.reject(err);
    }
  }

  /** Sends callers as one bulk; an item the server refuses is taken out (its caller gets the error) and the rest sent again. */
  async function sendBulk(queue: string, callers: Caller[]): Promise<void> {
    if (callers.length === 0) return;
    if (callers.length === 1) return sendOne(queue, callers[0]!);
    try {
      const answer = await request<BulkAnswer>('POST', queuePath(queue), { jobs: callers.map((c) => c.job) });
      callers.forEach((c, i) => c.resolve(answer.jobs[i]!));
    } catch (err) {
      const item = err instanceof LeaseholdApiError && err.status === 400 ? itemOf(err) : undefined;
      if (item && item.index < callers.length) {
        callers[item.index]!.reject(item.error);
        return sendBulk(queue, callers.filter((_, i) => i !== item.index));
      }
      if (err instanceof LeaseholdApiError && err.status === 413) {
        // Together over the body limit: halves, until a lone caller gets its own 413.
        const half = Math.ceil(callers.length / 2);
        await Promise.all([sendBulk(queue, callers.slice(0, half)), sendBulk(queue, callers.slice(half))]);
        return;
      }
      for (const c of callers) c.reject(err);
    }
  }

  function flush(queue: string): void {
    const callers = gathering.get(queue) ?? [];
    gathering.delete(queue);
    for (let i = 0; i < callers.length; i += maxBatch) void sendBulk(queue, callers.slice(i, i + maxBatch));
  }

  return withProducerSpans({
    enqueue(queue, payload, opts = {}) {
      return new Promise<Enqueued>((resolve, reject) => {
        let callers = gathering.get(queue);
        if (!callers) {
          gathering.set(queue, (callers = []));
          queueMicrotask(() => flush(queue));
        }
        callers.push({ job: wireJob({ ...opts, payload }), resolve, reject });
      });
    },

    async enqueueMany(queue, items) {
      const out: Enqueued[] = [];
      for (let offset = 0; offset < items.length; offset += SERVER_MAX_BULK) {
        const jobs = items.slice(offset, offset + SERVER_MAX_BULK).map(wireJob);
        try {
          out.push(...(await request<BulkAnswer>('POST', queuePath(queue), { jobs })).jobs);
        } catch (err) {
          // The field names the item's index in the whole list, not in its chunk.
          const item = err instanceof LeaseholdApiError && offset > 0 ? itemOf(err) : undefined;
          if (!item || !(err instanceof LeaseholdApiError)) throw err;
          const [from, to] = [`jobs[${item.index}]`, `jobs[${item.index + offset}]`];
          throw new LeaseholdApiError(err.status, err.code, err.message.replaceAll(from, to), err.field!.replace(from, to));
        }
      }
      return out;
    },

    async getJob(id) {
      return (await request<{ job: Job }>('GET', jobPath(id))).job;
    },

    async waitForJob(id, opts = {}) {
      const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
      let delay = opts.pollMs ?? 200;
      const maxDelay = opts.maxPollMs ?? 2000;
      for (;;) {
        opts.signal?.throwIfAborted();
        const job = await this.getJob(id);
        if (FINISHED.has(job.status)) return job;
        const left = deadline - Date.now();
        if (left <= 0) throw new LeaseholdTimeoutError(`job ${id} is still ${job.status} after ${opts.timeoutMs} ms`);
        await sleep(Math.min(delay, left), opts.signal);
        delay = Math.min(delay * 1.5, maxDelay);
      }
    },

    async cancel(id, opts = {}) {
      return (await request<{ job: Job }>('POST', `${jobPath(id)}/cancel`, opts)).job;
    },

    async retry(id, opts = {}) {
      return (await request<{ job: Job }>('POST', `${jobPath(id)}/retry`, opts)).job;
    },
  });
}

/** The enqueue body of one job: runAt as ISO text, absent options left out. */
function wireJob(item: EnqueueItem): Record<string, unknown> {
  const { runAt, ...rest } = item;
  const job: Record<string, unknown> = { ...rest, payload: item.payload ?? null };
  if (runAt !== undefined) job.runAt = runAt instanceof Date ? runAt.toISOString() : runAt;
  for (const key of Object.keys(job)) if (job[key] === undefined) delete job[key];
  return job;
}

/** A bulk error that names one item (`jobs[3].priority`): its index, and the error as that item's own. */
function itemOf(err: LeaseholdApiError): { index: number; error: LeaseholdApiError } | undefined {
  const match = /^jobs\[(\d+)\]\.?(.*)$/.exec(err.field ?? '');
  if (!match) return undefined;
  const prefix = `jobs[${match[1]}]`;
  const field = match[2] || undefined;
  const message = err.message.replaceAll(`${prefix}.`, '').replaceAll(prefix, 'the job');
  return { index: Number(match[1]), error: new LeaseholdApiError(err.status, err.code, message, field) };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
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
