/**
 * The verdict: what the database's audit trail, the effects ledger and the
 * workers' own side-effect files say about a chaos run. Pure: data in, report out.
 */
import type { CascadeRun } from './cascade.ts';
import type { Behaviour, FaultKind, Plan, Timings } from './plan.ts';

/** A stored event; id 0 and `fence` (the completing run's fencing token): the completion read from the job row. */
export interface EventRow { id: number; job_id: number; type: string; to_status: string | null; reason: string | null; message: string | null; actor: string | null; worker_id: string | null; at: number; fence?: number | undefined }
/** `completed_at` and `result` stand for the completion, which has no event row (drizzle/0015). */
export interface JobRow { id: number; status: string; last_error: string | null; idempotency_key: string | null; attempt_count: number; lost_attempts: number; completed_at: number | null; result: string | null }
export interface EffectRow { job_id: number; key: string; state: string; completed_at: number | null }
export interface Line { t: number; w: string; pid: number; k: 'run' | 'once_call' | 'once' | 'done' | 'abort' | 'end'; job: string; attempt: number; fence: number; b?: Behaviour; aborted?: boolean; reason?: string }

export interface FaultRecord {
  n: number;
  kind: FaultKind;
  target: number;
  plannedAtMs: number;
  /** ms since the run started, when it was injected. */
  atMs?: number;
  /** wall clock (Date.now()) when injected. */
  wallAt?: number;
  wallEnd?: number;
  workerId?: string;
  /** Jobs the worker said it was running at the moment of the fault. */
  inFlight?: number;
  skipped?: string;
  /** drop_answers: when each answer was dropped (wall clock). */
  drops?: number[];
  /** clock_step: how far the servers' lease clock stepped at wallAt (it stepped back by as much at wallEnd). */
  stepMs?: number;
  /** flow_cascade: what the harness built and failed (tools/chaos/cascade.ts). */
  cascade?: CascadeRun;
}

/** A flow cascade's end state, read from the database after the run. */
export interface CascadeEnd {
  queue: string;
  rootStatus: string;
  /** The dependents' counts by status. */
  dependents: Record<string, number>;
  /** Cascades still owed for the root. */
  owed: number;
  /** The root's failure was answered. */
  answered: boolean;
}

export interface Outage { server: number; from: number; to: number }

export interface CheckInput {
  plan: Plan;
  timings: Timings;
  jobsWanted: number;
  seed: number;
  jobs: JobRow[];
  events: EventRow[];
  effects: EffectRow[];
  lines: Line[];
  faults: FaultRecord[];
  outages: Outage[];
  /** flow_cascade faults' end states. */
  cascades?: CascadeEnd[];
  /** job index -> id the server acknowledged. */
  acked: Map<number, string>;
  enqueueGaveUp: boolean;
  finishedInTime: boolean;
  workerEvents: Record<string, number>;
  /** Worker or server processes that exited without the harness asking them to. */
  unexpectedExits: string[];
  /** Unhandled promise rejections the worker processes caught (each would have killed the process). */
  unhandledRejections: { worker: string; message: string }[];
  /** Count unhandled rejections as findings, not violations (the defect it was made for is fixed; see docs/chaos.md). */
  tolerateUnhandledRejections: boolean;
}

export interface LatencyStats { count: number; p50: number | null; p90: number | null; max: number | null; overBound: number; affectedByOutage: number }

export interface Report {
  ok: boolean;
  violations: string[];
  jobs: { total: number; completed: number; failed: number; other: Record<string, number>; failedBy: Record<string, number>; acked: number };
  claims: number;
  events: Record<string, number>;
  reapedBy: Record<string, number>;
  staleWritesRejected: number;
  /** onLost 'hold' jobs: how many were held for a person, and what the operator did. */
  held: { jobsHeld: number; holds: number; releasedByOperator: number; failedByOperator: number; byReason: Record<string, number> };
  plainRuns: { total: number; jobsRunMoreThanOnce: number; extraRuns: number; extraRunsByCause: Record<string, number>; overlapping: number; overlapsExcused: Record<string, number> };
  /** Answers the proxy dropped after the server acted, and how the jobs they concerned ended. */
  lostAnswers: { dropped: Record<string, number>; claimsConcerned: number; waitedForReaper: number };
  once: { applications: number; jobsApplied: number; reRunsDocumented: number; reRunsAfterRecorded: number; completedWithout: number };
  behavioursRun: Record<string, number>;
  faults: { planned: number; injected: Record<string, number>; skipped: number; killsMidJob: number };
  recovery: { boundMs: number; reclaim: Record<string, LatencyStats>; reap: Record<string, LatencyStats> };
  /** Forward steps of the servers' lease clock (each clock_step has one), the reap_held events right after them, and leases taken from live owners then (violations). */
  clockSteps: { forward: number; heldEvents: number; takenFromLiveOwners: number };
  workerEvents: Record<string, number>;
  defects: { unhandledRejections: number; unhandledRejectionSamples: string[]; unexpectedExits: string[] };
}

