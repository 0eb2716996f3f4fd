/**
 * Typed payloads and results for the producer client: a map from queue name
 * to the payload its jobs take and the result they end with, given once to
 * `createClient<Jobs>()`. Types only: nothing here runs.
 *
 * @example
 *   type Jobs = { email: { payload: { to: string }; result: { messageId: string } } };
 *   const leasehold = createClient<Jobs>({ url });
 *   const job = await leasehold.enqueue('email', { to: 'ada@example.com' }); // payload checked
 *   const done = await leasehold.waitForJob(job);                             // done.result: { messageId } | null
 */
import type { Enqueued, Job } from '../core/wire.ts';

/** What a queue's jobs carry in and give back. */
export interface JobType {
  payload: unknown;
  result: unknown;
}

/** Queue name -> its jobs' payload and result. */
export type JobTypes = Record<string, JobType>;

/** The default: any queue, payloads and results unknown (what the client was before it was typed). */
export type AnyJobs = Record<string, { payload: unknown; result: unknown }>;

/** A job whose payload and result have their queue's types; the result is null until the job completed with one. */
export interface TypedJob<P = unknown, R = unknown> extends Omit<Job, 'payload' | 'result'> {
  payload: P;
  result: R | null;
}

declare const jobTypes: unique symbol;

/**
 * A reference to a job that remembers its queue's types: what enqueue
 * answers. waitForJob(s) and events given one answer typed jobs.
 */
export interface JobRef<P = unknown, R = unknown> {
  id: string;
  /** Type-level only (never set): the payload and result this job's queue takes. */
  readonly [jobTypes]?: { payload: P; result: R };
}

/** What an enqueue answers, typed by its queue. */
export type TypedEnqueued<P = unknown, R = unknown> = Enqueued & JobRef<P, R>;

/** A job id, or a reference that carries its types. */
export type JobHandle = string | JobRef<any, any>;

/** The typed job a handle stands for (a bare id: unknown payload and result). */
export type JobOf<H> = H extends JobRef<infer P, infer R> ? TypedJob<P, R> : TypedJob;

/** waitForJobs' answer: one job per handle, in order, each with its own types. */
export type JobsOf<Hs extends readonly JobHandle[]> = { -readonly [K in keyof Hs]: JobOf<Hs[K]> };

export type PayloadOf<Jobs extends JobTypes, Q extends keyof Jobs> = Jobs[Q]['payload'];
export type ResultOf<Jobs extends JobTypes, Q extends keyof Jobs> = Jobs[Q]['result'];
