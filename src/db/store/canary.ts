/**
 * Canary requeues (drizzle/0028): the run's row, the jobs it froze at its
 * start, and its decisions, each transition one batch.
 *
 * - start: the run, its frozen job list and its `started` event, and the
 *   audit entry, in one batch. No step is taken yet (canaryStepTake is).
 * - step: guarded by the step the caller saw (`step = fromStep`, state
 *   watching), with a fresh claim token set by that guard; every job
 *   update of the batch is guarded by "this claim still owns the run" as
 *   well as by the requeue rule's own guard (src/db/store/requeue.ts
 *   jobsRequeueSteps). Two passes at once: one claim wins, the other's
 *   batch changes nothing. A crash: the batch committed whole or not at
 *   all, so a restart takes the step again or finds it taken, never half.
 * - finish (done, stopped) and cancel: guarded by state watching (and, for
 *   finish, the step judged), with their event and audit entry written only
 *   when the guard held.
 * No row back: the run moved on, or ended, before this call.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { CanaryState } from '../../core/canary.ts';
import { batchList, type Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { alongsideFirst, auditInsert, auditInsertIfChanged, auditInsertWhere } from './audit.ts';
import { jobsBulkRequeuePlan, jobsRequeueSteps } from './requeue.ts';
import type {
  Alongside,
  AuditActor,
  AuditEntry,
  CanaryCancelOutcome,
  CanaryEventRecord,
  CanaryHealth,
  CanaryRunRecord,
  CanaryRunStartParams,
  CanaryStepRecord,
  CanaryStepTakeParams,
  CanaryStepTaken,
  RequeueRules,
} from './port-types.ts';

const RUN_COLUMNS = sql`r.id AS id, r.queue_name AS queue, r.state AS state, r.force AS force, r.first_step AS first, r.growth AS growth,
  r.window_ms AS windowMs, r.max_failures AS maxFailures, r.max_stale_writes AS maxStaleWrites, r.max_duplicates AS maxDuplicates,
  r.max_heartbeat_lag_ms AS maxHeartbeatLagMs, r.selected AS selected, r.step AS step, r.step_started_at AS stepStartedAt, r.step_after_event AS stepAfterEvent,
  r.requeued AS requeued, r.failed_for_good AS failedForGood, r.skipped AS skipped, r.stop_reason AS stopReason, r.stop_why AS stopWhy,
  r.actor AS actor, r.started_by AS startedBy, r.reason AS reason, r.created_at AS createdAt, r.updated_at AS updatedAt, r.finished_at AS finishedAt,
  (SELECT count(*) FROM canary_jobs c WHERE c.run_id = r.id AND c.step IS NULL) AS remaining`;

type RunRow = Omit<CanaryRunRecord, 'startedBy' | 'force'> & { startedBy: string; force: number };
const toRecord = (r: RunRow): CanaryRunRecord & { remaining: number } => ({
  ...r,
  id: Number(r.id),
  force: Boolean(r.force),
  remaining: Number((r as { remaining?: number }).remaining ?? 0),
  startedBy: JSON.parse(r.startedBy) as AuditActor,
});

/**
 * The jobs a run would freeze now, lowest id first, at most `limit`: with
 * force every running job of the queue; without, the ones the reaper would
 * take now (as the bulk requeue picks them).
 */
export async function canaryRunSelect(db: Db, p: { queue: string; force: boolean; now: Now; rules: RequeueRules; limit: number }): Promise<number[]> {
  if (p.force) {
    const rows = await db.all<{ id: number }>(sql`SELECT id FROM jobs WHERE queue_name = ${p.queue} AND status = 'running' ORDER BY id LIMIT ${p.limit}`);
    return rows.map((r) => Number(r.id));
  }
  return (await jobsBulkRequeuePlan(db, { queue: p.queue, now: p.now, rules: p.rules, limit: p.limit })).map((j) => j.id);
}

