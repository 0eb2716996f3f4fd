/** The reaper's own gap detection, on a monotonic clock the test moves. */
import { expect, test } from 'vitest';
import { gapWatch } from '../../src/runtime/gap-watch.ts';

const config = { reaperIntervalMs: 1_000, heartbeatMs: 2_000, graceMs: 3_000, leaseMs: 20_000 };

test('a start holds for heartbeat + grace, then regular ticks hold nothing', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  expect(watch.tick()).toEqual({ gapMs: null, remainingMs: 5_000 });
  for (t = 1_000; t < 5_000; t += 1_000) expect(watch.tick()?.gapMs).toBeNull();
  t = 5_000;
  expect(watch.tick()).toBeUndefined();
  t = 6_000;
  expect(watch.tick()).toBeUndefined();
});

test('a tick late by less than a heartbeat is jitter; later than that is a gap', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  for (t = 1_000; t <= 5_000; t += 1_000) watch.tick();
  t = 6_000;
  expect(watch.tick()).toBeUndefined();
  t += 3_000; // interval + heartbeat exactly: still jitter
  expect(watch.tick()).toBeUndefined();
  t += 3_001;
  expect(watch.tick()).toEqual({ gapMs: 3_001, remainingMs: 5_000 });
  t += 1_000;
  expect(watch.tick()).toEqual({ gapMs: 3_001, remainingMs: 4_000 });
  for (let i = 0; i < 3; i++) {
    t += 1_000;
    expect(watch.tick()?.remainingMs).toBe(3_000 - i * 1_000);
  }
  t += 1_000;
  expect(watch.tick()).toBeUndefined();
});

test('current() reports a hold without counting as a tick', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  expect(watch.current()).toBeUndefined();
  watch.tick();
  t = 4_000;
  expect(watch.current()).toEqual({ gapMs: null, remainingMs: 1_000 });
  t = 60_000;
  // Only ticks see gaps: a cron pass after a minute does not start a hold.
  expect(watch.current()).toBeUndefined();
});

test('while a hold is in force, late ticks (the server still catching up) move its end, at most one lease past the gap', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  watch.tick();
  t = 1_000;
  watch.tick();
  t += 10_000; // a pause: the hold runs 5 s from here
  expect(watch.tick()).toEqual({ gapMs: 10_000, remainingMs: 5_000 });
  expect(watch.noticed()).toEqual({ gapMs: 10_000, holdMs: 5_000 });
  // A tick 1.4 s after the last (late by 400 ms, under half a heartbeat or interval): jitter, the end stays.
  t += 1_400;
  expect(watch.tick()?.remainingMs).toBe(3_600);
  expect(watch.noticed()).toBeUndefined();
  // 1.6 s after the last (late by 600 ms): still catching up, the hold runs 5 s from this tick, and the database is told.
  t += 1_600;
  expect(watch.tick()?.remainingMs).toBe(5_000);
  expect(watch.noticed()).toEqual({ gapMs: 10_000, holdMs: 5_000 });
  // A host that stays starved: the hold ends at the latest one lease after the gap's own end.
  const latest = 11_000 + 5_000 + 20_000;
  while (t < latest - 2_000) {
    t += 1_900;
    watch.tick();
  }
  expect(watch.current()!.remainingMs).toBeLessThanOrEqual(latest - t);
  t = latest;
  expect(watch.current()).toBeUndefined();
  // On-time ticks after the hold ended start nothing.
  t += 1_000;
  expect(watch.tick()).toBeUndefined();
});
