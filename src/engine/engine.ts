/**
 * The engine: what leasehold does, over a store, built once per process by
 * the runtime (or the embedded library) and handed to both the HTTP app and
 * the in-process transport. It owns what used to be glued to each of them:
 *
 * - enqueue (one, many, gathered per turn; src/engine/enqueue.ts), the input
 *   checks before it (src/engine/enqueue-input.ts);
 * - claim, with the wait for work (src/engine/claim-waiters.ts) and the
 *   rate limit's advice (`rateWait`);
 * - the owned writes of a worker (src/engine/worker-protocol.ts);
 * - an operator's actions, single and bulk (src/engine/operator-actions.ts),
 *   and a dead-letter queue's redrive (src/engine/redrive.ts);
 * - waits on jobs (src/engine/job-wait.ts, src/engine/job-watchers.ts);
 * - the maintenance pass, run with the engine's wake-up;
 * - close().
 *
 * Every transition that makes a job claimable wakes the claims waiting on
 * its queue, right after its commit: an enqueue (and a flow's jobs that wait
 * for nothing), a release, an operator's
 * retry or requeue (one or bulk), a redrive, a reaper requeue or a schedule's
 * occurrence of a pass run through `maintenancePass`, and a delayed job or
 * a retry's backoff coming due (src/engine/due-timers.ts). A job that
 * others wait for (docs/flows.md), finished through this engine (a worker's
 * completion or failure for good, an operator's cancel or completion of a
 * held job, a reaper's failure), may have released them on queues the
 * transition does not name: the waiters' shared look runs right after its
 * commit (a worker's write says whether its jobs had dependents, so a
 * completion nothing waits for costs nothing more). What another
 * process writes is found by the waiters' shared look (CLAIM_REPOLL_MS).
 *
 * @example
 *   const engine = createEngine({ store: createStore(db), config, clock: databaseClock, log });
 *   const app = createApp({ engine });
 *   const transport = dbTransport(engine);
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Logger } from '../core/log.ts';
import { MAX_DEPENDENTS, type ClaimedJobWire, type DependencyLinkWire, type JobDependenciesWire } from '../core/wire.ts';
import type { BulkParams, DependencyLink, Enqueued, FlowInsertParams, JobStore, NewJob, OperatorOutcome } from '../db/store/port.ts';
import { iso, parsed, type JobRecord } from '../core/job-record.ts';
import { maintenancePassOnce, type MaintenancePassOptions, type MaintenancePassReport } from '../maintenance/pass.ts';
import { claimOrWait, ClaimWaiters, MAX_CLAIM_WAIT_MS, type WaitBounds } from './claim-waiters.ts';
import { handOffClaims } from './claim-handoff.ts';
import { DueTimers } from './due-timers.ts';
import { CascadeRunner } from './dependency-cascades.ts';
import { ScheduleTimer } from './schedule-timer.ts';
import { createEnqueuing, type EnqueueSource } from './enqueue.ts';
import { waitOnJobs, type JobWaitAnswer, type JobWaitRequest } from './job-wait.ts';
import { JobWatchers } from './job-watchers.ts';
import { runHeldAction, runOperatorAction } from './operator-actions.ts';
import { redriveDeadLetters, type RedriveDone } from './redrive.ts';
import { createWorkerProtocol, type ClaimCallParams, type ClaimRequest, type ClaimResult, type WorkerProtocol } from './worker-protocol.ts';

export interface EngineDeps {
  store: JobStore;
  config: Config;
  clock: Clock;
  log: Logger;
  /**
   * Single-job enqueue requests read in one event-loop turn share one
   * transaction (src/engine/enqueue.ts). Default true; the Workers entry
   * turns it off, because there one request cannot finish another's I/O.
   */
  batchEnqueues?: boolean;
  /**
   * A request cannot finish another's I/O or keep its timers (Workers): a
   * client waiting on jobs reads for itself, in its own request, instead of
   * sharing the engine's one read. Default false.
   */
  isolatedRequests?: boolean;
  /**
   * An enqueue runs the claims waiting for its jobs in its own transaction
   * (src/engine/claim-handoff.ts). Default: wherever one request may answer
   * another's (not with batchEnqueues false or isolatedRequests); false
   * wakes them to claim in their own (what bench/handoff-ab.ts compares).
   */
  handOffClaims?: boolean;
}

/** A claim, with how long it may wait for work. */
export interface ClaimCall extends ClaimRequest {
  workerId: string;
  instanceId?: string | undefined;
  /** Longest to wait when nothing is ready, in ms (capped at MAX_CLAIM_WAIT_MS); 0 or absent: answer at once. */
  waitMs?: number | undefined;
  /** The caller went away: stop waiting, claim nothing more. */
  signal?: AbortSignal | undefined;
  /** Whose claim this is, for the bounds on waiting claims (HTTP: the token's name); absent: the application itself, not bounded. */
  owner?: string | undefined;
}

