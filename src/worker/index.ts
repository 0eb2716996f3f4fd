/**
 * leasehold/worker: run jobs from a leasehold queue.
 *
 * @example
 *   import { createWorker, httpTransport } from 'leasehold/worker';
 *   const worker = createWorker({
 *     transport: httpTransport({ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN }),
 *     queue: 'email',
 *     concurrency: 8,
 *     async handler(ctx) {
 *       await ctx.once('send', () => sendEmail(ctx.job.payload, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
 *     },
 *   }).start();
 */
export type { JobDependency, StepOptions, StepState } from './types.ts';
export { createWorker, defaultWorkerId, type Handler, type JobContext, type LogFields, type Logger, type Worker, type WorkerEvents, type WorkerOptions } from './worker.ts';
export { httpTransport, type HttpTransportOptions } from './http-transport.ts';
export { JobAbortedError, JobSnooze, NonRetryableError, RetryAfter, StepUncertainError, type AbortCause } from './errors.ts';
export { TokenRefusedError, TransportError, type ClaimAnswer, type ClaimedJob, type Transport } from './transport.ts';
