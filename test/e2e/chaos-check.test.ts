/**
 * The chaos verdict (tools/chaos/check.ts) on hand-made histories: a
 * completion has no event row since drizzle/0015, so the checker reads it
 * from the job row (completed_at, and the result every chaos handler returns,
 * naming its worker and fencing token). A completion the fencing should have
 * refused must still be a violation.
 */
import { expect, test } from 'vitest';
import { check, type CheckInput, type EventRow, type JobRow } from '../../tools/chaos/check.ts';

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

/** Job 1 reaped from A at 3000 and completed by B: A's and B's run lines, A's ending at `aEndsAt`. */
function handedOn(aEndsAt: number, behaviour: 'normal' | 'long_ignores_signal' = 'normal') {
  const i = input({ result: JSON.stringify({ by: 'B', fence: 2 }), attempt_count: 2, completed_at: 4_000 }, [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'reaped', worker_id: 'A', at: 3_000 },
    { id: 3, type: 'claimed', worker_id: 'B', at: 3_100 },
  ]);
  i.plan.jobs[0]!.behaviour = behaviour;
  i.events[1]!.reason = 'reaped_due_to_expired_lease';
  i.lines = [
    { t: 100, w: 'A', pid: 1, k: 'run', job: '1', attempt: 1, fence: 1, b: behaviour },
    { t: 110, w: 'A', pid: 1, k: 'once', job: '1', attempt: 1, fence: 1 },
    { t: aEndsAt - 5, w: 'A', pid: 1, k: 'abort', job: '1', attempt: 1, fence: 1, reason: 'lease_expired_locally' },
    { t: aEndsAt, w: 'A', pid: 1, k: 'end', job: '1', attempt: 1, fence: 1, aborted: true },
    { t: 3_150, w: 'B', pid: 2, k: 'run', job: '1', attempt: 2, fence: 2, b: behaviour },
    { t: 3_200, w: 'B', pid: 2, k: 'end', job: '1', attempt: 2, fence: 2, aborted: false },
  ];
  return i;
}

