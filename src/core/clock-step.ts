/**
 * Steps of the clock the leases use, and what they mean for the reaper.
 *
 * Lease times live on one wall clock: the database's (or the fixed clock a
 * test passes). A wall clock can step: an NTP correction, a VM resumed from
 * suspend, an operator's `date -s`. A monotonic clock does not. Each lease is
 * `renewal + lease` on the wall clock, so:
 *
 * - a step FORWARD by S makes every lease look S shorter at once. Live owners
 *   renew on the new clock at their next heartbeat, but a reaper pass that
 *   runs first would take their jobs. A long-running server compares the wall
 *   clock with its monotonic one at every reaper tick (`clockStepWatch`) and,
 *   on a forward step, writes the reaper's hold for one heartbeat interval
 *   plus grace (`clockStepHoldMs`) before that tick's pass decides anything.
 * - a step BACKWARD by S makes every lease renewed before it look S longer: a
 *   dead owner's job would be recovered S late. The database itself shows it
 *   (a worker seen, a pass run, a hold begun later than "now":
 *   `steppedBackBy`), so the pass rebases each such running job to its last
 *   renewal's lease counted from now, wherever the pass runs and after any
 *   restart.
 *
 * Steps smaller than `clockStepThresholdMs` are left to the grace, which is
 * there for that (heartbeat delay plus clock skew).
 */
import type { Config } from './config.ts';

type StepRules = Pick<Config, 'heartbeatMs' | 'graceMs'>;

/** A step smaller than this is noise the grace absorbs: half the smaller of heartbeat and grace, at least 1 s. */
export function clockStepThresholdMs(config: StepRules): number {
  return Math.max(1_000, Math.min(config.heartbeatMs, config.graceMs) / 2);
}

/**
 * How long a forward step holds expired leases, from the moment it is noticed:
 * every live owner heartbeats at least once per heartbeat interval, and its
 * renewal (counted on the new clock) lands within the grace. The step happened
 * before it was noticed, so this covers every renewal due after the step.
 */
export function clockStepHoldMs(config: StepRules): number {
  return config.heartbeatMs + config.graceMs;
}

/**
 * One reading of the wall clock (epoch ms) and the monotonic interval it was
 * taken in: a read from a remote database returns a time from somewhere
 * between the two monotonic instants, so the round trip is never counted as a
 * step.
 */
export interface ClockReading {
  wallMs: number;
  monoStartMs: number;
  monoEndMs: number;
}

/** A step of the wall clock against the monotonic clock: at least `stepMs` (the round trips taken off). */
export interface ClockStep {
  direction: 'forward' | 'backward';
  stepMs: number;
}

export interface ClockStepWatch {
  /** The next reading: the step since the previous one, if any. */
  observe(reading: ClockReading): ClockStep | undefined;
}

/**
 * Compares each reading with the previous one: the wall clock must have moved
 * as far as the monotonic clock did, give or take the time each read took.
 * A process that was stopped (SIGSTOP) sees both move together: no step. A VM
 * resumed from suspend sees its wall clock jump ahead of its monotonic one:
 * a forward step, and the hold it gets is right, since workers could not
 * renew through it meanwhile.
 */
export function clockStepWatch(config: StepRules): ClockStepWatch {
  const threshold = clockStepThresholdMs(config);
  let last: ClockReading | undefined;
  return {
    observe(r) {
      const prev = last;
      // Reads that overlap may finish out of order: compare with the one that began later.
      if (prev && r.monoStartMs < prev.monoStartMs) return undefined;
      last = r;
      if (!prev) return undefined;
      const wallMoved = r.wallMs - prev.wallMs;
      const monoMost = r.monoEndMs - prev.monoStartMs;
      const monoLeast = r.monoStartMs - prev.monoEndMs;
      if (wallMoved - monoMost > threshold) return { direction: 'forward', stepMs: wallMoved - monoMost };
      if (monoLeast - wallMoved > threshold) return { direction: 'backward', stepMs: monoLeast - wallMoved };
      return undefined;
    },
  };
}

/**
 * How far the clock went back, as the database shows it: `latestAt` is the
 * latest time it recorded (a worker's last sighting, a pass's completion, a
 * hold's start), each written on the clock as it then was. Later than `now`
 * by more than the threshold: the clock stepped back at least that far. Null:
 * no sign of a step.
 */
export function steppedBackBy(latestAt: number | null, now: number, config: StepRules): number | null {
  if (latestAt === null) return null;
  const ahead = latestAt - now;
  return ahead > clockStepThresholdMs(config) ? ahead : null;
}

/** The hold's cause after a forward step, in the words the reap_held events, refusals and log lines say. */
export function clockStepCause(step: ClockStep): string {
  return `the clock the leases use stepped ${step.direction} ${(step.stepMs / 1000).toFixed(1)} s`;
}
