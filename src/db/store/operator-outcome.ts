/** What an operator's action on one job answers: shared by the single and the bulk paths. */
import type { JobStatus } from '../../core/wire.ts';
import type { JobRecord } from './record.ts';

/** A requeue the reaper would not make now: why, and when it would (if nothing changes). */
export interface RequeueRefusal {
  ok: false;
  reason: 'reaper_would_wait';
  status: 'running';
  why: string;
  takesAt: number;
}

export type OperatorOutcome =
  | { ok: true; job: JobRecord }
  | RequeueRefusal
  /** keyHeldBy: a retry refused because another job with the same idempotency key is pending or running (drizzle/0012). */
  | { ok: false; reason: 'conflict'; status: JobStatus; keyHeldBy?: number }
  | { ok: false; reason: 'not_found' };