test('a handler still running when another worker starts the next attempt is a violation', () => {
  const report = check(handedOn(3_400));
  expect(report.violations.join('\n')).toMatch(/job 1: A's handler \(token 1, normal\) was still running when B started token 2: aborted at 3395 \(lease_expired_locally\), ended 250 ms after/);
  expect(report.plainRuns.overlapping).toBe(1);
});

test('a handler that ended before the next attempt started is fine; one that ignores its signal is excused, not failed', () => {
  expect(check(handedOn(2_900)).violations).toEqual([]);
  const ignoring = check(handedOn(3_400, 'long_ignores_signal'));
  expect(ignoring.violations).toEqual([]);
  expect(ignoring.plainRuns.overlapsExcused).toEqual({ 'handler ignores its signal': 1 });
});

test('a claim whose answer was dropped and that then waited for the reaper is a violation, unless the worker was cut off too', () => {
  const lost = handedOn(2_900);
  lost.plan.faults = [{ n: 0, atMs: 0, kind: 'drop_answers', target: 0, durationMs: 2_000, call: 'completion', count: 1 }];
  lost.faults = [{ n: 0, kind: 'drop_answers', target: 0, plannedAtMs: 0, wallAt: 150, wallEnd: 2_150, workerId: 'A', drops: [600] }];
  const report = check(lost);
  expect(report.violations.join('\n')).toMatch(/job 1: after a dropped completion answer, A's claim \(token 1\) waited for the reaper \(reaped_due_to_expired_lease/);
  expect(report.lostAnswers).toEqual({ dropped: { completion: 1 }, claimsConcerned: 1, waitedForReaper: 1 });

  lost.faults.push({ n: 1, kind: 'partition_stall', target: 0, plannedAtMs: 0, wallAt: 700, wallEnd: 2_700, workerId: 'A' });
  expect(check(lost).lostAnswers.waitedForReaper).toBe(0);
});

test("a claim that waited for the reaper while another handler blocked its worker's event loop for a lease is excused; a shorter block is not", () => {
  const lost = handedOn(2_900);
  lost.plan.faults = [{ n: 0, atMs: 0, kind: 'drop_answers', target: 0, durationMs: 2_000, call: 'completion', count: 1 }];
  lost.faults = [{ n: 0, kind: 'drop_answers', target: 0, plannedAtMs: 0, wallAt: 150, wallEnd: 2_150, workerId: 'A', drops: [600] }];
  const sibling = (ms: number) => [
    { t: 180, w: 'A', pid: 1, k: 'run' as const, job: '9', attempt: 1, fence: 1, b: 'block_past_lease' as const },
    { t: 180 + ms, w: 'A', pid: 1, k: 'end' as const, job: '9', attempt: 1, fence: 1, aborted: false },
  ];
  const lines = lost.lines;
  lost.lines = [...lines, ...sibling(timings.leaseMs / 2)];
  expect(check(lost).lostAnswers.waitedForReaper).toBe(1);
  lost.lines = [...lines, ...sibling(timings.leaseMs * 1.2)];
  expect(check(lost).lostAnswers.waitedForReaper).toBe(0);
});

test("a worker's completion sent again after its first was stored, refused as stale, is a violation", () => {
  const report = check(input({ result: JSON.stringify({ by: 'A', fence: 1 }) }, [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'stale_write_rejected', worker_id: 'A', at: 600 },
  ].map((e) => (e.type === 'stale_write_rejected' ? { ...e, reason: 'complete', message: 'job is completed' } : e))));
  expect(report.violations.join('\n')).toMatch(/job 1: A's complete sent again after its own outcome was stored was refused as a stale write/);
});

test('a handler started for a claim another attempt has replaced is a violation; a frozen worker is excused', () => {
  const stale = handedOn(2_900);
  // A's run line comes after B's: A started a claim it no longer held.
  stale.lines = stale.lines.map((l) => (l.w === 'A' && l.k === 'run' ? { ...l, t: 3_160 } : l.w === 'A' && l.k === 'end' ? { ...l, t: 3_170 } : l));
  expect(check(stale).violations.join('\n')).toMatch(/job 1: A started its handler for token 1 10 ms after B had started token 2, which was still running/);
  stale.faults = [{ n: 0, kind: 'stop_worker', target: 0, plannedAtMs: 0, wallAt: 120, wallEnd: 3_155, workerId: 'A' }];
  const frozen = check(stale);
  expect(frozen.violations).toEqual([]);
  expect(frozen.plainRuns.overlapsExcused).toEqual({ 'worker process was stopped (SIGSTOP)': 1 });
});

test("an overlap while another handler blocked the worker's event loop is excused: no timer of that process could fire", () => {
  const blocked = handedOn(3_400);
  blocked.lines.push(
    { t: 2_000, w: 'A', pid: 1, k: 'run', job: '9', attempt: 1, fence: 1, b: 'block_past_lease' },
    { t: 3_390, w: 'A', pid: 1, k: 'end', job: '9', attempt: 1, fence: 1, aborted: false },
  );
  const report = check(blocked);
  expect(report.violations.filter((v) => v.startsWith('job 1:'))).toEqual([]);
  expect(report.plainRuns.overlapsExcused).toEqual({ "another handler blocked the worker's event loop": 1 });
});

/** A job planned with onLost 'hold', lost once, then claimed again by B. */
function heldHistory(between: { id: number; type: string; worker_id: string | null; at: number }[]) {
  const events = [
    { id: 1, type: 'claimed', worker_id: 'A', at: 100 },
    { id: 2, type: 'held', worker_id: 'A', at: 300 },
    ...between,
    { id: 9, type: 'claimed', worker_id: 'B', at: 600 },
  ];
  const i = input({ result: JSON.stringify({ by: 'B', fence: 2 }), attempt_count: 2, completed_at: 700 }, events);
  i.plan.jobs[0]!.onLost = 'hold';
  i.lines = [
    { t: 100, w: 'A', pid: 1, k: 'run', job: '1', attempt: 1, fence: 1 },
    { t: 600, w: 'B', pid: 2, k: 'run', job: '1', attempt: 2, fence: 2 },
    { t: 610, w: 'B', pid: 2, k: 'once', job: '1', attempt: 2, fence: 2 },
  ];
  return i;
}

test("a held job (onLost 'hold') claimed again after an operator's release: no violation", () => {
  const report = check(heldHistory([{ id: 3, type: 'released_by_operator', worker_id: null, at: 500 }]));
  expect(report.violations.filter((v) => /held|without a person/.test(v))).toEqual([]);
  expect(report.held).toEqual({ jobsHeld: 1, holds: 1, releasedByOperator: 1, failedByOperator: 0, byReason: { unknown: 1 } });
});

test("a held job (onLost 'hold') claimed again with no operator's release is a violation", () => {
  const report = check(heldHistory([]));
  expect(report.violations.join('\n')).toMatch(/job 1 \(onLost 'hold'\) claimed by B while held for a person since event 2, with no operator's release/);
});

test("a job with onLost 'hold' that the reaper put back to run again is a violation", () => {
  const i = heldHistory([{ id: 3, type: 'released_by_operator', worker_id: null, at: 500 }]);
  i.events[1] = { ...i.events[1]!, type: 'reaped', to_status: 'pending', reason: 'reaped_due_to_expired_lease' };
  expect(check(i).violations.join('\n')).toMatch(/job 1 \(onLost 'hold'\) was put back to run again without a person \(event 2/);
});

test("a job with onLost 'hold' whose handler was stopped for a lost lease or its deadline, then retried on its worker's failure, is a violation; a shutdown's or a plain error's retry is not", () => {
  const history = (reason: string | undefined) => {
    const i = heldHistory([]);
    i.events[1] = { ...i.events[1]!, type: 'retry_scheduled', to_status: 'pending', actor: 'A' };
    if (reason) i.lines.splice(1, 0, { t: 250, w: 'A', pid: 1, k: 'abort', job: '1', attempt: 1, fence: 1, reason }, { t: 255, w: 'A', pid: 1, k: 'end', job: '1', attempt: 1, fence: 1, aborted: !endedFirst });
    return check(i).violations.filter((v) => v.includes('retried without a person'));
  };
  let endedFirst = false;
  expect(history('lease_expired_locally')).toEqual([`job 1 (onLost 'hold') was retried without a person after its handler was stopped (lease_expired_locally): a lost attempt (event 2)`]);
  expect(history('deadline_exceeded')).toHaveLength(1);
  expect(history('shutdown')).toEqual([]);
  expect(history(undefined)).toEqual([]);
  // The handler failed on its own and its lease ran out while the failure was on its way: an ordinary failure.
  endedFirst = true;
  expect(history('lease_expired_locally')).toEqual([]);
});

test("a lease taken as lost right after the lease clock stepped forward is a violation; one taken after the hold's span, or from a worker that was stopped too, is not", () => {
  // Reaped at server time 3000 (handedOn). The clock stepped forward 900 ms at wall time 2050: server time 2950.
  const step = (wallAt: number) => {
    const i = handedOn(2_900);
    i.plan.faults = [{ n: 0, atMs: 0, kind: 'clock_step', target: 0, durationMs: 2_000, stepMs: 900 }];
    i.faults = [{ n: 0, kind: 'clock_step', target: 0, plannedAtMs: 0, wallAt, wallEnd: wallAt + 2_000, stepMs: 900 }];
    return i;
  };
  const taken = check(step(2_050));
  expect(taken.violations.join('\n')).toMatch(/job 1: taken back from A \(reaped_due_to_expired_lease, token 1\) 50 ms after the lease clock stepped forward 900 ms \(fault #0\): the step handed a live worker's job away/);
  expect(taken.clockSteps).toEqual({ forward: 1, heldEvents: 0, takenFromLiveOwners: 1 });
  // The step came 700 ms before the reap: past heartbeat + grace (500 ms), the reaper may take what was not renewed.
  expect(check(step(1_400)).violations).toEqual([]);
  // A back-first step's return is a forward step too, at its end (offset back to 0: server time = wall time).
  const back = handedOn(2_900);
  back.faults = [{ n: 0, kind: 'clock_step', target: 0, plannedAtMs: 0, wallAt: 1_000, wallEnd: 2_990, stepMs: -900 }];
  expect(check(back).clockSteps.takenFromLiveOwners).toBe(1);
  // A's process was also stopped then: that, not the step, lost the lease.
  const stopped = step(2_050);
  stopped.faults.push({ n: 1, kind: 'stop_worker', target: 0, plannedAtMs: 0, wallAt: 1_500, wallEnd: 3_500, workerId: 'A' });
  expect(check(stopped).clockSteps.takenFromLiveOwners).toBe(0);
});

test('a large flow cascade whose root failed, with dependents left pending or its cascade still owed, is a violation; all failed is none', () => {
  const clean = input({}, [{ id: 1, type: 'claimed', worker_id: 'A', at: 100 }]);
  const ok = check({ ...clean, cascades: [{ queue: 'chaos-cascade-3', rootStatus: 'failed', dependents: { failed: 2_000 }, owed: 0, answered: true }] });
  expect(ok.violations.filter((v) => /flow cascade/.test(v))).toEqual([]);
  const bad = check({ ...clean, cascades: [{ queue: 'chaos-cascade-3', rootStatus: 'failed', dependents: { failed: 1_990, pending: 10 }, owed: 1, answered: true }] });
  expect(bad.violations.filter((v) => /flow cascade/.test(v))).toEqual([
    'flow cascade on chaos-cascade-3: its root failed, yet dependents are 10 pending',
    'flow cascade on chaos-cascade-3: still owed when the run ended',
  ]);
});
