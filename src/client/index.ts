/**
 * leasehold/client: enqueue jobs, wait for them, watch their events, and
 * every operator call of the admin API, from any runtime with `fetch`
 * (Node, Deno, Bun, Workers, browsers). No server code.
 *
 * @example
 *   import { createClient } from 'leasehold/client';
 *   type Jobs = { email: { payload: { to: string }; result: { messageId: string } } };
 *   const leasehold = createClient<Jobs>({ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN });
 *   const job = await leasehold.enqueue('email', { to: 'ada@example.com' }, { idempotencyKey: 'welcome-ada' });
 *   const done = await leasehold.waitForJob(job, { timeoutMs: 60_000 });
 *   console.log(done.status, done.result?.messageId);
 */
export {
  createClient,
  type Client,
  type ClientOptions,
  type Enqueued,
  type EnqueueItem,
  type DependencyLink,
  type EnqueueOptions,
  type EventsOptions,
  type FlowItem,
  type JobEvent,
  type WaitOptions,
} from './client.ts';
export type { AnyJobs, JobHandle, JobRef, JobType, JobTypes, TypedEnqueued, TypedJob } from './typed.ts';
export type {
  ActionOptions,
  AuditEntry,
  AuditFilter,
  BulkAction,
  BulkResult,
  CanaryPlan,
  CanaryRun,
  CanaryStart,
  ListJobsFilter,
  QueueInfo,
  QueueSettingsPatch,
  RequeueDone,
  RequeueOptions,
  Schedule,
  ScheduleFields,
  View,
} from './operator.ts';
export { LeaseholdApiError, LeaseholdNetworkError, LeaseholdTimeoutError } from './errors.ts';
export type { Job, JobEvent as JobHistoryEntry, JobStatus, JobSummary, JobWithEvents } from '../core/wire.ts';
