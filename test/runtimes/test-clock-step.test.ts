/**
 * The chaos run's test-only clock hook (src/runtime/test-clock-step.ts): off
 * unless its variable names an existing file by an absolute path, loud when on,
 * and while its offset is 0 the lease clock is the database's as always.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { DB_CLOCK } from '../../src/core/clock.ts';
import type { LogRecord } from '../../src/core/log.ts';
import { TEST_CLOCK_STEP_ENV, testClockStepFromEnv } from '../../src/runtime/test-clock-step.ts';
import { recordingLogger } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-clock-hook-'));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('off without the variable; a relative or missing path is refused; on, it warns and steps by the file', async () => {
  const logs: LogRecord[] = [];
  const log = recordingLogger(logs);
  expect(testClockStepFromEnv({}, log)).toBeUndefined();
  expect(() => testClockStepFromEnv({ [TEST_CLOCK_STEP_ENV]: 'clock.json' }, log)).toThrow(/must be an absolute path/);
  expect(() => testClockStepFromEnv({ [TEST_CLOCK_STEP_ENV]: join(dir, 'missing.json') }, log)).toThrow(/cannot be read/);
  const file = join(dir, 'clock.json');
  writeFileSync(file, JSON.stringify({ offsetMs: 0 }));
  const clock = testClockStepFromEnv({ [TEST_CLOCK_STEP_ENV]: file }, log)!;
  expect(logs.find((l) => l.event === 'test_clock_step_hook')).toMatchObject({ level: 'warn', msg: expect.stringContaining('TEST ONLY') });
  expect(clock.now()).toBe(DB_CLOCK);
  writeFileSync(file, JSON.stringify({ offsetMs: 300_000 }));
  // Re-read every 50 ms: the next reads are on the stepped clock.
  await until('the offset read', () => clock.now() !== DB_CLOCK);
  expect((clock.now() as number) - Date.now()).toBeGreaterThan(299_000);
});