/** Starts a run over `jobIds` (one batch: the run, its jobs, its event, the audit entry); the run as stored. */
export async function canaryRunStart(db: Db, p: CanaryRunStartParams): Promise<CanaryRunRecord> {
  const now = nowSql(p.now);
  const run = sql`(SELECT max(id) FROM canary_runs)`;
  const audit: AuditEntry = {
    by: p.by,
    action: 'jobs.canary',
    queue: p.queue,
    target: `canary requeue of ${p.jobIds.length} running jobs in queue ${p.queue}`,
    after: sql`json_object('run', ${run}, 'selected', ${p.jobIds.length}, 'first', ${p.first}, 'growth', ${p.growth}, 'windowMs', ${p.windowMs}, 'force', json(${p.force ? 'true' : 'false'}))`,
    reason: p.reason,
    now: p.now,
  };
  const first = alongsideFirst(db, p.also);
  const results = await batchList(db, [
    ...first,
    db.all<{ id: number }>(sql`INSERT INTO canary_runs (queue_name, state, force, first_step, growth, window_ms, max_failures, max_stale_writes,
        max_duplicates, max_heartbeat_lag_ms, selected, actor, started_by, reason, created_at, updated_at)
      VALUES (${p.queue}, 'watching', ${p.force ? 1 : 0}, ${p.first}, ${p.growth}, ${p.windowMs}, ${p.maxFailures}, ${p.maxStaleWrites},
        ${p.maxDuplicates}, ${p.maxHeartbeatLagMs}, ${p.jobIds.length}, ${p.by.actor}, ${JSON.stringify(p.by)}, ${p.reason}, ${now}, ${now}) RETURNING id`),
    // One JSON parameter, not one per id: D1 binds at most 100 per statement.
    db.run(sql`INSERT INTO canary_jobs (run_id, position, job_id) SELECT ${run}, key, value FROM json_each(${JSON.stringify(p.jobIds)})`),
    db.run(sql`INSERT INTO canary_events (run_id, at, type, step, reason, message)
      VALUES (${run}, ${now}, 'started', 0, ${p.reason}, ${`${p.jobIds.length} jobs frozen; first step ${p.first}, each next ${p.growth}x, watched ${p.windowMs} ms`})`),
    auditInsert(db, audit),
  ]);
  const id = Number((results[first.length] as { id: number }[])[0]!.id);
  return (await canaryRunRead(db, { id }))!.run;
}

/** One run with its steps and decisions; null when there is none. */
export async function canaryRunRead(
  db: Db,
  p: { id: number },
): Promise<{ run: CanaryRunRecord & { remaining: number }; steps: CanaryStepRecord[]; events: CanaryEventRecord[] } | null> {
  if (!Number.isSafeInteger(p.id)) return null;
  const [row] = await db.all<RunRow>(sql`SELECT ${RUN_COLUMNS} FROM canary_runs r WHERE r.id = ${p.id}`);
  if (!row) return null;
  const jobs = await db.all<{ step: number; jobId: number; outcome: string; skipWhy: string | null }>(
    sql`SELECT step, job_id AS jobId, outcome, skip_why AS skipWhy FROM canary_jobs WHERE run_id = ${p.id} AND step IS NOT NULL ORDER BY position`,
  );
  const steps = new Map<number, CanaryStepRecord>();
  for (const j of jobs) {
    const s = steps.get(j.step) ?? { step: Number(j.step), jobIds: [], requeued: 0, failed: 0, skipped: [] };
    s.jobIds.push(Number(j.jobId));
    if (j.outcome === 'requeued') s.requeued++;
    else if (j.outcome === 'failed') s.failed++;
    else s.skipped.push({ id: Number(j.jobId), why: j.skipWhy ?? '' });
    steps.set(j.step, s);
  }
  const events = await db.all<CanaryEventRecord>(sql`SELECT at, type, step, reason, message FROM canary_events WHERE run_id = ${p.id} ORDER BY id`);
  return { run: toRecord(row), steps: [...steps.values()].sort((a, b) => a.step - b.step), events };
}