/**
 * What a claim answers. When the queue's rate limit held it to fewer jobs
 * than it asked for, also when its next window opens (advisory: the claim
 * statement enforces the limit), so the worker sleeps until then instead of
 * polling into the closed window.
 */
export interface ClaimAnswer {
  jobs: ClaimedJobWire[];
  /** In ms from now. */
  retryAfterMs?: number;
  /** The same instant, epoch ms (the database's clock). */
  rateLimitedUntil?: number;
}

export type Engine = ReturnType<typeof createEngine>;

export function createEngine(deps: EngineDeps) {
  const { store, config, clock } = deps;
  const claimWaiters = new ClaimWaiters<ClaimCallParams, ClaimResult>();
  const handoff = deps.handOffClaims ?? (deps.batchEnqueues !== false && deps.isolatedRequests !== true);
  const jobWatchers = new JobWatchers();
  const jobsBecameClaimable = (queue: string, n: number) => claimWaiters.notify(queue, n);
  const due = new DueTimers(jobsBecameClaimable);
  // Started only where a reaper runs in this process (src/runtime/reaper-timer.ts, deno.ts): schedules fire at their time.
  let scheduleTimer: ScheduleTimer | undefined;
  const jobsChanged = (ids: readonly number[]) => jobWatchers.notify(ids);
  // A failed, cancelled or retried job's dependents are settled in bounded steps (src/engine/dependency-cascades.ts).
  const cascades = new CascadeRunner({
    store,
    clock,
    log: deps.log,
    rows: config.cascadeStepRows,
    isolated: deps.isolatedRequests === true,
    stepped(step) {
      if (step.changed.length > 0) jobsChanged(step.changed);
      const byQueue = new Map<string, number>();
      for (const { queue } of step.released) byQueue.set(queue, (byQueue.get(queue) ?? 0) + 1);
      for (const [queue, n] of byQueue) jobsBecameClaimable(queue, n);
    },
  });
  const protocol: WorkerProtocol = createWorkerProtocol({
    store,
    config,
    clock,
    changed: jobsChanged,
    becameClaimable: jobsBecameClaimable,
    comesDue: (queue, at) => due.add(queue, at),
    dependentsMayRun: () => {
      claimWaiters.lookNow();
      return cascades.settle();
    },
  });
  /**
   * An operator's or the reaper's write finished jobs, or retried them (rare
   * next to completions): jobs waiting for them may run now (the look is a
   * read, and only when claims wait), and a cascade the write made owed
   * takes its first steps before the caller is answered (one read when none is).
   */
  const jobsFinished = () => {
    claimWaiters.lookNow();
    return cascades.settle();
  };
  /**
   * New pending jobs of `queue` were committed: wake claims for the ones due
   * now that the claims run in the same transaction did not take (`started`),
   * arm timers for the delayed; answers how many claims woke.
   */
  function jobsAdded(queue: string, jobs: readonly Pick<Enqueued, 'job'>[], started = 0): number {
    // Due at once: a job enqueued without a delay (or with a runAt already
    // past) has available_at <= created_at, both from the database's clock
    // in the same statement. Waking claims for delayed ones would only make
    // each of them claim nothing and wait again.
    const dueNow = jobs.filter(({ job }) => job.available_at <= job.created_at).length;
    // The delayed ones wake their claims when they come due (the timers compare with this process's clock).
    for (const { job } of jobs) if (job.available_at > job.created_at) due.add(queue, job.available_at);
    // Notified even when the claims took them all: a claim between its statement and its wait claims again.
    return dueNow > 0 ? claimWaiters.notify(queue, Math.max(0, dueNow - started)) : 0;
  }
  const enqueuing = createEnqueuing({
    store,
    config,
    clock,
    batchEnqueues: deps.batchEnqueues !== false,
    added: jobsAdded,
    ...(handoff ? { handoff: (queue: string, jobs: readonly NewJob[]) => handOffClaims({ waiters: claimWaiters, params: protocol.claimParams, answer: protocol.claimAnswer }, queue, jobs) } : {}),
  });
  const bounds: WaitBounds = { maxWaiting: config.maxWaitingClaims, maxWaitingPerOwner: config.maxWaitingClaimsPerToken };

  return {
    store,
    config,
    clock,
    log: deps.log,
    /** The claims waiting for work (tests and metrics read `waiting`). */
    claimWaiters,
    /** The waits on jobs in progress (tests read `waiting`). */
    jobWatchers,
    /** The failure cascades this engine steps (tests read `steps`, and await `settle()`). */
    cascades,

    /** One job, gathered with the enqueues of its turn into one transaction; input checked first (src/engine/enqueue-input.ts). */
    enqueue: (queue: string, job: NewJob, source: EnqueueSource): Promise<Enqueued> => enqueuing.one(queue, job, source),
    /** Many jobs, up to one chunk per transaction; `summaries`: rows without payloads. */
    enqueueMany: (queue: string, jobs: NewJob[], source: EnqueueSource, options?: { summaries?: boolean }): Promise<Enqueued[]> => enqueuing.many(queue, jobs, source, options),
    /**
     * Jobs that wait for other jobs, all or none (src/db/store/dependencies.ts).
     * The ones that wait for nothing unfinished wake their queues' waiting
     * claims as an enqueue does; the rest become claimable in the statement
     * that completes their last dependency.
     */
    async enqueueFlow(p: FlowInsertParams): Promise<JobRecord[]> {
      const rows = await store.jobsInsertFlow(p);
      const ready = new Map<string, { job: JobRecord }[]>();
      for (const job of rows) {
        if (job.status !== 'pending' || job.dependencies_unmet > 0 || job.held_at !== null) continue;
        const list = ready.get(job.queue_name);
        if (list) list.push({ job });
        else ready.set(job.queue_name, [{ job }]);
      }
      for (const [queue, jobs] of ready) jobsAdded(queue, jobs);
      return rows;
    },

    /**
     * A job's graph as the wire gives it (GET /jobs/:id/dependencies, and a
     * handler's ctx.dependencies() in process): what it waits for, each
     * completed one with its result, and the jobs waiting for it, at most
     * MAX_DEPENDENTS of each; undefined when no job has the id.
     */
    async jobDependencies(id: number): Promise<JobDependenciesWire | undefined> {
      if (!(await store.jobGet({ id }))) return undefined;
      const graph = await store.jobDependencyGraph({ id, limit: MAX_DEPENDENTS });
      const wire = (l: DependencyLink): DependencyLinkWire => ({
        id: String(l.id), queue: l.queue, status: l.status, state: l.state, result: parsed(l.result), lastError: l.lastError, updatedAt: iso(l.updatedAt)!,
      });
      return { dependencies: graph.dependencies.map(wire), dependents: graph.dependents.map(wire) };
    },

    /**
     * pending -> running: up to `limit` jobs; with `waitMs`, a claim that
     * finds nothing waits for a wake-up and claims again, until it got work,
     * the wait is over, the caller went away or the engine closes. A claim
     * with an `owner` is bounded (429 past LEASEHOLD_MAX_WAITING_CLAIMS).
     */
    async claim(p: ClaimCall): Promise<ClaimAnswer> {
      const { waitMs, signal, owner, ...params } = p;
      const claimed = await claimOrWait({
        waiters: claimWaiters,
        queue: params.queue,
        waitMs: Math.min(waitMs ?? 0, MAX_CLAIM_WAIT_MS),
        signal,
        claim: () => protocol.claim(params),
        ready: (cap) => protocol.claimableCount({ queue: params.queue, cap }),
        owner,
        bounds: owner === undefined ? undefined : bounds,
        offer: handoff ? params : undefined,
      });
      // Only a claim the limit held short gets the advice: one that got all it asked for has nothing to wait for.
      const wait = claimed.jobs.length < params.limit ? claimed.rateWait : undefined;
      return wait ? { jobs: claimed.jobs, retryAfterMs: wait.waitMs, rateLimitedUntil: wait.until } : { jobs: claimed.jobs };
    },

    /** A worker's owned writes: heartbeat, checkpoint, complete, fail, release, beat, effects (each fenced by its lock token). */
    heartbeat: protocol.heartbeat,
    checkpoint: protocol.checkpoint,
    complete: protocol.complete,
    completeOne: protocol.completeOne,
    completeThenClaim: protocol.completeThenClaim,
    fail: protocol.fail,
    snooze: protocol.snooze,
    release: protocol.release,
    releaseOne: protocol.releaseOne,
    beat: protocol.beat,
    effectStart: protocol.effectStart,
    effectFinish: protocol.effectFinish,
    reportDuplicate: protocol.reportDuplicate,
    steps: protocol.steps,

    /** One operator action on one job (src/engine/operator-actions.ts); a retried or requeued job wakes its queue's claims. */
    async operatorAction(p: Parameters<typeof runOperatorAction>[1]): Promise<OperatorOutcome> {
      const outcome = await runOperatorAction(store, p);
      if (outcome.ok) {
        jobsChanged([p.id]);
        // A held job (onLost 'hold'), or one still waiting for a dependency, is pending but claimable by nobody.
        if (outcome.job.status === 'pending' && outcome.job.held_at === null && outcome.job.dependencies_unmet === 0) jobsBecameClaimable(outcome.job.queue_name, 1);
        // A cancel, or a requeue that failed it for good: its dependents by their policy; a retry undoes that.
        if (outcome.job.status === 'cancelled' || outcome.job.status === 'failed' || p.action === 'retry') await jobsFinished();
      }
      return outcome;
    },

    /** One operator action on one held job (release, complete, fail: src/engine/operator-actions.ts); a released job wakes its queue's claims. */
    async heldAction(p: Parameters<typeof runHeldAction>[1]): Promise<OperatorOutcome> {
      const outcome = await runHeldAction(store, p);
      if (outcome.ok) {
        jobsChanged([p.id]);
        // Released: claimable, unless it still waits for a dependency (held because one failed).
        if (outcome.job.status === 'pending') {
          if (outcome.job.dependencies_unmet === 0) jobsBecameClaimable(outcome.job.queue_name, 1);
        }
        // Completed or failed by hand: jobs waiting for it may go on.
        else await jobsFinished();
      }
      return outcome;
    },

    /** A bulk action (its ids, ascending); retried or requeued jobs wake their queue's claims. */
    async bulkAct(p: BulkParams): Promise<number[]> {
      const ids = await store.jobsBulkAct(p);
      jobsChanged(ids);
      if (ids.length > 0) {
        if (p.kind !== 'cancel' && p.queue) jobsBecameClaimable(p.queue, ids.length);
        // A bulk over every queue does not say which queues it touched; and
        // cancelled jobs, or requeued ones failed for good, may let jobs
        // waiting for them go on (policy 'run'): the waiters look at theirs now.
        if (!(p.kind === 'retry' && p.queue)) claimWaiters.lookNow();
        // Cancelled or failed jobs' dependents, or retried jobs' undo (their cascades' first steps).
        await cascades.settle();
      }
      return ids;
    },

    /** A dead-letter queue's jobs back to their own queues (src/engine/redrive.ts); each queue's waiting claims wake for the jobs it got back. */
    async redrive(p: Parameters<typeof redriveDeadLetters>[1]): Promise<RedriveDone> {
      const done = await redriveDeadLetters(store, p);
      jobsChanged(done.moved.map((j) => j.id));
      for (const { queue, jobs } of done.movedTo) jobsBecameClaimable(queue, jobs);
      return done;
    },

    /** Waits on many jobs until one (or every one) counts (src/engine/job-wait.ts). */
    waitForJobs: (p: JobWaitRequest): Promise<JobWaitAnswer> => waitOnJobs({ store, config, watchers: jobWatchers, isolatedRequests: deps.isolatedRequests === true }, p),

    /** Work this engine did not write through its own calls was made claimable: wake up to `n` claims waiting on `queue`. */
    jobsBecameClaimable,
    /** Jobs changed outside the engine's own calls: waits on them look again. */
    jobsChanged,

    /** One maintenance pass over the store (src/maintenance/pass.ts); what it makes claimable wakes the waiting claims. */
    async maintenancePass(now: Parameters<typeof maintenancePassOnce>[1], options: MaintenancePassOptions = {}): Promise<MaintenancePassReport> {
      const report = await maintenancePassOnce(store, now, config, { ...options, jobsBecameClaimable });
      // Failed for good (attempts spent, a deadline): their dependents by their policy; and a cascade
      // the pass found owed, and left after its own steps, goes on here.
      if (report.failed.length > 0 || report.cascades.owed > 0) await jobsFinished();
      return report;
    },

    /** Fire schedules at their next run with a timer (long-running servers; idempotent). */
    startScheduleTimer(): void {
      if (scheduleTimer) return;
      scheduleTimer = new ScheduleTimer({ store, config, clock, log: deps.log, jobsBecameClaimable });
      scheduleTimer.start();
    },
    /** A schedule was created or changed here: the schedule timer looks again now. */
    schedulesChanged(): void {
      scheduleTimer?.poke();
    },

    /**
     * Shutdown: waiting claims and waits answer now (a server's close waits
     * for open requests), due timers stop, and enqueues still gathering for
     * their batch are started (before the database closes).
     */
    close(): void {
      enqueuing.flush();
      cascades.close();
      claimWaiters.close();
      jobWatchers.close();
      due.close();
      scheduleTimer?.close();
    },
  };
}
