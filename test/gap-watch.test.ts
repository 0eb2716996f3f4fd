/** The reaper's own gap detection, on a monotonic clock the test moves. */
import { expect, test } from 'vitest';
import { gapWatch } from '../src/runtime/gap-watch.ts';

const config = { reaperIntervalMs: 1_000, heartbeatMs: 2_000, graceMs: 3_000 };

test('a start holds for heartbeat + grace, then regular ticks hold nothing', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  expect(watch()).toEqual({ gapMs: null, remainingMs: 5_000 });
  for (t = 1_000; t < 5_000; t += 1_000) expect(watch()?.gapMs).toBeNull();
  t = 5_000;
  expect(watch()).toBeUndefined();
  t = 6_000;
  expect(watch()).toBeUndefined();
});

test('a tick late by less than a heartbeat is jitter; later than that is a gap', () => {
  let t = 0;
  const watch = gapWatch(config, () => t);
  for (t = 1_000; t <= 5_000; t += 1_000) watch();
  t = 6_000;
  expect(watch()).toBeUndefined();
  t += 3_000; // interval + heartbeat exactly: still jitter
  expect(watch()).toBeUndefined();
  t += 3_001;
  expect(watch()).toEqual({ gapMs: 3_001, remainingMs: 5_000 });
  t += 1_000;
  expect(watch()).toEqual({ gapMs: 3_001, remainingMs: 4_000 });
  for (let i = 0; i < 3; i++) {
    t += 1_000;
    expect(watch()?.remainingMs).toBe(3_000 - i * 1_000);
  }
  t += 1_000;
  expect(watch()).toBeUndefined();
});
