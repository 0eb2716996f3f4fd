/** Steps of the wall clock against the monotonic one, and the database's evidence of a step back (src/core/clock-step.ts). */
import { expect, test } from 'vitest';
import { clockStepCause, clockStepHoldMs, clockStepThresholdMs, clockStepWatch, steppedBackBy } from '../../src/core/clock-step.ts';

// The defaults: heartbeat 5 s, grace 10 s.
const config = { heartbeatMs: 5_000, graceMs: 10_000 };
const T0 = Date.UTC(2030, 0, 1);

test('the threshold is half the smaller of heartbeat and grace, at least 1 s; a forward step holds for heartbeat + grace', () => {
  expect(clockStepThresholdMs(config)).toBe(2_500);
  expect(clockStepThresholdMs({ heartbeatMs: 400, graceMs: 800 })).toBe(1_000);
  expect(clockStepHoldMs(config)).toBe(15_000);
});

test('a wall clock that moves with the monotonic one is no step, nor is a stopped process (both move together)', () => {
  const watch = clockStepWatch(config);
  expect(watch.observe({ wallMs: T0, monoStartMs: 0, monoEndMs: 1 })).toBeUndefined();
  expect(watch.observe({ wallMs: T0 + 5_000, monoStartMs: 5_000, monoEndMs: 5_001 })).toBeUndefined();
  // SIGSTOP for 10 minutes: the monotonic clock counts it too.
  expect(watch.observe({ wallMs: T0 + 605_000, monoStartMs: 605_000, monoEndMs: 605_002 })).toBeUndefined();
  // Drift or a small correction inside the threshold: left to the grace.
  expect(watch.observe({ wallMs: T0 + 612_400, monoStartMs: 610_000, monoEndMs: 610_001 })).toBeUndefined();
});

test('a step forward or back is seen, less the time the reads took; a slow read of a remote clock is not a step', () => {
  const watch = clockStepWatch(config);
  watch.observe({ wallMs: T0, monoStartMs: 0, monoEndMs: 0 });
  expect(watch.observe({ wallMs: T0 + 305_000, monoStartMs: 5_000, monoEndMs: 5_000 })).toEqual({ direction: 'forward', stepMs: 300_000 });
  expect(watch.observe({ wallMs: T0 + 10_000, monoStartMs: 10_000, monoEndMs: 10_000 })).toEqual({ direction: 'backward', stepMs: 300_000 });
  // A read that took 4 s (a remote primary under load): its time came from somewhere in those 4 s.
  expect(watch.observe({ wallMs: T0 + 19_000, monoStartMs: 15_000, monoEndMs: 19_000 })).toBeUndefined();
  expect(watch.observe({ wallMs: T0 + 20_000, monoStartMs: 20_000, monoEndMs: 20_000 })).toBeUndefined();
  // Out of order (two reads overlapped): compared with the one that began later.
  expect(watch.observe({ wallMs: T0 + 900_000, monoStartMs: 19_999, monoEndMs: 20_001 })).toBeUndefined();
  expect(clockStepCause({ direction: 'forward', stepMs: 300_000 })).toBe('the clock the leases use stepped forward 300.0 s');
});

test('the database shows a step back when it recorded a time later than now by more than the threshold', () => {
  expect(steppedBackBy(null, T0, config)).toBeNull();
  expect(steppedBackBy(T0 - 5_000, T0, config)).toBeNull();
  expect(steppedBackBy(T0 + 2_500, T0, config)).toBeNull();
  expect(steppedBackBy(T0 + 300_000, T0, config)).toBe(300_000);
});
