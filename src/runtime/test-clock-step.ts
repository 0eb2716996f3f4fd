/**
 * TEST ONLY: a lease clock another process can step, for the chaos run's
 * `clock_step` fault (tools/chaos). Never set it in production.
 *
 * With LEASEHOLD_TEST_ONLY_CLOCK_STEP_FILE naming a file, the server's lease
 * clock is the database's own while the file says `{"offsetMs": 0}` (or is
 * missing), and this process's wall clock plus `offsetMs` otherwise: a step
 * of the clock the leases use, as an NTP correction of the database host
 * would make, while the monotonic clock does not move. The file is re-read
 * every 50 ms. The variable is deliberately not a setting (no flag, no
 * docs/configuration.md entry), its value must be an absolute path to an
 * existing file, and the server says at start, as a warning, that the hook is
 * on.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Logger } from '../core/log.ts';

export const TEST_CLOCK_STEP_ENV = 'LEASEHOLD_TEST_ONLY_CLOCK_STEP_FILE';

/** The stepped clock when the variable is set (and names a readable file), else undefined. */
export function testClockStepFromEnv(env: Record<string, string | undefined>, log: Logger): Clock | undefined {
  const file = env[TEST_CLOCK_STEP_ENV];
  if (file === undefined || file === '') return undefined;
  if (!isAbsolute(file)) throw new Error(`${TEST_CLOCK_STEP_ENV} must be an absolute path (it is a test-only hook; unset it)`);
  let offsetMs = 0;
  const read = () => {
    try {
      const value = (JSON.parse(readFileSync(file, 'utf8')) as { offsetMs?: unknown }).offsetMs;
      offsetMs = typeof value === 'number' && Number.isFinite(value) ? value : 0;
    } catch {
      // Half-written or missing: keep the last offset.
    }
  };
  try {
    readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${TEST_CLOCK_STEP_ENV} names a file that cannot be read (${(err as Error).message}); it is a test-only hook: unset it`);
  }
  read();
  setInterval(read, 50).unref();
  log.warn(`leasehold: TEST ONLY: the lease clock can be stepped through ${file} (${TEST_CLOCK_STEP_ENV}); never set this in production`, { event: 'test_clock_step_hook', file });
  return { now: () => (offsetMs === 0 ? databaseClock.now() : Date.now() + offsetMs) };
}