/** The runs still watching, oldest first (what each maintenance pass advances). */
export async function canaryRunsActive(db: Db, p: { limit: number }): Promise<(CanaryRunRecord & { remaining: number })[]> {
  const rows = await db.all<RunRow>(sql`SELECT ${RUN_COLUMNS} FROM canary_runs r WHERE r.state = 'watching' ORDER BY r.id LIMIT ${p.limit}`);
  return rows.map(toRecord);
}

/** The latest runs, newest first (the dashboard's and the CLI's list). */
export async function canaryRunsList(db: Db, p: { limit: number }): Promise<(CanaryRunRecord & { remaining: number })[]> {
  const rows = await db.all<RunRow>(sql`SELECT ${RUN_COLUMNS} FROM canary_runs r ORDER BY r.id DESC LIMIT ${p.limit}`);
  return rows.map(toRecord);
}

const CHANGED_MEANWHILE = "the job changed while the step was taken (a heartbeat, a claim or a server's hold landed)";

/** Takes the run's next step: up to `size` of its frozen jobs, each under the requeue rule (see the file's comment for the guards). */
export async function canaryStepTake(db: Db, p: CanaryStepTakeParams): Promise<CanaryStepTaken> {
  const step = p.fromStep + 1;
  const none: CanaryStepTaken = { taken: false, step, requeued: [], failed: [], skipped: [] };
  const found = await canaryRunRead(db, { id: p.runId });
  if (!found || found.run.state !== 'watching' || found.run.step !== p.fromStep) return none;
  const { run } = found;
  const next = await db.all<{ position: number; jobId: number }>(
    sql`SELECT position, job_id AS jobId FROM canary_jobs WHERE run_id = ${p.runId} AND step IS NULL ORDER BY position LIMIT ${p.size}`,
  );
  const claim = crypto.randomUUID();
  const owns = sql`EXISTS (SELECT 1 FROM canary_runs WHERE id = ${p.runId} AND step_claim = ${claim})`;
  const now = nowSql(p.now);
  const reason = `canary run ${p.runId}, step ${step}: ${run.reason}`;
  const plans = await jobsRequeueSteps(db, { ids: next.map((n) => Number(n.jobId)), now: p.now, force: run.force, rules: p.rules, actor: run.actor, reason, also: sql`AND ${owns}` });
  const mark = (position: number, outcome: SQL, why: SQL) =>
    db.run(sql`UPDATE canary_jobs SET step = ${step}, outcome = ${outcome}, skip_why = ${why} WHERE run_id = ${p.runId} AND position = ${position} AND ${owns}`);
  const statements = plans.flatMap((plan, i) => {
    const position = Number(next[i]!.position);
    if (plan.take === null) return [mark(position, sql`'skipped'`, sql`${plan.why}`)];
    // changes(): the rows the job's UPDATE just before it changed (0: the rule's guard, or the claim's, did not hold).
    return [
      db.all<{ id: number }>(plan.update),
      mark(position, sql`CASE WHEN changes() > 0 THEN ${plan.take === 'fail' ? 'failed' : 'requeued'} ELSE 'skipped' END`, sql`CASE WHEN changes() > 0 THEN NULL ELSE ${CHANGED_MEANWHILE} END`),
    ];
  });
  const count = (outcome: string) => sql`(SELECT count(*) FROM canary_jobs WHERE run_id = ${p.runId} AND outcome = ${outcome})`;
  const inStep = (outcome: string) => sql`(SELECT count(*) FROM canary_jobs WHERE run_id = ${p.runId} AND step = ${step} AND outcome = ${outcome})`;
  const results = await batchList(db, [
    db.all<{ id: number }>(sql`UPDATE canary_runs SET step = ${step}, step_claim = ${claim}, step_started_at = ${now},
        step_after_event = (SELECT coalesce(max(id), 0) FROM events), updated_at = ${now}
      WHERE id = ${p.runId} AND step = ${p.fromStep} AND state = 'watching' RETURNING id`),
    ...statements,
    db.run(sql`UPDATE canary_runs SET requeued = ${count('requeued')}, failed_for_good = ${count('failed')}, skipped = ${count('skipped')}
      WHERE id = ${p.runId} AND step_claim = ${claim}`),
    db.run(sql`INSERT INTO canary_events (run_id, at, type, step, reason, message)
      SELECT ${p.runId}, ${now}, 'step', ${step}, NULL, 'step ' || ${step} || ': requeued ' || ${inStep('requeued')} || ', failed for good as the reaper would ' || ${inStep('failed')}
        || ', skipped ' || ${inStep('skipped')} || ' (' || (SELECT count(*) FROM canary_jobs WHERE run_id = ${p.runId} AND step IS NULL) || ' left)'
      WHERE ${owns}`),
    auditInsertWhere(
      db,
      {
        by: run.startedBy,
        action: 'jobs.canary',
        queue: run.queue,
        target: `canary run ${p.runId}: step ${step}`,
        after: sql`json_object('run', ${p.runId}, 'step', ${step}, 'requeued', ${inStep('requeued')}, 'failed', ${inStep('failed')}, 'skipped', ${inStep('skipped')})`,
        reason,
        now: p.now,
      },
      owns,
    ),
  ]);
  if ((results[0] as unknown[]).length === 0) return none;
  const marks = await db.all<{ jobId: number; outcome: string; skipWhy: string | null }>(
    sql`SELECT job_id AS jobId, outcome, skip_why AS skipWhy FROM canary_jobs WHERE run_id = ${p.runId} AND step = ${step} ORDER BY position`,
  );
  return {
    taken: true,
    step,
    requeued: marks.filter((m) => m.outcome === 'requeued').map((m) => Number(m.jobId)),
    failed: marks.filter((m) => m.outcome === 'failed').map((m) => Number(m.jobId)),
    skipped: marks.filter((m) => m.outcome === 'skipped').map((m) => ({ id: Number(m.jobId), why: m.skipWhy ?? '' })),
  };
}