/** Writes that end an attempt, and the events of their outcomes. */
const FINISHING_WRITES = new Set(['complete', 'fail', 'release']);
const ENDED_BY_OWNER = new Set(['completed', 'failed', 'retry_scheduled', 'released']);
/** The SDK's abort reasons for an attempt that lost its lease or ran out of time (a shutdown is not one). */
const LOST_ABORTS = new Set(['deadline_exceeded', 'lease_expired_locally', 'lease_lost']);

const bump = (m: Record<string, number>, k: string, by = 1) => (m[k] = (m[k] ?? 0) + by);

/** The run a completed chaos job's result names (see worker-process.ts: every handler returns { by, fence }). */
function completedBy(result: string | null): { by: string; fence: number } | undefined {
  try {
    const r = JSON.parse(result ?? 'null') as { by?: unknown; fence?: unknown } | null;
    return typeof r?.by === 'string' && typeof r.fence === 'number' ? { by: r.by, fence: r.fence } : undefined;
  } catch {
    return undefined;
  }
}

/** How a violation names an event: its id, or, for the completion read from the job row, that. */
const eventName = (e: EventRow) => (e.id === 0 ? 'the completion, from the job row' : `event ${e.id}`);

function stats(values: { ms: number; outage: boolean }[], bound: number): LatencyStats {
  const clean = values.filter((v) => !v.outage).map((v) => v.ms).sort((a, b) => a - b);
  const all = values.map((v) => v.ms).sort((a, b) => a - b);
  const q = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]! : null);
  return {
    count: values.length,
    p50: q(all, 0.5),
    p90: q(all, 0.9),
    max: all.length ? all[all.length - 1]! : null,
    overBound: clean.filter((v) => v > bound).length,
    affectedByOutage: values.length - clean.length,
  };
}

