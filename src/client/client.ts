/**
 * The producer client: enqueue, read, wait for, cancel and retry jobs over the
 * HTTP API, with nothing but `fetch`; and every operator call of the admin
 * API (src/client/operator.ts).
 *
 * Enqueues made together (in the same tick, e.g. `Promise.all(items.map(...))`)
 * go out as one bulk request per queue, which the server writes 500 at a time;
 * each caller still gets its own job, or its own error: a bulk refused because
 * of one item rejects that item's caller and is sent again without it.
 *
 * Waiting (waitForJob, waitForJobs, events) is one server-side wait for many
 * jobs (src/client/waiting.ts), never a poll per job.
 *
 * Typed: `createClient<Jobs>()` with a map of queue -> { payload, result }
 * checks every enqueue's payload and types the jobs waited on
 * (src/client/typed.ts).
 */
import type { DependencyLinkWire, DependencyPolicy, Enqueued, Job, JobDependenciesWire, UniqueWhile } from '../core/wire.ts';
import { sdkFetch } from '../http/node-fetch.ts';
import { checkSenderOptions } from '../http/options.ts';
import { LeaseholdApiError } from './errors.ts';
import { operatorCalls, type ActionOptions, type OperatorCalls } from './operator.ts';
import { requester } from './request.ts';
import type { AnyJobs, JobHandle, JobOf, JobsOf, JobTypes, TypedEnqueued } from './typed.ts';
import { waiting, type EventsOptions, type JobEvent, type WaitOptions } from './waiting.ts';
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
   * What the key does (docs/guarantees.md, "Key modes"). 'retained' (default):
   * a duplicate returns the job while one enqueued with it that way is kept,
   * finished or not. 'active': only while one is pending or running.
   * 'replace': rewrites the key's job no worker has claimed yet (payload, run
   * time, options; `replaced: true`), else makes one. 'debounce': the same,
   * with the run time pushed to debounceMs from now. 'throttle': returns the
   * key's job made less than throttleMs ago, else makes one.
   */
  uniqueWhile?: UniqueWhile;
  /** debounce's quiet period: the job runs this long after the key's last enqueue (1 ms to 7 days). */
  debounceMs?: number;
  /** throttle's window: at most one job per key per this many ms (1 ms to 7 days). */
  throttleMs?: number;
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
  /**
   * What a lost attempt (worker gone, lease reaped, deadline) leads to: 'retry'
   * runs it again; 'hold' keeps it for a person to release, complete or fail.
   * Wins over the queue's setting.
   */
  onLost?: 'retry' | 'hold';
  /**
   * The job's group (a tenant, a customer; 1-128 characters): the queue's
   * claim takes jobs round-robin across groups, and its groupMaxRunning and
   * groupRateLimit apply to each group apart.
   */
  group?: string;
}

export interface EnqueueItem<P = unknown> extends EnqueueOptions {
  payload: P;
}

/**
 * One job of a flow (POST /flows): a job with its queue and what it waits
 * for. A flow is stored all or none, so it takes no idempotency key.
 */
export interface FlowItem<P = unknown> extends Omit<EnqueueItem<P>, 'idempotencyKey' | 'uniqueWhile' | 'debounceMs' | 'throttleMs'> {
  queue: string;
  /** Ids of existing jobs, or `#i` for this flow's job i (listed before this one). */
  dependsOn?: string[];
  /** What a failed or cancelled dependency does: 'fail' (default) fails this job, 'run' counts it as met, 'hold' holds it for a person. */
  dependencyPolicy?: DependencyPolicy;
}

/** The other job of one dependency edge, and where the edge stands. */
export type DependencyLink = DependencyLinkWire;

/** What an enqueue answers: the new job (or the existing one, for a duplicate idempotency key). */
export type { Enqueued };
export type { WaitOptions, EventsOptions, JobEvent };

/**
 * The client. `Jobs` maps each queue to its jobs' payload and result; by
 * default any queue, untyped. Calls marked admin need the admin token;
 * the rest take the worker token too.
 */
export interface Client<Jobs extends JobTypes = AnyJobs> extends OperatorCalls {
  enqueue<Q extends keyof Jobs & string>(queue: Q, payload: Jobs[Q]['payload'], options?: EnqueueOptions): Promise<TypedEnqueued<Jobs[Q]['payload'], Jobs[Q]['result']>>;
  /** One bulk request (several, beyond 10,000 items); one answer per item, in order. */
  enqueueMany<Q extends keyof Jobs & string>(queue: Q, items: readonly EnqueueItem<Jobs[Q]['payload']>[]): Promise<TypedEnqueued<Jobs[Q]['payload'], Jobs[Q]['result']>[]>;
  getJob(id: string): Promise<Job>;
  /**
   * Enqueues jobs that wait for other jobs, all or none (docs/flows.md): each
   * becomes claimable once everything it waits for completed. Answers the
   * jobs in the order sent.
   * @example
   *   const [parent] = await leasehold.enqueueFlow([
   *     { queue: 'report', payload: { month: '2026-11' } },
   *     { queue: 'mail', payload: { to: 'ops' }, dependsOn: ['#0'] },
   *   ]);
   */
  enqueueFlow(jobs: readonly FlowItem[]): Promise<Job[]>;
  /** What a job waits for (each completed one with its result) and the jobs that wait for it. */
  getJobDependencies(id: string): Promise<JobDependenciesWire>;
  /**
   * Waits until the job is completed, failed or cancelled, and answers it
   * (typed, given what enqueue answered). Calls made in the same tick share
   * one request to the server (POST /jobs/wait).
   */
  waitForJob<H extends JobHandle>(job: H, options?: WaitOptions): Promise<JobOf<H>>;
  /** Waits until every job is finished: one request per 1,000 jobs, however many finish when. Answers them in order. */
  waitForJobs<const Hs extends readonly JobHandle[]>(jobs: Hs, options?: WaitOptions): Promise<JobsOf<Hs>>;
  /**
   * Every change of these jobs (at most 1,000), starting with each one's
   * state now: waiting, active, progress, completed, failed, cancelled,
   * removed. Ends when all are finished (untilFinished, the default) or the
   * signal aborts; `break` ends it too.
   */
  events<H extends JobHandle>(jobs: readonly H[], options?: EventsOptions): AsyncGenerator<JobEvent<JobOf<H>['payload'], NonNullable<JobOf<H>['result']>>, void, undefined>;
  /** Cancels a pending job (admin token). */
  cancel(id: string, options?: ActionOptions): Promise<Job>;
  /** Runs a failed or cancelled job again with a fresh attempt budget (admin token). */
  retry(id: string, options?: ActionOptions): Promise<Job>;
}