/**
 * What the watch reads of one step's requeued jobs since the step began
 * (each of them left its old owner in the step, so a running one is a new
 * attempt, and every claim since is one; claims keep their event rows).
 * Failures: failed, scheduled for retry, or reaped again. Duplicates: the
 * ones a handler reported (ctx.reportDuplicate); the `duplicate_execution`
 * event the first claim after any take-back writes is expected here (the
 * requeue took the job from its owner), and a second take-back counts as a
 * failure instead. Stale writes: an earlier owner still writing.
 */
export async function canaryStepHealth(db: Db, p: { runId: number; step: number; afterEvent: number; now: Now }): Promise<CanaryHealth> {
  const s = sql`(SELECT job_id FROM canary_jobs WHERE run_id = ${p.runId} AND step = ${p.step} AND outcome = 'requeued')`;
  const events = (types: string[]) =>
    sql`(SELECT count(*) FROM events e WHERE e.job_id IN ${s} AND e.id > ${p.afterEvent} AND e.type IN (${sql.join(
      types.map((t) => sql`${t}`),
      sql`, `,
    )}))`;
  const [row] = await db.all<Record<keyof CanaryHealth, number | null>>(sql`SELECT
      (SELECT count(*) FROM ${s}) AS jobs,
      ${events(['claimed'])} AS attempts,
      (SELECT count(*) FROM jobs j WHERE j.id IN ${s} AND j.status = 'completed') AS completed,
      ${events(['failed', 'retry_scheduled', 'reaped'])} AS failures,
      ${events(['stale_write_rejected'])} AS staleWrites,
      ${events(['duplicate_reported'])} AS duplicates,
      (SELECT max(${nowSql(p.now)} - j.last_heartbeat_at) FROM jobs j WHERE j.id IN ${s} AND j.status = 'running') AS heartbeatLagMs`);
  const n = (v: number | null | undefined) => Number(v ?? 0);
  return {
    jobs: n(row?.jobs),
    attempts: n(row?.attempts),
    completed: n(row?.completed),
    failures: n(row?.failures),
    staleWrites: n(row?.staleWrites),
    duplicates: n(row?.duplicates),
    heartbeatLagMs: row?.heartbeatLagMs === null || row?.heartbeatLagMs === undefined ? null : Number(row.heartbeatLagMs),
  };
}

