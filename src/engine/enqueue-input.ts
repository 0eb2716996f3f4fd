/**
 * What turns an enqueue request into the store's rows, written once for the
 * HTTP route (a JSON body) and the embedded API (values): the job's fields
 * (each a validator that is also its JSON Schema in the OpenAPI document),
 * the rules between fields (delayMs or runAt, uniqueWhile needs a key, a
 * key mode's window with its mode alone, a trace context that parses), and
 * the queue's name. A bad field throws
 * `invalid_request` naming it (`jobs[3].runAt`) before anything is written.
 *
 * @example
 *   const job = checkedJob({ payload: { to: 'ada' }, delayMs: 500 }, '');
 *   await engine.enqueue(parseQueue('email'), job, 'embedded');
 */
import { MAX_JOB_TIMEOUT_MS } from '../core/config.ts';
import { invalid } from '../core/errors.ts';
import { TRACEPARENT, TRACEPARENT_HELP, TRACESTATE_MAX, tracestateProblem, type JobTrace } from '../core/trace-context.ts';
import { int, json, obj, optional, str, word, type Infer } from '../core/validate.ts';
import { ON_LOST_POLICIES, UNIQUE_WHILE, type UniqueWhile } from '../core/wire.ts';
import type { NewJob } from '../db/store/port.ts';

const YEAR_MS = 365 * 24 * 3600 * 1000;
/** The longest debounce or throttle window: a throttle window is read from the key's last job, which retention must still keep. */
export const MAX_KEY_WINDOW_MS = 7 * 24 * 3600 * 1000;

export const QUEUE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
export const queueName = str({
  min: 1,
  max: 128,
  pattern: QUEUE_PATTERN,
  patternHelp: 'must be 1-128 characters of letters, digits, _ . : -, starting with a letter or digit',
});

export function parseQueue(raw: string | undefined, field = 'queue'): string {
  return queueName.parse(raw ?? '', field);
}

/** One job as an enqueue names it. */
export const newJob = obj({
  payload: json('the job payload, any JSON'),
  idempotencyKey: optional(str({ min: 1, max: 255, description: 'unique per queue: a duplicate returns the existing job' })),
  uniqueWhile: optional(
    word(
      UNIQUE_WHILE,
      "what idempotencyKey does. Deduplicate: 'retained' (default) while a job enqueued with it that way is kept; 'active' only while one is pending or running. Key modes: 'replace' rewrites the key's job no worker has claimed yet (payload, run time, priority, maxAttempts, timeoutMs, onLost, trace context) and answers replaced: true, else makes one; 'debounce' does the same with the run time pushed to debounceMs from now; 'throttle' answers the key's job made less than throttleMs ago (deduplicated), else makes one",
    ),
  ),
  debounceMs: optional(int({ min: 1, max: MAX_KEY_WINDOW_MS, description: "with uniqueWhile 'debounce' (and needed by it): the quiet period; the job runs this long after the key's last enqueue" })),
  throttleMs: optional(int({ min: 1, max: MAX_KEY_WINDOW_MS, description: "with uniqueWhile 'throttle' (and needed by it): the window; at most one job per key is made per window, counted from the last one made" })),
  priority: optional(int({ min: -1000, max: 1000, description: 'higher runs first; default 0' })),
  delayMs: optional(int({ min: 0, max: 10 * YEAR_MS })),
  runAt: optional(str({ min: 1, max: 40, description: 'ISO 8601 time to run at, instead of delayMs' })),
  maxAttempts: optional(int({ min: 1, max: 1000 })),
  timeoutMs: optional(int({ min: 1, max: MAX_JOB_TIMEOUT_MS, description: "hard time limit per attempt, enforced by the reaper even while the job heartbeats (default: the queue's, else the server's)" })),
  traceparent: optional(
    str({
      min: 55,
      max: 55,
      pattern: TRACEPARENT,
      patternHelp: TRACEPARENT_HELP,
      description: "the W3C traceparent of the enqueuing code: every attempt's span joins that trace. Default: the request's own trace context, when the server traces its requests",
    }),
  ),
  tracestate: optional(str({ min: 1, max: TRACESTATE_MAX, description: 'the W3C tracestate that goes with traceparent' })),
  group: optional(
    str({
      min: 1,
      max: 128,
      description: "the job's group (a tenant, a customer): the queue's claim takes jobs round-robin across groups, and its groupMaxRunning and groupRateLimit apply to each group apart",
    }),
  ),
  onLost: optional(
    word(
      ON_LOST_POLICIES,
      "what a lost attempt (its worker vanished, its deadline passed, an operator requeued it) leads to: 'retry' runs it again, for idempotent jobs; 'hold' keeps it for a person to release, complete or fail, for side effects that cannot be fenced. Default: the queue's setting, else 'retry'",
    ),
  ),
});


/** One job's input as the embedded API takes it: values, runAt a Date or an ISO string. */
export interface EnqueueItem {
  payload: unknown;
  idempotencyKey?: string;
  /** What the key does: 'retained' (default), 'active', or a key mode: 'replace', 'debounce' (with debounceMs), 'throttle' (with throttleMs). */
  uniqueWhile?: UniqueWhile;
  debounceMs?: number;
  throttleMs?: number;
  priority?: number;
  delayMs?: number;
  runAt?: Date | string;
  maxAttempts?: number;
  timeoutMs?: number;
  /** What a lost attempt leads to: 'retry' or 'hold' (default: the queue's setting, else 'retry'). */
  onLost?: 'retry' | 'hold';
  /** The job's group (1-128 characters): fair claims across groups, per-group limits. */
  group?: string;
}

