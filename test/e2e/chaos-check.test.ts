/**
 * The chaos verdict (src/chaos/check.ts) on hand-made histories: a
 * completion has no event row since drizzle/0015, so the checker reads it
 * from the job row (completed_at, and the result every chaos handler returns,
 * naming its worker and fencing token). A completion the fencing should have
 * refused must still be a violation.
 */
import { expect, test } from 'vitest';
import { check, type CheckInput, type EventRow, type JobRow } from '../../src/chaos/check.ts';

const timings = { leaseMs: 1_000, heartbeatMs: 300, graceMs: 200, workerAliveMs: 2_000, maxReapDeferMs: 5_000, reaperIntervalMs: 250, backoffBaseMs: 100, backoffMaxMs: 1_000, maxAttempts: 5, maxLostAttempts: 3 };
const SEED = 7;

function input(job: Partial<JobRow>, events: Omit<EventRow, 'job_id' | 'to_status' | 'reason' | 'message' | 'actor'>[]): CheckInput {
  const row: JobRow = { id: 1, status: 'completed', last_error: null, idempotency_key: `chaos-${SEED}-0`, attempt_count: 1, lost_attempts: 0, completed_at: 500, result: null, ...job };
  return {
    plan: { faults: [], jobs: [{ i: 0, behaviour: 'normal', ms: 10 }], proxiedSlots: [], servers: 1, faultsHash: '', jobsHash: '' },
    timings,
    jobsWanted: 1,
    seed: SEED,
    jobs: [row],
    events: events.map((e) => ({ job_id: 1, to_status: null, reason: null, message: null, actor: e.worker_id, ...e })),
    effects: [],
    // The once() line every completed job needs, and the run line of each claim.
    lines: [
      { t: 100, w: 'A', pid: 1, k: 'run', job: '1', attempt: 1, fence: 1 },
      { t: 110, w: 'A', pid: 1, k: 'once', job: '1', attempt: 1, fence: 1 },
    ],
    faults: [],
    outages: [],
    acked: new Map([[0, '1']]),
    enqueueGaveUp: false,
    finishedInTime: true,
    workerEvents: {},
    unexpectedExits: [],
    unhandledRejections: [],
    tolerateUnhandledRejections: false,
  };
}

test('a clean completion read from the job row: no violation, counted as a completed event', () => {
  const report = check(input({ result: JSON.stringify({ by: 'A', fence: 1 }) }, [{ id: 1, type: 'claimed', worker_id: 'A', at: 100 }]));
  expect(report.violations).toEqual([]);
  expect(report.events).toEqual({ claimed: 1, completed: 1 });
});

test('a completion by a worker whose claim was reaped and taken by another is a violation', () => {
  const events = [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'reaped', worker_id: 'A', at: 300 },
    { id: 3, type: 'claimed', worker_id: 'B', at: 400 },
  ];
  const report = check(input({ result: JSON.stringify({ by: 'A', fence: 1 }), attempt_count: 2 }, events));
  expect(report.violations.join('\n')).toMatch(/job 1: completion by A accepted while B held the latest claim \(the completion, from the job row\)/);
});

test('a completion after a reap with no new claim is a violation, even at the same millisecond', () => {
  const report = check(input({ result: JSON.stringify({ by: 'A', fence: 1 }), completed_at: 300 }, [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'reaped', worker_id: 'A', at: 300 },
  ]));
  expect(report.violations.join('\n')).toMatch(/job 1: completion by A accepted with no claim in force/);
});

test('a completion by an older fencing token of the same worker is a violation', () => {
  const events = [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'reaped', worker_id: 'A', at: 300 },
    { id: 3, type: 'claimed', worker_id: 'A', at: 400 },
  ];
  const report = check(input({ result: JSON.stringify({ by: 'A', fence: 1 }), attempt_count: 2 }, events));
  expect(report.violations.join('\n')).toMatch(/completion by the run with fencing token 1 accepted while the latest claim was token 2/);
});

test('a completed job whose result does not name its run is a violation; a stored completion (older database) is used as is', () => {
  expect(check(input({ result: '"done"' }, [{ id: 1, type: 'claimed', worker_id: 'A', at: 100 }])).violations.join('\n')).toMatch(/does not name the run/);
  const stored = check(input({ result: '"done"' }, [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'completed', worker_id: 'A', at: 500 },
  ]));
  expect(stored.violations).toEqual([]);
  expect(stored.events).toEqual({ claimed: 1, completed: 1 });
});