/** Ends a run by itself (done, or stopped with the reason), if it is still watching step `step`; false: it moved on or ended first. */
export async function canaryRunFinish(
  db: Db,
  p: { runId: number; step: number; state: Extract<CanaryState, 'done' | 'stopped'>; reason: string; why: string; now: Now },
): Promise<boolean> {
  const found = await canaryRunRead(db, { id: p.runId });
  if (!found) return false;
  const now = nowSql(p.now);
  const results = await batchList(db, [
    db.all<{ id: number }>(sql`UPDATE canary_runs SET state = ${p.state}, stop_reason = ${p.state === 'stopped' ? p.reason : null},
        stop_why = ${p.why}, finished_at = ${now}, updated_at = ${now}
      WHERE id = ${p.runId} AND step = ${p.step} AND state = 'watching' RETURNING id`),
    db.run(sql`INSERT INTO canary_events (run_id, at, type, step, reason, message) SELECT ${p.runId}, ${now}, ${p.state}, ${p.step}, ${p.reason}, ${p.why} WHERE changes() > 0`),
    auditInsertIfChanged(db, {
      by: found.run.startedBy,
      action: 'jobs.canary',
      queue: found.run.queue,
      target: `canary run ${p.runId}: ${p.state === 'done' ? 'done' : 'stopped by itself'} after step ${p.step}`,
      after: JSON.stringify({ run: p.runId, state: p.state, step: p.step, reason: p.reason }),
      reason: p.why,
      now: p.now,
    }),
  ]);
  return (results[0] as unknown[]).length > 0;
}

/** An operator's cancel: watching -> cancelled, nothing more requeued; the jobs already requeued stay as they are. */
export async function canaryRunCancel(db: Db, p: { runId: number; by: AuditActor; reason: string; now: Now; also?: Pick<Alongside, 'formNonce'> }): Promise<CanaryCancelOutcome> {
  const now = nowSql(p.now);
  const found = await canaryRunRead(db, { id: p.runId });
  if (!found) return { ok: false, reason: 'not_found' };
  const first = alongsideFirst(db, p.also);
  const results = await batchList(db, [
    ...first,
    db.all<{ id: number }>(sql`UPDATE canary_runs SET state = 'cancelled', stop_reason = 'cancelled', stop_why = ${p.reason}, finished_at = ${now}, updated_at = ${now}
      WHERE id = ${p.runId} AND state = 'watching' RETURNING id`),
    db.run(sql`INSERT INTO canary_events (run_id, at, type, step, reason, message)
      SELECT ${p.runId}, ${now}, 'cancelled', step, ${p.reason}, ${`cancelled by ${p.by.actor}`} FROM canary_runs WHERE id = ${p.runId} AND changes() > 0`),
    auditInsertIfChanged(db, {
      by: p.by,
      action: 'jobs.canary',
      queue: found.run.queue,
      target: `canary run ${p.runId}: cancelled`,
      after: JSON.stringify({ run: p.runId, state: 'cancelled' }),
      reason: p.reason,
      now: p.now,
    }),
  ]);
  const after = (await canaryRunRead(db, { id: p.runId }))!.run;
  if ((results[first.length] as unknown[]).length === 0) return { ok: false, reason: 'conflict', state: after.state };
  return { ok: true, run: after };
}