const SERVER_MAX_BULK = 10_000;

interface Caller {
  job: Record<string, unknown>;
  resolve(e: Enqueued): void;
  reject(err: unknown): void;
}

type BulkAnswer = { jobs: Enqueued[] };
type SingleAnswer = { job: Job; deduplicated?: boolean; replaced?: boolean };

/**
 * @example
 *   type Jobs = { email: { payload: { to: string }; result: { messageId: string } } };
 *   const leasehold = createClient<Jobs>({ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN });
 *   const job = await leasehold.enqueue('email', { to: 'ada@example.com' });
 *   const done = await leasehold.waitForJob(job, { timeoutMs: 60_000 });
 */
export function createClient<Jobs extends JobTypes = AnyJobs>(options: ClientOptions): Client<Jobs> {
  const base = checkSenderOptions('createClient', options, "{ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN }");
  if (options.maxBatchSize !== undefined && !(Number.isInteger(options.maxBatchSize) && options.maxBatchSize >= 1)) {
    throw new TypeError(`createClient: maxBatchSize must be a whole number of jobs, at least 1, got ${String(options.maxBatchSize)}`);
  }
  const timeout = options.requestTimeoutMs ?? 30_000;
  const maxBatch = Math.min(options.maxBatchSize ?? 1000, SERVER_MAX_BULK);
  /** Enqueues waiting for the end of the tick, per queue. */
  const gathering = new Map<string, Caller[]>();
  const request = requester({ base, url: options.url, token: options.token, timeoutMs: timeout, fetch: options.fetch ?? sdkFetch });
  const waits = waiting(request);

  const jobPath = (id: string) => `/jobs/${encodeURIComponent(id)}`;
  const queuePath = (queue: string) => `/queues/${encodeURIComponent(queue)}/jobs`;

  async function sendOne(queue: string, caller: Caller): Promise<void> {
    try {
      const { job, deduplicated, replaced } = await request<SingleAnswer>('POST', queuePath(queue), caller.job);
      caller.resolve({ id: job.id, queue: job.queue, status: job.status, priority: job.priority, availableAt: job.availableAt, idempotencyKey: job.idempotencyKey, deduplicated: deduplicated === true, replaced: replaced === true });
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

  const client: Client<AnyJobs> = withProducerSpans({
    ...operatorCalls(request),

    enqueue(queue, payload, opts = {}) {
      return new Promise<Enqueued>((resolve, reject) => {
        let callers = gathering.get(queue);
        if (!callers) {
          gathering.set(queue, (callers = []));
          queueMicrotask(() => flush(queue));
        }
        callers.push({ job: wireFields(opts, payload), resolve, reject });
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

    async enqueueFlow(jobs) {
      return (await request<{ jobs: Job[] }>('POST', '/flows', { jobs: jobs.map(wireJob) })).jobs;
    },

    getJobDependencies(id) {
      return request<JobDependenciesWire>('GET', `${jobPath(id)}/dependencies`);
    },

    waitForJob: waits.waitForJob as Client['waitForJob'],
    waitForJobs: waits.waitForJobs as unknown as Client['waitForJobs'],
    events: waits.events as Client['events'],

    async cancel(id, opts = {}) {
      return (await request<{ job: Job }>('POST', `${jobPath(id)}/cancel`, opts)).job;
    },

    async retry(id, opts = {}) {
      return (await request<{ job: Job }>('POST', `${jobPath(id)}/retry`, opts)).job;
    },
  });
  // The type parameters only narrow what callers may pass: the calls are the same.
  return client as unknown as Client<Jobs>;
}

/** The enqueue body of one job: runAt as ISO text, absent options left out. */
function wireJob(item: EnqueueItem | FlowItem): Record<string, unknown> {
  return wireFields(item, item.payload);
}

/**
 * `options` and `payload` as one job's body. Built key by key, with no spread
 * and no delete: a spread followed by added properties costs about 1 µs per
 * property in V8, and a delete leaves the object slow to read and to
 * stringify; this runs once per job of a bulk.
 */
function wireFields(options: EnqueueOptions | Omit<FlowItem, 'payload'>, payload: unknown): Record<string, unknown> {
  const job: Record<string, unknown> = {};
  for (const key of Object.keys(options)) {
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined) job[key] = key === 'runAt' && value instanceof Date ? value.toISOString() : value;
  }
  job.payload = payload ?? null;
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
