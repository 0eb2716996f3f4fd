/**
 * schedulesOnce: enqueue each due occurrence of every unpaused schedule,
 * exactly once however many passes run at once (one job per schedule and
 * occurrence time, held by a unique index: src/db/store/schedules.ts).
 *
 * Missed occurrences (nothing ran the pass for a while, or the server was
 * down) follow the schedule's catch-up policy:
 * - 'latest' (the default): only the latest one that is due is enqueued,
 *   once; the earlier ones are skipped, never run as a burst;
 * - 'all': each one within the schedule's window (catch_up_window_ms, at
 *   most CATCH_UP_MAX_WINDOW_MS) is enqueued, oldest first, at most
 *   CATCH_UP_ALL_PER_PASS per schedule per pass (the next pass goes on where
 *   this one stopped); the ones before the window are skipped;
 * - 'none': an occurrence found later than lateAfterMs(config) is skipped
 *   with the missed ones; only one still on time runs.
 * The overlap policy 'skip' skips an occurrence while an earlier one's job
 * is pending or running (asked inside the statement that would enqueue it).
 * Every skip is written (schedule_skips, and the schedule's counters) in the
 * same guarded batch that moves the schedule on. At most
 * `SCHEDULES_PER_PASS` schedules fire per pass; the rest fire in the next.
 *
 * The work per pass is bounded: per schedule, the latest due occurrence and
 * the next are found directly (src/core/schedule.ts), never by walking the
 * missed ones; the missed ones are counted by arithmetic for intervals and
 * fixed-period expressions (every second, every minute...), and otherwise
 * one by one within MISSED_COUNT_STEPS_PER_PASS for the whole pass, past
 * which the count is a lower bound (`missedCountCapped`). The event loop gets
 * a turn between schedules every WORK_BEFORE_YIELD_MS.
 */
import type { Config } from '../core/config.ts';
import { latestDueOccurrence, missedOccurrences, nextOccurrence, type ScheduleSpec } from '../core/schedule.ts';
import type { JobStore, ScheduleRecord, SkippedOccurrences } from '../db/store/port.ts';

export const SCHEDULES_PER_PASS = 100;

/**
 * Most occurrences one pass steps through to count missed ones: each is a
 * cron match (tens to a few hundred microseconds), so this bounds the
 * counting to tens of milliseconds per pass.
 */
export const MISSED_COUNT_STEPS_PER_PASS = 250;

/**
 * The database calls of a local file run on this thread: a pass of many
 * schedules gives the event loop a turn after this much work, so /healthz,
 * heartbeats and claims are served while it runs.
 */
const WORK_BEFORE_YIELD_MS = 20;
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export interface SchedulesReport {
  /** Occurrences this pass enqueued a new job for. */
  enqueued: number;
  /** Occurrences whose job another pass (or an earlier try of this one) had made already. */
  alreadyEnqueued: number;
  /** Earlier occurrences skipped because a later one was due too (the missed-run policy). */
  missedSkipped: number;
  /** True: counting stopped at this pass's bound for some schedule, so missedSkipped is a lower bound ("at least"). */
  missedCountCapped: boolean;
  /** Occurrences skipped because an earlier one's job was still pending or running (overlap 'skip'); absent when none. */
  overlapSkipped?: number;
  /** Schedules that could not fire, with why (a queue limit, a spec that no longer parses). */
  errors: { schedule: string; error: string }[];
}

export const specOf = (s: ScheduleRecord): ScheduleSpec => ({ cron: s.cron, timeZone: s.time_zone, intervalMs: s.interval_ms });

/** catchUp 'all': most occurrences one pass enqueues for one schedule (the next pass goes on). */
export const CATCH_UP_ALL_PER_PASS = 100;
/** catchUp 'all': the longest window a schedule may ask for, and the window when it names none. */
export const CATCH_UP_MAX_WINDOW_MS = 7 * 24 * 3600_000;
export const CATCH_UP_DEFAULT_WINDOW_MS = 3600_000;

/**
 * catchUp 'none': an occurrence found more than this after its time is
 * skipped. The schedule timer finds occurrences within milliseconds; a pass
 * alone (the Workers cron, once a minute) within its period: 60 s, or twice
 * the reaper interval where that is longer, tells those from a server that
 * was down.
 */
export const lateAfterMs = (config: Pick<Config, 'reaperIntervalMs'>) => Math.max(60_000, 2 * config.reaperIntervalMs);

type FireStore = Pick<JobStore, 'schedulesDue' | 'scheduleFireIfUnchanged' | 'scheduleSkipIfUnchanged'>;

/** What a pass does with one schedule's due occurrences: which to enqueue, which to skip (by the catch-up policy), and where next_run_at goes. */
interface Plan {
  /** The occurrence to enqueue; null: skip them all. */
  occurrence: number | null;
  /** The missed ones it leaves behind (or, with occurrence null, every one skipped). */
  skipped: SkippedOccurrences | undefined;
  nextRunAt: number;
}

