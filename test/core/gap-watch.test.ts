/** The reaper's own gap detection, on a monotonic clock the test moves. */
import { expect, test } from 'vitest';
import { gapWatch } from '../../src/runtime/gap-watch.ts';

const config = { reaperIntervalMs: 1_000, heartbeatMs: 2_000, graceMs: 3_000 };

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