export function check(input: CheckInput): Report {
  const violations: string[] = [];
  const v = (msg: string) => {
    if (violations.length < 200) violations.push(msg);
  };
  const { timings: t } = input;
  const specByIndex = input.plan.jobs;
  const keyPrefix = `chaos-${input.seed}-`;
  const indexOfJob = new Map<number, number>();
  const jobById = new Map<number, JobRow>();
  for (const j of input.jobs) {
    jobById.set(j.id, j);
    if (j.idempotency_key?.startsWith(keyPrefix)) indexOfJob.set(j.id, Number(j.idempotency_key.slice(keyPrefix.length)));
  }

  // ---- 0. every large flow cascade settled as its policy says, whatever landed meanwhile --------
  for (const c of input.cascades ?? []) {
    const notFailed = Object.entries(c.dependents).filter(([status]) => status !== 'failed');
    if (c.rootStatus === 'failed' && notFailed.length > 0) v(`flow cascade on ${c.queue}: its root failed, yet dependents are ${notFailed.map(([s, n]) => `${n} ${s}`).join(', ')}`);
    if (c.rootStatus !== 'failed' && c.answered) v(`flow cascade on ${c.queue}: the root's failure was answered, yet the root is ${c.rootStatus}`);
    if (c.rootStatus !== 'failed' && (c.dependents.failed ?? 0) > 0) v(`flow cascade on ${c.queue}: the root is ${c.rootStatus}, yet ${c.dependents.failed} dependents failed`);
    if (c.owed > 0) v(`flow cascade on ${c.queue}: still owed when the run ended`);
  }

  // ---- 1. every acknowledged enqueue present, one job per planned job -------------
  if (input.enqueueGaveUp) v(`enqueue gave up: only ${input.acked.size} of ${input.jobsWanted} jobs were acknowledged`);
  for (const [i, id] of input.acked) if (!jobById.has(Number(id))) v(`acknowledged enqueue of job #${i} (id ${id}) is missing from the database`);
  if (input.jobs.length !== input.jobsWanted && !input.enqueueGaveUp) v(`the queue holds ${input.jobs.length} jobs, ${input.jobsWanted} were enqueued (idempotency keys are unique)`);

  // ---- 2. every job completed or failed for a stated reason ---------------------------
  const byJob = new Map<number, EventRow[]>();
  for (const e of input.events) {
    let list = byJob.get(e.job_id);
    if (!list) byJob.set(e.job_id, (list = []));
    list.push(e);
  }
  const counts = { completed: 0, failed: 0 };
  const other: Record<string, number> = {};
  const failedBy: Record<string, number> = {};
  for (const j of input.jobs) {
    const spec = specByIndex[indexOfJob.get(j.id) ?? -1];
    if (j.status === 'completed') {
      counts.completed++;
      if (spec?.behaviour === 'fatal') v(`job ${j.id} always throws NonRetryableError, yet it is completed`);
    } else if (j.status === 'failed') {
      counts.failed++;
      const last = [...(byJob.get(j.id) ?? [])].reverse().find((e) => e.to_status === 'failed' && e.type !== 'stale_write_rejected');
      const reason = last?.type === 'failed_by_operator' ? 'failed by hand while held' : last?.type === 'reaped' && last.reason ? `reaped: ${last.reason}` : j.last_error ? (spec?.behaviour === 'fatal' && /NonRetryableError/.test(j.last_error) ? 'planned NonRetryableError' : `handler error: ${j.last_error.slice(0, 60)}`) : null;
      if (!reason) v(`job ${j.id} failed without a stated reason`);
      else bump(failedBy, reason);
    } else {
      bump(other, j.status);
      if (Object.values(other).reduce((a, b) => a + b, 0) <= 10) v(`job ${j.id} ended the run ${j.status} (attempt ${j.attempt_count})`);
    }
  }
  const unfinished = Object.values(other).reduce((a, b) => a + b, 0);
  if (unfinished > 10) v(`… ${unfinished} jobs in all were left ${JSON.stringify(other)}`);

  // A completion has no event row (drizzle/0015): it is read from the job row,
  // placed after every event at or before its time (it is the last
  // transition). Its worker is the one the result names: every chaos handler
  // returns { by: workerId, fence }, written by the accepted completion
  // itself, so the fencing checks below still see who completed it.
  for (const j of input.jobs) {
    if (j.status !== 'completed' || j.completed_at === null) continue;
    const list = byJob.get(j.id) ?? [];
    byJob.set(j.id, list);
    if (list.some((e) => e.type === 'completed')) continue; // an older database stored it
    const ran = completedBy(j.result);
    if (!ran) v(`job ${j.id} is completed, but its result does not name the run that completed it: ${String(j.result).slice(0, 80)}`);
    const completedAt = Number(j.completed_at);
    let at = list.length;
    while (at > 0 && Number(list[at - 1]!.at) > completedAt) at--;
    // Never before the claim it completed: after a step back of the lease clock, its time may be.
    if (ran) {
      let claimsSeen = 0;
      const claimIndex = list.findIndex((e) => e.type === 'claimed' && ++claimsSeen === ran.fence);
      if (claimIndex >= at) at = claimIndex + 1;
    }
    list.splice(at, 0, { id: 0, job_id: j.id, type: 'completed', to_status: 'completed', reason: null, message: null, actor: ran?.by ?? null, worker_id: ran?.by ?? null, at: completedAt, fence: ran?.fence });
  }

  // ---- 3. no write accepted from a stale token -------------------------------------------
  const eventCounts: Record<string, number> = {};
  const reapedBy: Record<string, number> = {};
  /** job -> claims in order (fencing token k is claims[k-1]). */
  const claims = new Map<number, { worker: string; at: number; end?: EventRow }[]>();
  let staleRejected = 0;
  let claimCount = 0;
  const held = { jobsHeld: 0, holds: 0, releasedByOperator: 0, failedByOperator: 0, byReason: {} as Record<string, number> };
  // Runs whose handler the SDK stopped because the attempt lost its lease or
  // ran out of time (by job and fencing token): the failure such a run
  // reports ends a lost attempt. Stopped: its signal was aborted, for that
  // reason, before the handler ended (its end line says so). A handler that
  // failed on its own, whose lease then ran out while the failure was on its
  // way, was not stopped: that failure is an ordinary one.
  const abortedFor = new Map<string, string>();
  for (const l of input.lines) if (l.k === 'abort' && LOST_ABORTS.has(l.reason ?? '')) abortedFor.set(`${l.job}:${l.fence}`, l.reason!);
  const lostAborts = new Map<string, string>();
  for (const l of input.lines) {
    const reason = abortedFor.get(`${l.job}:${l.fence}`);
    if (l.k === 'end' && l.aborted && reason) lostAborts.set(`${l.job}:${l.fence}`, reason);
  }
  for (const [jobId, list] of byJob) {
    let owner: string | null = null;
    // onLost 'hold': a lost attempt waits for a person; only an operator's
    // release lets the job be claimed again.
    const holdsForAPerson = specByIndex[indexOfJob.get(jobId) ?? -1]?.onLost === 'hold';
    let heldBy: EventRow | null = null;
    if (list.some((e) => e.type === 'held')) held.jobsHeld++;
    const mine: { worker: string; at: number; end?: EventRow }[] = [];
    claims.set(jobId, mine);
    let completions = 0;
    for (const e of list) {
      bump(eventCounts, e.type);
      const current = mine.at(-1);
      switch (e.type) {
        case 'claimed':
          if (owner !== null) v(`job ${jobId}: claimed by ${e.worker_id} while ${owner} still held it (event ${e.id})`);
          if (heldBy) v(`job ${jobId} (onLost 'hold') claimed by ${e.worker_id} while held for a person since event ${heldBy.id}, with no operator's release (event ${e.id})`);
          owner = e.worker_id;
          claimCount++;
          mine.push({ worker: e.worker_id ?? '?', at: e.at });
          break;
        case 'completed':
          completions++;
          if (owner === null) v(`job ${jobId}: completion by ${e.worker_id} accepted with no claim in force (${eventName(e)}) — after a reap/requeue without a new claim`);
          else if (e.worker_id !== owner) v(`job ${jobId}: completion by ${e.worker_id} accepted while ${owner} held the latest claim (${eventName(e)})`);
          else if (e.fence !== undefined && e.fence !== mine.length) v(`job ${jobId}: completion by the run with fencing token ${e.fence} accepted while the latest claim was token ${mine.length} (${eventName(e)})`);
          if (current && !current.end) current.end = e;
          owner = null;
          break;
        case 'failed':
        case 'retry_scheduled': {
          if (e.actor !== 'reaper' && (owner === null || e.worker_id !== owner)) v(`job ${jobId}: ${e.type} by ${e.worker_id} accepted while the claim belonged to ${owner ?? 'nobody'} (event ${e.id})`);
          const lostBy = lostAborts.get(`${jobId}:${mine.length}`);
          if (holdsForAPerson && e.type === 'retry_scheduled' && lostBy) v(`job ${jobId} (onLost 'hold') was retried without a person after its handler was stopped (${lostBy}): a lost attempt (event ${e.id})`);
          if (current && !current.end) current.end = e;
          owner = null;
          break;
        }
        case 'held':
          held.holds++;
          bump(held.byReason, e.reason ?? 'unknown');
          if (!holdsForAPerson) v(`job ${jobId} was held for a person although its policy is onLost 'retry' (event ${e.id})`);
          heldBy = e;
          if (current && !current.end) current.end = e;
          owner = null;
          break;
        case 'released_by_operator':
          held.releasedByOperator++;
          heldBy = null;
          break;
        case 'failed_by_operator':
        case 'completed_by_operator':
          if (e.type === 'failed_by_operator') held.failedByOperator++;
          heldBy = null;
          owner = null;
          break;
        case 'reaped':
          bump(reapedBy, e.reason ?? 'unknown');
          if (holdsForAPerson && e.to_status === 'pending') v(`job ${jobId} (onLost 'hold') was put back to run again without a person (event ${e.id}, ${e.reason})`);
          if (current && !current.end) current.end = e;
          owner = null;
          break;
        case 'released':
        case 'requeued_by_operator':
        case 'force_requeued_by_operator':
        case 'cancelled':
          if (current && !current.end) current.end = e;
          owner = null;
          break;
        case 'stale_write_rejected':
          staleRejected++;
          // A finishing write sent again after its own outcome was stored (its
          // first answer was lost) is the same write, not a stale one. Only
          // when the worker claimed the job once is the token unambiguous.
          if (FINISHING_WRITES.has(e.reason ?? '') && current?.end && current.end.worker_id === e.worker_id && ENDED_BY_OWNER.has(current.end.type) && mine.filter((c) => c.worker === e.worker_id).length === 1) {
            v(`job ${jobId}: ${e.worker_id}'s ${e.reason} sent again after its own outcome was stored was refused as a stale write (event ${e.id}: ${e.message})`);
          }
          break;
      }
    }
    if (completions > 1) v(`job ${jobId} completed ${completions} times`);
  }

  // ---- 4. the workers' files agree with the claims; once() exactly once -----------------
  const linesByJob = new Map<number, Line[]>();
  for (const l of input.lines) {
    const id = Number(l.job);
    let list = linesByJob.get(id);
    if (!list) linesByJob.set(id, (list = []));
    list.push(l);
  }
  const effectDone = new Map<number, number | null>();
  for (const e of input.effects) if (e.key === 'effect') effectDone.set(e.job_id, e.completed_at);
  const behavioursRun: Record<string, number> = {};
  const extraRunsByCause: Record<string, number> = {};
  let runs = 0;
  let jobsRunMoreThanOnce = 0;
  let extraRuns = 0;
  let overlapping = 0;
  const overlapsExcused: Record<string, number> = {};
  // When each worker's event loop was blocked by a handler (a blocking
  // behaviour's run to its end): no timer of that process, the fence's
  // included, can fire meanwhile, so every job it holds may outlive its lease.
  const blockedSpans = new Map<string, { from: number; to: number }[]>();
  for (const l of input.lines) {
    if (l.k !== 'run' || (l.b !== 'block' && l.b !== 'block_past_lease')) continue;
    const end = input.lines.find((e) => e.k === 'end' && e.w === l.w && e.job === l.job && e.fence === l.fence);
    let spans = blockedSpans.get(l.w);
    if (!spans) blockedSpans.set(l.w, (spans = []));
    spans.push({ from: l.t, to: end?.t ?? l.t + t.leaseMs * 2 });
  }
  /** Why two attempts' handlers could not have been kept apart, if they could not. */
  const overlapExcuse = (older: Line, newer: Line): string | undefined => {
    if (older.b === 'long_ignores_signal') return 'handler ignores its signal';
    if (older.b === 'block' || older.b === 'block_past_lease') return 'handler blocks its event loop';
    const from = Math.min(older.t, newer.t);
    const until = Math.max(older.t, newer.t);
    // Blocked within a lease + grace before the other attempt started: the fence could not fire in time.
    const blockedBy = (w: string) => (blockedSpans.get(w) ?? []).some((b) => b.from <= until && b.to >= until - t.leaseMs - t.graceMs);
    if (blockedBy(older.w)) return "another handler blocked the worker's event loop";
    const frozen = (w: string) => input.faults.some((f) => f.kind === 'stop_worker' && f.workerId === w && f.wallAt !== undefined && f.wallAt <= until && (f.wallEnd ?? Infinity) >= from);
    return frozen(older.w) || frozen(newer.w) ? 'worker process was stopped (SIGSTOP)' : undefined;
  };
  // How far the servers' lease clock may be from the workers' at server time `at` (0 away from every clock step).
  const clockSlackAt = (at: number) =>
    Math.max(0, ...input.faults.filter((f) => f.kind === 'clock_step' && f.wallAt !== undefined && f.stepMs).map((f) => {
      const step = Math.abs(f.stepMs!);
      return at >= f.wallAt! - 2 * step && at <= (f.wallEnd ?? Infinity) + 2 * step ? step : 0;
    }));
  let applications = 0;
  let jobsApplied = 0;
  let reRunsDocumented = 0;
  let reRunsAfterRecorded = 0;
  let completedWithout = 0;
  const faultsOf = (worker: string, from: number, to: number) => {
    const kinds = new Set<string>();
    for (const f of input.faults) if (f.workerId === worker && f.wallAt !== undefined && f.wallAt >= from - 50 && f.wallAt <= to) kinds.add(f.kind);
    for (const o of input.outages) if (o.from <= to && o.to >= from) kinds.add('server_outage');
    return [...kinds].sort().join('+');
  };
  for (const j of input.jobs) {
    const lines = (linesByJob.get(j.id) ?? []).sort((a, b) => a.t - b.t);
    const jobClaims = claims.get(j.id) ?? [];
    const runLines = lines.filter((l) => l.k === 'run');
    runs += runLines.length;
    for (const r of runLines) {
      bump(behavioursRun, r.b ?? '?');
      const claim = jobClaims[r.fence - 1];
      if (!claim) v(`job ${j.id}: ${r.w} ran it with fencing token ${r.fence}, but only ${jobClaims.length} claims were recorded`);
      else if (claim.worker !== r.w) v(`job ${j.id}: ${r.w} ran it with fencing token ${r.fence}, which was issued to ${claim.worker}`);
    }
    if (runLines.length > 1) {
      jobsRunMoreThanOnce++;
      for (let k = 1; k < runLines.length; k++) {
        extraRuns++;
        const prev = runLines[k - 1]!;
        const prevClaim = jobClaims[prev.fence - 1];
        const end = prevClaim?.end;
        let cause: string;
        if (!end) cause = 'previous claim never ended (?)';
        else if (end.type === 'retry_scheduled') cause = 'handler failed, retried (planned)';
        else {
          const ctxFault = faultsOf(prev.w, prevClaim.at, end.at);
          const blocked = prev.b === 'block_past_lease' ? 'event loop blocked past the lease' : '';
          const hang = prev.b === 'hang_io' ? 'hung on I/O past its deadline' : '';
          cause = `${end.type}${end.reason ? `: ${end.reason}` : ''} after ${[ctxFault, blocked, hang].filter(Boolean).join(', ') || 'lease loss (load)'}`;
        }
        bump(extraRunsByCause, cause);
      }
    }
    // No handler may still run when the job's next attempt starts: the SDK
    // aborts it before the server could hand the job on, however its
    // requests fare, and never starts a handler for a claim it no longer
    // holds. A killed worker wrote no end line (its handler died with it); a
    // frozen process, or a handler that ignores its signal or blocks its own
    // event loop, cannot be stopped and is excused.
    const byFence = [...runLines].sort((a, b) => a.fence - b.fence);
    const endOf = (r: Line) => lines.find((l) => l.k === 'end' && l.fence === r.fence);
    for (let k = 1; k < byFence.length; k++) {
      const older = byFence[k - 1]!;
      const newer = byFence[k]!;
      const olderEnd = endOf(older);
      const newerEnd = endOf(newer);
      const stillRunning = older.t <= newer.t && olderEnd !== undefined && olderEnd.t > newer.t;
      const startedStale = older.t > newer.t && (newerEnd === undefined || newerEnd.t > older.t);
      if (!stillRunning && !startedStale) continue;
      overlapping++;
      const excuse = overlapExcuse(older, newer);
      if (excuse) {
        bump(overlapsExcused, excuse);
        continue;
      }
      const abort = lines.find((l) => l.k === 'abort' && l.fence === older.fence);
      const aborted = abort ? `aborted at ${abort.t} (${abort.reason})` : 'never aborted';
      if (stillRunning) v(`job ${j.id}: ${older.w}'s handler (token ${older.fence}, ${older.b}) was still running when ${newer.w} started token ${newer.fence}: ${aborted}, ended ${olderEnd!.t - newer.t} ms after the other started`);
      else v(`job ${j.id}: ${older.w} started its handler for token ${older.fence} ${older.t - newer.t} ms after ${newer.w} had started token ${newer.fence}, which was still running (${aborted})`);
    }

    // once(): applied exactly once per job, unless the documented window (the applier died
    // or lost its lease after fn ran, before the result was recorded) let a later attempt in.
    const onceLines = lines.filter((l) => l.k === 'once');
    applications += onceLines.length;
    if (onceLines.length > 0) jobsApplied++;
    if (j.status === 'completed' && onceLines.length === 0) {
      completedWithout++;
      v(`job ${j.id} completed but its once() side effect is in no worker's file`);
    }
    const doneAt = effectDone.get(j.id);
    // The ledger's time is the server's lease clock: near a clock step it is off the workers' clocks by up to the step.
    const slack = doneAt == null ? 0 : clockSlackAt(doneAt);
    for (let k = 1; k < onceLines.length; k++) {
      const call = lines.find((l) => l.k === 'once_call' && l.fence === onceLines[k]!.fence);
      const startedAt = call?.t ?? onceLines[k]!.t;
      if (doneAt != null && startedAt > doneAt + 1 + slack) {
        reRunsAfterRecorded++;
        v(`job ${j.id}: once() applied again by ${onceLines[k]!.w} (token ${onceLines[k]!.fence}) ${startedAt - doneAt} ms after the ledger recorded it as done`);
      } else reRunsDocumented++;
    }
  }

  // ---- 5. faults and recovery times ---------------------------------------------------------
  const injected: Record<string, number> = {};
  let skipped = 0;
  let killsMidJob = 0;
  for (const f of input.faults) {
    if (f.skipped) skipped++;
    else if (f.wallAt !== undefined) bump(injected, f.kind);
    if (f.kind === 'kill_worker' && !f.skipped && (f.inFlight ?? 0) > 0) killsMidJob++;
  }
  const boundMs = t.leaseMs + t.graceMs + t.reaperIntervalMs;
  const reclaim: Record<string, { ms: number; outage: boolean }[]> = {};
  const reap: Record<string, { ms: number; outage: boolean }[]> = {};
  for (const f of input.faults) {
    if (!f.workerId || f.wallAt === undefined || f.kind === 'kill_server' || f.kind === 'stop_server') continue;
    const T = f.wallAt;
    for (const [jobId, list] of byJob) {
      const jc = claims.get(jobId)!;
      const held = jc.find((c) => c.worker === f.workerId && c.at <= T && (!c.end || c.end.at > T));
      if (!held) continue;
      // Not "lost" if its own worker finished it after all (a stall shorter than the lease).
      if (held.end && (held.end.type === 'completed' || held.end.type === 'failed' || held.end.type === 'retry_scheduled') && held.end.worker_id === f.workerId) continue;
      const reapEv = list.find((e) => e.at >= T && (e.type === 'reaped' || e.type === 'released') && e.worker_id === f.workerId);
      const next = jc.find((c) => c.at > T && c !== held);
      const outage = (until: number) => input.outages.some((o) => o.from <= until && o.to >= T);
      if (reapEv) (reap[f.kind] ??= []).push({ ms: reapEv.at - T, outage: outage(reapEv.at) });
      if (next) (reclaim[f.kind] ??= []).push({ ms: next.at - T, outage: outage(next.at) });
    }
  }
  const reclaimStats: Record<string, LatencyStats> = {};
  const reapStats: Record<string, LatencyStats> = {};
  for (const [k, vals] of Object.entries(reclaim)) reclaimStats[k] = stats(vals, boundMs);
  for (const [k, vals] of Object.entries(reap)) reapStats[k] = stats(vals, boundMs);

  // ---- 6. a lost answer leaves no job waiting for the reaper ---------------------------------
  // A claim in force when one of its worker's answers was dropped must end
  // the ordinary way (completed, failed, released or handed back early), not
  // by the reaper taking a lost lease, unless something else hit that worker
  // or its server while the claim was held, or a handler blocked its event
  // loop for a lease or more (then no heartbeat could be sent, whatever the
  // network did).
  const dropped: Record<string, number> = {};
  let claimsConcerned = 0;
  let waitedForReaper = 0;
  const LOST_LEASE = new Set(['reaped_due_to_expired_lease', 'lost_too_many_times', 'attempts_exhausted']);
  const otherTrouble = (worker: string, from: number, to: number) =>
    input.faults.some(
      (f) => f.workerId === worker && f.kind !== 'drop_answers' && f.kind !== 'slow_answers' && f.wallAt !== undefined && f.wallAt <= to && (f.wallEnd ?? f.wallAt) >= from,
    ) || input.outages.some((o) => o.from <= to && o.to >= from);
  for (const f of input.faults) {
    if (f.kind !== 'drop_answers' || !f.workerId || !f.drops?.length) continue;
    const call = input.plan.faults[f.n]?.call ?? '?';
    bump(dropped, call, f.drops.length);
    for (const [jobId, jc] of claims) {
      jc.forEach((c, k) => {
        if (c.worker !== f.workerId || !f.drops!.some((d) => c.at <= d && (!c.end || c.end.at >= d - 50))) return;
        claimsConcerned++;
        const end = c.end;
        if (!end || end.type !== 'reaped' || !LOST_LEASE.has(end.reason ?? '')) return;
        const run = (linesByJob.get(jobId) ?? []).find((l) => l.k === 'run' && l.fence === k + 1);
        if (run && (run.b === 'block_past_lease' || run.b === 'long_ignores_signal')) return;
        if (otherTrouble(c.worker, c.at, end.at)) return;
        if ((blockedSpans.get(c.worker) ?? []).some((b) => b.to - b.from >= t.leaseMs && b.from <= end.at && b.to >= c.at)) return;
        waitedForReaper++;
        v(`job ${jobId}: after a dropped ${call} answer, ${c.worker}'s claim (token ${k + 1}) waited for the reaper (${end.reason}, ${end.at - c.at} ms after the claim)`);
      });
    }
  }

  // ---- 7. a forward step of the lease clock hands no live worker's job away ------------------
  // Right after the servers' lease clock stepped forward, every lease looks
  // older by the step; the reaper's hold (one heartbeat + grace from when a
  // server notices the step) keeps it from taking them while their owners
  // renew on the new clock. So no lease may be taken as lost in that window
  // from a worker nothing else happened to. Server times: a forward-first
  // step shows at wallAt + stepMs; the return of a back-first step at wallEnd.
  const forwardSteps = input.faults.flatMap((f) => {
    if (f.kind !== 'clock_step' || f.wallAt === undefined || !f.stepMs) return [];
    if (f.stepMs > 0) return [{ f, serverAt: f.wallAt + f.stepMs, realAt: f.wallAt }];
    return f.wallEnd !== undefined ? [{ f, serverAt: f.wallEnd, realAt: f.wallEnd }] : [];
  });
  const holdMs = t.heartbeatMs + t.graceMs;
  let clockHeld = 0;
  let takenAfterStep = 0;
  for (const { f, serverAt, realAt } of forwardSteps) {
    const inWindow = (e: EventRow) => e.at >= serverAt && e.at < serverAt + holdMs;
    clockHeld += input.events.filter((e) => e.type === 'reap_held' && inWindow(e) && /stepped forward/.test(e.message ?? '')).length;
    for (const [jobId, jc] of claims) {
      jc.forEach((c, k) => {
        const end = c.end;
        if (!end || end.type !== 'reaped' || !LOST_LEASE.has(end.reason ?? '') || !inWindow(end)) return;
        const run = (linesByJob.get(jobId) ?? []).find((l) => l.k === 'run' && l.fence === k + 1);
        if (run && (run.b === 'block_past_lease' || run.b === 'long_ignores_signal')) return;
        const realEnd = realAt + (end.at - serverAt);
        if (otherTrouble(c.worker, realEnd - t.leaseMs - t.graceMs, realEnd)) return;
        if ((blockedSpans.get(c.worker) ?? []).some((b) => b.to - b.from >= t.leaseMs && b.from <= realEnd && b.to >= realEnd - t.leaseMs - t.graceMs)) return;
        takenAfterStep++;
        v(`job ${jobId}: taken back from ${c.worker} (${end.reason}, token ${k + 1}) ${end.at - serverAt} ms after the lease clock stepped forward ${Math.abs(f.stepMs!)} ms (fault #${f.n}): the step handed a live worker's job away`);
      });
    }
  }

  if (!input.finishedInTime) v('the run did not finish within its duration limit');
  for (const x of input.unexpectedExits) v(`process exited unexpectedly: ${x}`);
  const samples = [...new Set(input.unhandledRejections.map((u) => u.message))].slice(0, 5);
  if (input.unhandledRejections.length > 0 && !input.tolerateUnhandledRejections) {
    v(`${input.unhandledRejections.length} unhandled promise rejection(s) in worker processes (each would have crashed the worker): ${samples.join(' | ')}`);
  }

  return {
    ok: violations.length === 0,
    violations,
    jobs: { total: input.jobs.length, completed: counts.completed, failed: counts.failed, other, failedBy, acked: input.acked.size },
    claims: claimCount,
    events: eventCounts,
    reapedBy,
    staleWritesRejected: staleRejected,
    held,
    plainRuns: { total: runs, jobsRunMoreThanOnce, extraRuns, extraRunsByCause, overlapping, overlapsExcused },
    lostAnswers: { dropped, claimsConcerned, waitedForReaper },
    once: { applications, jobsApplied, reRunsDocumented, reRunsAfterRecorded, completedWithout },
    behavioursRun,
    faults: { planned: input.faults.length, injected, skipped, killsMidJob },
    recovery: { boundMs, reclaim: reclaimStats, reap: reapStats },
    clockSteps: { forward: forwardSteps.length, heldEvents: clockHeld, takenFromLiveOwners: takenAfterStep },
    workerEvents: input.workerEvents,
    defects: { unhandledRejections: input.unhandledRejections.length, unhandledRejectionSamples: samples, unexpectedExits: input.unexpectedExits },
  };
}