function planFor(s: ScheduleRecord, at: number, config: Config, countSteps: number): Plan & { steps: number } {
  const spec = specOf(s);
  const from = s.next_run_at;
  const latest = latestDueOccurrence(spec, from, at)!;
  const after = (t: number) => nextOccurrence(spec, t, from) ?? Number.MAX_SAFE_INTEGER;
  const missedRun = (first: number, before: number, lastIncluded: boolean) => {
    const m = missedOccurrences(spec, first, before, countSteps);
    const count = m.count + (lastIncluded ? 1 : 0);
    const last = lastIncluded ? before : latestDueOccurrence(spec, first, before - 1) ?? first;
    return { skipped: count > 0 ? { reason: 'missed' as const, count, capped: !m.exact, first, last } : undefined, steps: m.steps };
  };
  if (s.catch_up === 'all') {
    const windowStart = at - Math.min(s.catch_up_window_ms ?? CATCH_UP_DEFAULT_WINDOW_MS, CATCH_UP_MAX_WINDOW_MS);
    const first = from >= windowStart ? from : after(windowStart - 1);
    if (first > at) return { occurrence: null, ...missedRun(from, latest, true), nextRunAt: after(latest) };
    return { occurrence: first, ...(first > from ? missedRun(from, first, false) : { skipped: undefined, steps: 0 }), nextRunAt: after(first) };
  }
  if (s.catch_up === 'none' && at - latest > lateAfterMs(config)) return { occurrence: null, ...missedRun(from, latest, true), nextRunAt: after(latest) };
  return { occurrence: latest, ...(latest > from ? missedRun(from, latest, false) : { skipped: undefined, steps: 0 }), nextRunAt: after(latest) };
}

export async function schedulesOnce(
  store: FireStore,
  at: number,
  config: Config,
  /** Told of each occurrence that made a new job, after its commit (claims waiting on the queue look now). */
  jobsBecameClaimable?: (queue: string, n: number) => void,
): Promise<SchedulesReport> {
  const report: SchedulesReport = { enqueued: 0, alreadyEnqueued: 0, missedSkipped: 0, missedCountCapped: false, errors: [] };
  let countSteps = MISSED_COUNT_STEPS_PER_PASS;
  let since = Date.now();
  for (const due of await store.schedulesDue({ now: at, limit: SCHEDULES_PER_PASS })) {
    let s = due;
    // 'all' fires one occurrence after another (each its own guarded batch); the others fire once.
    for (let fired = 0; s.next_run_at <= at && fired < (s.catch_up === 'all' ? CATCH_UP_ALL_PER_PASS : 1); fired++) {
      if (Date.now() - since >= WORK_BEFORE_YIELD_MS) {
        await yieldToEventLoop();
        since = Date.now();
      }
      try {
        const plan = planFor(s, at, config, countSteps);
        countSteps -= plan.steps;
        const moved = await fireOrSkip(store, s, plan, at, config, report, jobsBecameClaimable);
        if (!moved) break;
        s = { ...s, next_run_at: plan.nextRunAt };
      } catch (err) {
        report.errors.push({ schedule: s.name, error: err instanceof Error ? err.message : String(err) });
        break;
      }
    }
  }
  return report;
}

/** One plan carried out and counted; false: another pass moved the schedule first (it carries on from there). */
async function fireOrSkip(store: FireStore, s: ScheduleRecord, plan: Plan, at: number, config: Config, report: SchedulesReport, woke?: (queue: string, n: number) => void): Promise<boolean> {
  const countMissed = (k: SkippedOccurrences | undefined) => {
    if (!k) return;
    report.missedSkipped += k.count;
    if (k.capped) report.missedCountCapped = true;
  };
  const skip = async (skipped: SkippedOccurrences[]) => {
    const moved = await store.scheduleSkipIfUnchanged({ name: s.name, readNextRunAt: s.next_run_at, nextRunAt: plan.nextRunAt, skipped, now: at });
    if (!moved) report.alreadyEnqueued++;
    return moved;
  };
  if (plan.occurrence === null) {
    const moved = await skip(plan.skipped ? [plan.skipped] : []);
    if (moved) countMissed(plan.skipped);
    return moved;
  }
  const fired = await store.scheduleFireIfUnchanged({ schedule: s, occurrence: plan.occurrence, nextRunAt: plan.nextRunAt, ...(plan.skipped ? { skipped: plan.skipped } : {}), now: at, defaults: config, maxQueues: config.maxQueues });
  if (fired.outcome === 'moved') {
    report.alreadyEnqueued++;
    return false;
  }
  if (fired.outcome === 'overlap') {
    const overlap: SkippedOccurrences = { reason: 'overlap', count: 1, capped: false, first: plan.occurrence, last: plan.occurrence };
    const moved = await skip([...(plan.skipped ? [plan.skipped] : []), overlap]);
    if (moved) {
      countMissed(plan.skipped);
      report.overlapSkipped = (report.overlapSkipped ?? 0) + 1;
    }
    return moved;
  }
  countMissed(plan.skipped);
  if (fired.deduplicated) report.alreadyEnqueued++;
  else {
    report.enqueued++;
    woke?.(s.queue_name, 1);
  }
  return true;
}
