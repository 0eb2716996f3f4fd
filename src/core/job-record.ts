/**
 * The job row as the store's statements return it (snake_case), and its
 * wire form. Plain data and pure functions: the API, the worker protocol,
 * the CLI and the dashboard encode what the store port returns without
 * importing the store. src/db/row-types.ts checks, at compile time, that
 * JobRecord is the job row the schema describes.
 */
import type { ClaimedJobWire, DependencyPolicy, Job, JobStatus, JobSummary, KeyMode, OnLost, StoredUniqueWhile } from './wire.ts';
import { HELD_AVAILABLE_AT, parseLostAttempt } from './held.ts';

export type { ClaimedJobWire, Job, JobSummary };

export interface JobRecord {
  id: number;
  queue_name: string;
  payload: string;
  status: JobStatus;
  priority: number;
  attempt_count: number;
  max_attempts: number;
  errored_attempts: number;
  lost_attempts: number;
  lease_epoch: number;
  available_at: number;
  started_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  cancelled_at: number | null;
  finished_at: number | null;
  last_heartbeat_at: number | null;
  lease_ms: number | null;
  lease_expires_at: number | null;
  locked_by: string | null;
  locked_by_instance: string | null;
  lock_token: string | null;
  /** The claim request's id (the worker's), while the job runs under it. */
  claim_id: string | null;
  /** The token and the write that ended the attempt, until the next claim: that write sent again is answered as stored. */
  finished_token: string | null;
  finished_write: string | null;
  idempotency_key: string | null;
  unique_while: StoredUniqueWhile;
  /** The key's mode when it rewrites or rations (replace, debounce, throttle); null: it deduplicates as unique_while says. */
  key_mode: KeyMode | null;
  /** Times a later enqueue with the key rewrote the job before any worker claimed it. */
  replaced_count: number;
  /** A schedule's occurrence job: its schedule and occurrence time (both null otherwise). */
  schedule_name: string | null;
  occurrence_at: number | null;
  /** The W3C trace context of the code that enqueued the job (src/core/trace-context.ts); null: not traced. */
  trace_parent: string | null;
  trace_state: string | null;
  dedup_count: number;
  last_error: string | null;
  progress: string | null;
  checkpoint: string | null;
  result: string | null;
  timeout_ms: number | null;
  deadline_at: number | null;
  /** When the owner last changed progress or checkpoint; null: not since the claim. */
  progressed_at: number | null;
  reaper_deferrals: number;
  /** What took the job from its owner (reaper, operator), until its next claim. */
  taken_back: string | null;
  /** The last transition, its reason and who made it (its audit event is written from them). */
  last_event: string;
  last_event_reason: string | null;
  last_event_actor: string | null;
  /** Who enqueued the job; null: open mode or in-process. */
  enqueued_by: string | null;
  /** The job's own onLost (null: its queue's, else 'retry'). */
  on_lost: OnLost | null;
  /** Set while the job is held for a person after a lost attempt (src/core/held.ts); what was known of that attempt. */
  held_at: number | null;
  held_attempt: string | null;
  /** The job's group (null: none): its queue's claim is fair across groups and can limit each. */
  group_key: string | null;
  /** Set while the job, failed for good, is listed in a dead-letter queue (drizzle/0032): which, and since when. */
  dead_letter_queue: string | null;
  dead_lettered_at: number | null;
  /** Times a handler snoozed the job (each gave its attempt back). */
  snoozes: number;
  // Jobs that wait for other jobs (docs/flows.md).
  depends_on: string | null;
  dependency_policy: DependencyPolicy | null;
  dependencies_unmet: number;
  dependencies_run_at: number | null;
  dependency_failed_by: number | null;
  flow_ref: string | null;
  /** The current claim's longest time without a renewal (what-if tuning's evidence, src/db/store/lease.ts). */
  longest_silence_ms: number | null;
  /** How long the current attempt waited to be claimed since the job was due (set by the claim). */
  waited_ms: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * Epoch ms as ISO text. The two texts made last are kept: the rows of one
 * statement share their times (a claim's leases and deadlines, a batch's
 * completion time), and toISOString was most of the cost of encoding a
 * claimed job (about 0.4 µs a call, two per job).
 */
export const iso = (ms: number | null) => (ms === null ? null : isoText(ms));

let lastMs = Number.NaN;
let lastText = '';
let otherMs = Number.NaN;
let otherText = '';
function isoText(ms: number): string {
  if (ms === lastMs) return lastText;
  if (ms === otherMs) return otherText;
  const text = new Date(ms).toISOString();
  otherMs = lastMs;
  otherText = lastText;
  lastMs = ms;
  lastText = text;
  return text;
}
/** Stored JSON text as a value (NULL stays null). */
export const parsed = (text: string | null) => (text === null ? null : (JSON.parse(text) as unknown));

export function toJob(r: JobRecord): Job {
  return {
    id: String(r.id),
    queue: r.queue_name,
    status: r.status,
    payload: parsed(r.payload),
    priority: r.priority,
    attempt: r.attempt_count,
    maxAttempts: r.max_attempts,
    erroredAttempts: r.errored_attempts,
    lostAttempts: r.lost_attempts,
    fencingToken: r.lease_epoch,
    idempotencyKey: r.idempotency_key,
    uniqueWhile: r.key_mode ?? r.unique_while,
    replacedCount: r.replaced_count,
    schedule: r.schedule_name,
    occurrenceAt: iso(r.occurrence_at),
    traceparent: r.trace_parent,
    // A held job is due at no time (its stored available_at is out of reach,
    // src/core/held.ts): it says when it was held instead, beside heldAt.
    availableAt: iso(r.held_at !== null && r.available_at >= HELD_AVAILABLE_AT ? r.held_at : r.available_at)!,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
    failedAt: iso(r.failed_at),
    cancelledAt: iso(r.cancelled_at),
    lastHeartbeatAt: iso(r.last_heartbeat_at),
    leaseExpiresAt: iso(r.lease_expires_at),
    leaseMs: r.lease_ms,
    lockedBy: r.locked_by,
    timeoutMs: r.timeout_ms,
    deadlineAt: iso(r.deadline_at),
    lastError: r.last_error,
    progress: parsed(r.progress),
    checkpoint: parsed(r.checkpoint),
    result: parsed(r.result),
    onLost: r.on_lost,
    group: r.group_key,
    // Held only while pending (a trigger clears the mark when it leaves; a RETURNING row may predate that).
    heldAt: r.status === 'pending' ? iso(r.held_at) : null,
    lostAttempt: r.status === 'pending' && r.held_at !== null ? lostAttemptWire(r.held_attempt) : null,
    snoozes: r.snoozes,
    // Dead only while failed (a trigger clears the mark when it leaves; a RETURNING row may predate that).
    deadLetterQueue: r.status === 'failed' ? r.dead_letter_queue : null,
    deadLetteredAt: r.status === 'failed' ? iso(r.dead_lettered_at) : null,
  };
}

/** The held job's lost attempt, as the wire shows it (times as ISO text). */
function lostAttemptWire(text: string | null): Job['lostAttempt'] {
  const a = parseLostAttempt(text);
  if (a === null) return null;
  return {
    worker: a.worker,
    attempt: a.attempt,
    fencingToken: a.fencingToken,
    startedAt: iso(a.startedAt),
    lastHeartbeatAt: iso(a.lastHeartbeatAt),
    leaseExpiresAt: iso(a.leaseExpiresAt),
    why: a.why,
  };
}

/** A jobs row without its JSON columns, with their sizes and previews (jobSummariesList). */
export interface JobSummaryRecord extends Omit<JobRecord, 'payload' | 'result' | 'progress' | 'checkpoint'> {
  payload_bytes: number;
  payload_preview: string;
  result_bytes: number | null;
  result_preview: string | null;
  progress_bytes: number | null;
  checkpoint_bytes: number | null;
}

export function toJobSummary(r: JobSummaryRecord): JobSummary {
  const { payload: _p, result: _r, progress: _g, checkpoint: _c, ...rest } = toJob({ ...r, payload: 'null', result: null, progress: null, checkpoint: null });
  return {
    ...rest,
    payloadBytes: r.payload_bytes,
    payloadPreview: r.payload_preview,
    resultBytes: r.result_bytes,
    resultPreview: r.result_preview,
    progressBytes: r.progress_bytes,
    checkpointBytes: r.checkpoint_bytes,
  };
}

export function toClaimedJob(j: {
  id: number;
  queue_name: string;
  payload: string;
  attempt_count: number;
  max_attempts: number;
  priority: number;
  lock_token: string | null;
  lease_epoch: number;
  lease_ms: number | null;
  lease_expires_at: number | null;
  deadline_at: number | null;
  heartbeat_ms: number;
  idempotency_key: string | null;
  checkpoint: string | null;
  progress: string | null;
  timeout_ms: number | null;
  trace_parent: string | null;
  trace_state: string | null;
  group_key: string | null;
  snoozes: number;
}): ClaimedJobWire {
  return {
    id: String(j.id),
    queue: j.queue_name,
    payload: parsed(j.payload),
    attempt: j.attempt_count,
    maxAttempts: j.max_attempts,
    priority: j.priority,
    lockToken: j.lock_token!,
    fencingToken: j.lease_epoch,
    leaseMs: j.lease_ms!,
    leaseExpiresAt: iso(j.lease_expires_at)!,
    deadlineAt: iso(j.deadline_at),
    heartbeatIntervalMs: j.heartbeat_ms,
    idempotencyKey: j.idempotency_key,
    checkpoint: parsed(j.checkpoint),
    progress: parsed(j.progress),
    timeoutMs: j.timeout_ms,
    traceparent: j.trace_parent,
    tracestate: j.trace_state,
    group: j.group_key,
    snoozes: j.snoozes,
  };
}
