/**
 * leasehold/client: enqueue jobs and read them back, from any runtime with
 * `fetch` (Node, Deno, Bun, Workers, browsers). No server code.
 *
 * @example
 *   import { createClient } from 'leasehold/client';
 *   const leasehold = createClient({ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN });
 *   const { id } = await leasehold.enqueue('email', { to: 'ada@example.com' }, { idempotencyKey: 'welcome-ada' });
 *   const done = await leasehold.waitForJob(id, { timeoutMs: 60_000 });
 *   console.log(done.status, done.result);
 */
export { createClient, type Client, type ClientOptions, type Enqueued, type EnqueueItem, type EnqueueOptions, type WaitOptions } from './client.ts';
export { LeaseholdApiError, LeaseholdNetworkError, LeaseholdTimeoutError } from './errors.ts';
export type { Job, JobStatus, JobSummary } from '../core/wire.ts';
