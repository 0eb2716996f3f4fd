/**
 * A canary requeue's rules, pure: how big each step is, and whether a
 * step's new attempts are healthy enough to take the next one.
 *
 * A bulk requeue of hundreds of zombies after an incident is where
 * duplicates and retry storms start (the old workers may still be alive,
 * the cause may not be fixed). A canary run takes the first `first` jobs,
 * watches their new attempts for `windowMs`, and then takes a step
 * `growth` times larger, or stops by itself, naming why, as soon as the
 * step's jobs show any of:
 * - failures (a new attempt failed, was scheduled for retry, or was lost
 *   again), more than `maxFailures`;
 * - stale writes refused on them (an old owner is still writing), more
 *   than `maxStaleWrites`;
 * - duplicate executions (detected, or reported by the handler), more than
 *   `maxDuplicates`;
 * - a new attempt whose last heartbeat is older than `maxHeartbeatLagMs`;
 * - or, once the window ended, no new attempt at all (no worker took the
 *   step's jobs: nothing was learnt, so nothing more is requeued).
 *
 * @example
 *   const v = judgeCanaryStep(health, run, now);
 *   if (v.verdict === 'stop') finish('stopped', v.reason, v.why);
 */

export type CanaryState = 'watching' | 'done' | 'stopped' | 'cancelled';
export const CANARY_STATES: readonly CanaryState[] = ['watching', 'done', 'stopped', 'cancelled'];

export type CanaryStopReason = 'failures' | 'stale_writes' | 'duplicates' | 'heartbeat_lag' | 'no_attempts';

/** What an operator chooses when starting a run (all but `first` have defaults: canaryDefaults). */
export interface CanaryOptions {
  first: number;
  growth: number;
  windowMs: number;
  maxFailures: number;
  maxStaleWrites: number;
  maxDuplicates: number;
  maxHeartbeatLagMs: number;
}

/** The bounds of each option, as the API and CLI check them. */
export const CANARY_LIMITS: Record<keyof CanaryOptions, { min: number; max: number }> = {
  first: { min: 1, max: 1_000 },
  growth: { min: 1, max: 10 },
  windowMs: { min: 1_000, max: 24 * 3600 * 1000 },
  maxFailures: { min: 0, max: 1_000 },
  maxStaleWrites: { min: 0, max: 1_000 },
  maxDuplicates: { min: 0, max: 1_000 },
  maxHeartbeatLagMs: { min: 1_000, max: 24 * 3600 * 1000 },
};

/** The most jobs one run freezes at its start. */
export const CANARY_MAX_JOBS = 10_000;

/**
 * Why a start took nothing: no running job of the queue is one it may take
 * (the reaper's rule, or any running job with force). A run over no jobs
 * would end at once having done nothing, which reads as a success; the start
 * is refused instead, and the dry run says what it would take.
 */
export function canaryNothingToTakeText(queue: string, force: boolean): string {
  return force
    ? `queue ${queue} has no running job: nothing to requeue, no canary run started`
    : `no running job of queue ${queue} is one the reaper would take now (lease, grace and liveness passed): nothing to requeue, no canary run started; force takes live ones too`;
}

/**
 * Defaults: double each step, watch a minute, stop at the first bad sign;
 * a heartbeat counts as late past one interval plus the grace (what the
 * reaper itself tolerates before it calls a lease lost).
 */
export function canaryDefaults(config: { heartbeatMs: number; graceMs: number }): Omit<CanaryOptions, 'first'> {
  return { growth: 2, windowMs: 60_000, maxFailures: 0, maxStaleWrites: 0, maxDuplicates: 0, maxHeartbeatLagMs: config.heartbeatMs + config.graceMs };
}

/** How many jobs step `step` (1 is the first) takes: first, first*growth, ...; never more than `cap` (one batch's worth). */
export function canaryStepSize(p: { first: number; growth: number; cap: number }, step: number): number {
  const size = p.first * p.growth ** Math.max(0, step - 1);
  return Math.max(1, Math.min(p.cap, Number.isFinite(size) ? size : p.cap));
}

/** The sizes of every step for `selected` jobs (a dry run's plan). */
export function canarySteps(p: { first: number; growth: number; cap: number }, selected: number): number[] {
  const steps: number[] = [];
  for (let left = selected, step = 1; left > 0; step++) {
    const n = Math.min(left, canaryStepSize(p, step));
    steps.push(n);
    left -= n;
  }
  return steps;
}

/** What the watch found on one step's requeued jobs since the step was taken. */
export interface CanaryStepHealth {
  /** The step's jobs the requeue put back to pending. */
  jobs: number;
  /** Of those, claimed again since the step (a new attempt began). */
  attempts: number;
  completed: number;
  failures: number;
  staleWrites: number;
  duplicates: number;
  /** The oldest heartbeat among the step's running new attempts, as lag behind now (ms); null when none runs. */
  heartbeatLagMs: number | null;
}

export type CanaryVerdict =
  | { verdict: 'stop'; reason: CanaryStopReason; why: string }
  | { verdict: 'wait'; why: string; until: number }
  | { verdict: 'continue'; why: string };

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The watch's verdict on step `step`: stop as soon as a threshold is
 * passed (not only at the window's end: a storm is stopped when seen);
 * after the window, continue when it stayed healthy.
 */
export function judgeCanaryStep(h: CanaryStepHealth, o: CanaryOptions & { step: number; stepStartedAt: number }, now: number): CanaryVerdict {
  const of = `of step ${o.step}'s ${plural(h.jobs, 'job')}`;
  if (h.duplicates > o.maxDuplicates) {
    return { verdict: 'stop', reason: 'duplicates', why: `${plural(h.duplicates, 'duplicate execution')} ${of} (at most ${o.maxDuplicates} allowed)` };
  }
  if (h.staleWrites > o.maxStaleWrites) {
    return {
      verdict: 'stop',
      reason: 'stale_writes',
      why: `${plural(h.staleWrites, 'stale write')} refused on the jobs ${of}: an earlier owner is still writing (at most ${o.maxStaleWrites} allowed)`,
    };
  }
  if (h.failures > o.maxFailures) {
    return { verdict: 'stop', reason: 'failures', why: `${plural(h.failures, 'failed attempt')} ${of} since it was requeued (at most ${o.maxFailures} allowed)` };
  }
  if (h.heartbeatLagMs !== null && h.heartbeatLagMs > o.maxHeartbeatLagMs) {
    return {
      verdict: 'stop',
      reason: 'heartbeat_lag',
      why: `a new attempt ${of} last beat ${(h.heartbeatLagMs / 1000).toFixed(1)} s ago (at most ${(o.maxHeartbeatLagMs / 1000).toFixed(1)} s allowed)`,
    };
  }
  const until = o.stepStartedAt + o.windowMs;
  if (now < until) return { verdict: 'wait', why: `watching step ${o.step} until ${new Date(until).toISOString()}`, until };
  if (h.jobs > 0 && h.attempts === 0) {
    return { verdict: 'stop', reason: 'no_attempts', why: `no worker claimed any ${of} within the ${(o.windowMs / 1000).toFixed(0)} s window: nothing was learnt` };
  }
  return {
    verdict: 'continue',
    why: `step ${o.step} stayed healthy for its window: ${plural(h.attempts, 'new attempt')}, ${h.completed} completed, no threshold passed`,
  };
}