/** One job's input, checked as the API checks it; `path` names it in a list (`jobs[3]`), '' for a lone job. */
export function checkedJob(item: EnqueueItem, path: string): NewJob {
  const { runAt, ...rest } = item;
  const input = { ...rest, ...(runAt === undefined ? {} : { runAt: runAt instanceof Date ? runAt.toISOString() : runAt }) };
  const job = toNewJob(newJob.parse(input, path), path);
  // The API's payloads arrived as JSON; these are values, and one that JSON cannot
  // hold (a BigInt, a throwing toJSON) would otherwise fail its whole batch.
  try {
    JSON.stringify(item.payload);
  } catch (err) {
    const field = path ? `${path}.payload` : 'payload';
    throw invalid(field, `${field} must be JSON-serialisable: ${(err as Error).message}`);
  }
  return job;
}

export function toNewJob(j: Infer<typeof newJob>, path: string): NewJob {
  const field = (name: string) => (path ? `${path}.${name}` : name);
  if (j.delayMs !== undefined && j.runAt !== undefined) throw invalid(field('runAt'), 'give delayMs or runAt, not both');
  if (j.uniqueWhile !== undefined && j.idempotencyKey === undefined) throw invalid(field('uniqueWhile'), `${field('uniqueWhile')} needs an idempotencyKey`);
  checkKeyWindow(j, field);
  checkTrace(j, field);
  let runAt: number | undefined;
  if (typeof j.runAt === 'string') {
    runAt = Date.parse(j.runAt);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(j.runAt) || Number.isNaN(runAt) || !calendarDateExists(j.runAt)) {
      throw invalid(field('runAt'), `${field('runAt')} must be an ISO 8601 time such as 2030-01-01T00:00:00Z`);
    }
  }
  return {
    payload: j.payload,
    idempotencyKey: j.idempotencyKey,
    uniqueWhile: j.uniqueWhile,
    keyWindowMs: j.debounceMs ?? j.throttleMs,
    priority: j.priority,
    delayMs: j.delayMs,
    runAt,
    maxAttempts: j.maxAttempts,
    timeoutMs: j.timeoutMs,
    onLost: j.onLost,
    traceparent: j.traceparent,
    tracestate: j.tracestate,
    group: j.group,
  };
}

/**
 * Each window goes with its mode alone: debounceMs with 'debounce', which
 * needs it, throttleMs with 'throttle', likewise. Debounce sets the run time
 * itself (its quiet period from now), so it takes no delayMs or runAt.
 */
function checkKeyWindow(j: Infer<typeof newJob>, field: (name: string) => string): void {
  // Most jobs use no key mode: nothing to check, nothing to allocate.
  if (j.uniqueWhile === undefined && j.debounceMs === undefined && j.throttleMs === undefined) return;
  const windows = [
    ['debounceMs', 'debounce', j.debounceMs],
    ['throttleMs', 'throttle', j.throttleMs],
  ] as const;
  for (const [name, mode, value] of windows) {
    if (value !== undefined && j.uniqueWhile !== mode) throw invalid(field(name), `${field(name)} goes with uniqueWhile '${mode}' only`);
    if (value === undefined && j.uniqueWhile === mode) throw invalid(field(name), `uniqueWhile '${mode}' needs ${field(name)}`);
  }
  if (j.uniqueWhile !== 'debounce') return;
  for (const name of ['delayMs', 'runAt'] as const) {
    if (j[name] !== undefined) throw invalid(field(name), `${field(name)} cannot go with uniqueWhile 'debounce': its run time is debounceMs from the last enqueue`);
  }
}

/**
 * A malformed trace context is refused (400 naming the field), not dropped.
 * W3C asks a receiver of a bad traceparent *header* to start a new trace,
 * because a header passes through proxies the sender does not control and
 * the request must still be served. Here it is a field the producer chose
 * to send, stored and handed to every attempt: dropping it would lose the
 * trace for good with no one told, while a 400 points at the bug at once,
 * like every other field. (Our client and the embedded API only send what
 * they formatted themselves.)
 */
function checkTrace(j: { traceparent?: string | undefined; tracestate?: string | undefined }, field: (name: string) => string): void {
  if (j.tracestate === undefined) return;
  if (j.traceparent === undefined) throw invalid(field('tracestate'), `${field('tracestate')} needs a traceparent`);
  const problem = tracestateProblem(j.tracestate);
  if (problem) throw invalid(field('tracestate'), `${field('tracestate')} ${problem}`);
}

/** The job's own trace context, else `fallback` (the request's). */
export function withTrace(job: NewJob, fallback: JobTrace): NewJob {
  return job.traceparent !== undefined || fallback.traceparent === undefined ? job : { ...job, ...fallback };
}

/** Date.parse rolls 2030-02-31 over into March; the date must name a real day. */
function calendarDateExists(iso: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split('-').map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}
