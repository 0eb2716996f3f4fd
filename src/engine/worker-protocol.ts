/**
 * The worker protocol, implemented once over the store (the engine,
 * src/engine/engine.ts, builds it with its wake-ups): claim, heartbeat
 * (with the worker's liveness beat folded in), checkpoint, complete (and
 * complete-then-claim), fail, release, effects, duplicate reports, beat. The in-process
 * transport (src/embedded/db-transport.ts) adapts it to the SDK's Transport;
 * the HTTP worker routes (src/api/worker-routes.ts) decode a body, call it and
 * encode its answer. So a worker gets the same verdict, in the same words,
 * whichever way it talks to leasehold.
 *
 * Params are plain and typed (ids as numbers, JSON values as values); every
 * refusal is a `Refusal` whose text is written here and nowhere else.
 *
 * @example
 *   const protocol = createWorkerProtocol({ store: createStore(db), config, clock });
 *   const [answer] = await protocol.heartbeat({ workerId: 'w1', leases: [{ id: 7, lockToken }] });
 *   if (!answer.ok) console.log(answer.refusal.message);
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { ClaimedJobWire, LostAttemptAbort, StepWire, WorkerLivenessWire } from '../core/wire.ts';
import { jsonOrNull } from '../db/sql.ts';
import type { ClaimParams, ClaimedWithRateWait, EffectFinishOutcome, EffectStartOutcome, JobStore, LeanJob, OwnedOutcome, RateWait } from '../db/store/port.ts';
import { parsed, toClaimedJob, type JobRecord } from '../core/job-record.ts';
import type { WorkerLiveness as StoredLiveness } from '../db/store/port.ts';
import type { JobStatus } from '../db/schema.ts';
import { DEFAULT_MAX_SNOOZES, snoozeLimitText } from '../core/snooze.ts';

/**
 * Why a write was refused: the wire error's code, message, field and details
 * (`status`, `cause`), so the API and the in-process transport say the same.
 */
export interface Refusal {
  code: 'not_found' | 'lease_lost' | 'conflict';
  message: string;
  field: 'id' | 'lockToken' | 'key' | 'delayMs';
  details?: { status: JobStatus; cause?: 'deadline_exceeded' | 'snooze_limit'; snoozes?: number; maxSnoozes?: number };
}

/** One job's answer: accepted with the row the write returned, or refused. */
export type JobAnswer<T = LeanJob> = { id: number; ok: true; job: T } | { id: number; ok: false; refusal: Refusal };

/** A lease as the worker names it: the job and the token of its claim. */
export interface Lease {
  id: number;
  lockToken: string;
}

/** Claimed jobs; `rateWait` when the queue's rate limit held claims back. */
export interface ClaimResult {
  jobs: ClaimedJobWire[];
  rateWait?: RateWait | undefined;
}

/** What a worker says about itself in its liveness beat (the wire's fields). */
export type Liveness = WorkerLivenessWire;

export interface ClaimRequest {
  queue: string;
  limit: number;
  leaseMs?: number | undefined;
  /** The worker's id for this claim: sent again, it answers the jobs it already took instead of claiming more. */
  claimId?: string | undefined;
}

/** A claim as the engine runs it: the request and who claims. */
export type ClaimCallParams = ClaimRequest & { workerId: string; instanceId?: string | undefined };

export type EffectStartAnswer = { kind: 'run' } | { kind: 'done'; result: unknown } | { kind: 'refused'; refusal: Refusal };
export type EffectFinishAnswer = { kind: 'done'; result: unknown } | { kind: 'refused'; refusal: Refusal };

/** The one text of each refusal of a fenced write. */
export function ownedRefusal(o: Exclude<OwnedOutcome, { ok: true }>): Refusal {
  if (o.reason === 'not_found') return notFound(o.id);
  if (o.cause === 'deadline_exceeded') {
    // The attempt ran out of time: past its deadline the owner may still
    // complete or fail it, but not keep it (heartbeat, extend, checkpoint, release).
    const why = o.status === 'running' ? 'passed its deadline: it can still be completed or failed, not kept' : `is ${o.status}: the reaper took it back at its deadline`;
    return { code: 'lease_lost', message: `job ${o.id} ${why}, and the write changed nothing`, field: 'lockToken', details: { status: o.status, cause: 'deadline_exceeded' } };
  }
  return leaseLost(o.id, o.status);
}

const notFound = (id: number): Refusal => ({ code: 'not_found', message: `no job has id ${id}`, field: 'id' });

function leaseLost(id: number, status: JobStatus): Refusal {
  const why = status === 'running' ? 'is running under a newer claim' : `is ${status}`;
  return { code: 'lease_lost', message: `job ${id} ${why}: this worker no longer holds it, and the write changed nothing`, field: 'lockToken', details: { status } };
}

function answer<T extends { id: number }>(o: OwnedOutcome<T>): JobAnswer<T> {
  return o.ok ? o : { id: o.id, ok: false, refusal: ownedRefusal(o) };
}

/** A beat as the store takes it: the counters grouped. */
export function storedLiveness(b: Liveness): StoredLiveness {
  const { eventLoopBlocks, longestEventLoopBlockMs, heartbeatFailures, leasesLost: lost, ...rest } = b;
  return { ...rest, counters: { eventLoopBlocks, longestEventLoopBlockMs, heartbeatFailures, leasesLost: lost } };
}

function effectRefusal(id: number, key: string, o: Exclude<EffectStartOutcome | EffectFinishOutcome, { kind: 'run' | 'done' }>): Refusal {
  if (o.kind === 'not_found') return notFound(id);
  if (o.kind === 'lease_lost') return leaseLost(id, o.status as JobStatus);
  return { code: 'not_found', message: `this claim of job ${id} started no effect named ${JSON.stringify(key)}`, field: 'key' };
}

export interface WorkerProtocolDeps {
  store: JobStore;
  /** The queue defaults (lease, attempts, backoff) and limits. */
  config: Config;
  clock: Clock;
  /**
   * Called after a write committed with the ids of the jobs it changed
   * (claimed, progressed, checkpointed, completed, failed, released):
   * clients waiting on those jobs look again at once (src/engine/job-watchers.ts).
   */
  changed?: (ids: readonly number[]) => void;
  /** After a release committed: `n` jobs of `queue` are claimable again now (claims waiting on it look). */
  becameClaimable?: (queue: string, n: number) => void;
  /** After a failed attempt committed that will be retried: the job of `queue` is claimable from `availableAt` (epoch ms). */
  comesDue?: (queue: string, availableAt: number) => void;
  /**
   * After a completion or a failure for good committed that finished a job
   * others wait for (docs/flows.md): the triggers may have released some of
   * them, on queues the write does not name (claims waiting for work look).
   * Not called for a write whose jobs nothing waits for. A failure's call
   * waits for what it answers: the first steps of the cascade it made owed.
   */
  dependentsMayRun?: () => void | Promise<void>;
}

export type WorkerProtocol = ReturnType<typeof createWorkerProtocol>;

export function createWorkerProtocol(deps: WorkerProtocolDeps) {
  const { store, config, clock } = deps;
  /** Tells the watchers which jobs a write changed; answers what it is given. */
  const told = <T extends { ok: boolean; id: number }>(answers: T[], also: readonly { id: string | number }[] = []): T[] => {
    const ids = [...answers.filter((a) => a.ok).map((a) => a.id), ...also.map((j) => Number(j.id))];
    if (ids.length > 0) deps.changed?.(ids);
    return answers;
  };
  const completions = (p: { workerId: string; results: (Lease & { result?: unknown })[] }) => ({
    workerId: p.workerId,
    results: p.results.map((x) => ({ id: x.id, lockToken: x.lockToken, data: jsonOrNull(x.result) })),
    now: clock.now(),
  });
  const releases = (p: { workerId: string; leases: Lease[]; reason?: string | undefined }) => ({
    workerId: p.workerId,
    leases: p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken })),
    reason: p.reason ?? 'released_by_worker',
    now: clock.now(),
  });

  /** Finished jobs that others wait for may have released them: the claims waiting for work look now. */
  const finished = <T extends { ok: boolean; dependents?: true }>(outcomes: T[]): T[] => {
    if (outcomes.some((o) => o.dependents)) deps.dependentsMayRun?.();
    return outcomes;
  };

  /** Released jobs are pending again at once: the claims waiting on their queues look now. */
  const released = <T extends JobAnswer<{ queue_name: string; status: string }>>(answers: T[]): T[] => {
    const byQueue = new Map<string, number>();
    for (const a of answers) if (a.ok && a.job.status === 'pending') byQueue.set(a.job.queue_name, (byQueue.get(a.job.queue_name) ?? 0) + 1);
    for (const [queue, n] of byQueue) deps.becameClaimable?.(queue, n);
    return answers;
  };

  const claimParams = (p: ClaimCallParams): ClaimParams => ({ ...p, maxBytes: config.maxClaimBytes, now: clock.now(), defaults: config });
  const claimAnswer = ({ claimed, rateWait }: ClaimedWithRateWait): ClaimResult => {
    if (claimed.length > 0) deps.changed?.(claimed.map((j) => j.id));
    return { jobs: claimed.map(toClaimedJob), ...(rateWait ? { rateWait } : {}) };
  };

  return {
    /**
     * pending -> running: up to `limit` jobs of the queue, in claim order.
     * `rateWait`: the queue's rate limit is holding claims back (read in the
     * claim's own round trip; advisory, the claim statement enforces).
     */
    async claim(p: ClaimCallParams): Promise<ClaimResult> {
      return claimAnswer(await store.jobsClaimPendingWithRateWait(claimParams(p)));
    },

    /** The store's params of a claim: now, the server's limits and defaults (also for a claim an enqueue runs, src/engine/claim-handoff.ts). */
    claimParams,
    /** A claim's store answer as a claim answers it; the watchers of its jobs are told. */
    claimAnswer,

    /** How many jobs a claim on `queue` could take now (at most `cap`), read without claiming: what waiting claims look at. */
    claimableCount(p: { queue: string; cap: number }): Promise<number> {
      return store.queueClaimableCount({ ...p, now: clock.now() });
    },

    /** Renews many leases (`leaseMs`: extends them); with `beat`, records the worker's liveness in the same transaction. */
    async heartbeat(p: { workerId: string; leases: (Lease & { progress?: unknown })[]; leaseMs?: number | undefined; beat?: Liveness | undefined }): Promise<JobAnswer[]> {
      const outcomes = await store.jobsHeartbeatIfOwned({
        workerId: p.workerId,
        leases: p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken, data: jsonOrNull(l.progress) })),
        leaseMs: p.leaseMs,
        beat: p.beat && storedLiveness(p.beat),
        now: clock.now(),
      });
      const answers = outcomes.map(answer);
      // Only a lease that carried progress changed what a watcher sees.
      const progressed = new Set(p.leases.filter((l) => l.progress !== undefined).map((l) => l.id));
      told(answers.filter((a) => progressed.has(a.id)));
      return answers;
    },

    /** Saves state for the next attempt (and renews the lease). */
    async checkpoint(p: Lease & { workerId: string; checkpoint: unknown }): Promise<JobAnswer> {
      const [o] = await store.jobCheckpointIfOwned({ workerId: p.workerId, id: p.id, lockToken: p.lockToken, checkpoint: JSON.stringify(p.checkpoint ?? null), now: clock.now() });
      return told([answer(o!)])[0]!;
    },

    /** running -> completed, many in one statement, each fenced by its own token. */
    async complete(p: { workerId: string; results: (Lease & { result?: unknown })[] }): Promise<JobAnswer[]> {
      return told(finished(await store.jobsCompleteIfOwned(completions(p))).map(answer));
    },

    /** complete() for one job, answering the whole row. */
    async completeOne(p: Lease & { workerId: string; result?: unknown }): Promise<JobAnswer<JobRecord>> {
      const [o] = finished(await store.jobsCompleteIfOwned({ ...completions({ workerId: p.workerId, results: [p] }), full: true }));
      return told([answer(o!)])[0]!;
    },

    /** Completions, then a claim of the freed slots, in one transaction. */
    async completeThenClaim(p: {
      workerId: string;
      instanceId?: string | undefined;
      results: (Lease & { result?: unknown })[];
      claim: ClaimRequest;
    }): Promise<{ answers: JobAnswer[]; claimed: ClaimedJobWire[] }> {
      const claim = { ...p.claim, maxBytes: config.maxClaimBytes };
      const { outcomes, claimed } = await store.jobsCompleteThenClaim({ ...completions(p), claim, instanceId: p.instanceId, defaults: config });
      const answers = told(finished(outcomes).map(answer), claimed);
      return { answers, claimed: claimed.map(toClaimedJob) };
    },

    /** running -> pending (retry after backoff) or failed; held for a person instead when it ends a lost attempt of a job whose onLost is 'hold' (finish.ts). */
    async fail(p: Lease & { workerId: string; error: string; retryable: boolean; retryAfterMs?: number | undefined; abortedBy?: LostAttemptAbort | undefined }): Promise<JobAnswer<JobRecord>> {
      const [o] = await store.jobFailIfOwned({
        workerId: p.workerId,
        id: p.id,
        lockToken: p.lockToken,
        error: p.error,
        retryable: p.retryable,
        retryAfterMs: p.retryAfterMs,
        abortedBy: p.abortedBy,
        now: clock.now(),
        defaults: config,
      });
      const a = told([answer(o!)])[0]!;
      // To be retried: claimable again once its backoff is over (a held job never is).
      if (a.ok && a.job.status === 'pending' && a.job.held_at === null) deps.comesDue?.(a.job.queue_name, a.job.available_at);
      // Failed for good: its dependents by their policy, the cascade's first steps before the answer (src/engine/dependency-cascades.ts).
      if (o!.ok && o!.dependents && o!.job.status === 'failed') await deps.dependentsMayRun?.();
      return a;
    },

    /**
     * running -> pending after delayMs, the attempt given back (no error, no
     * attempt spent), snoozes + 1; refused with `conflict` (cause
     * snooze_limit) at the queue's maxSnoozes, the job still the worker's.
     */
    async snooze(p: Lease & { workerId: string; delayMs: number }): Promise<JobAnswer<JobRecord>> {
      const o = await store.jobSnoozeIfOwned({ ...p, defaultMaxSnoozes: DEFAULT_MAX_SNOOZES, now: clock.now() });
      if (!o.ok && o.reason === 'snooze_limit') {
        const refusal: Refusal = { code: 'conflict', message: snoozeLimitText(p.id, o.snoozes, o.maxSnoozes), field: 'delayMs', details: { status: 'running', cause: 'snooze_limit', snoozes: o.snoozes, maxSnoozes: o.maxSnoozes } };
        return { id: p.id, ok: false, refusal };
      }
      const a = told([answer(o as OwnedOutcome<JobRecord>)])[0]!;
      if (a.ok && a.job.status === 'pending') deps.comesDue?.(a.job.queue_name, a.job.available_at);
      return a;
    },

    /** Gives many leases back (shutdown): ready again at once, the attempt not counted. */
    async release(p: { workerId: string; leases: Lease[]; reason?: string | undefined }): Promise<JobAnswer[]> {
      return released(told((await store.jobsReleaseIfOwned(releases(p))).map(answer)));
    },

    /** release() for one job, answering the whole row. */
    async releaseOne(p: Lease & { workerId: string; reason?: string | undefined }): Promise<JobAnswer<JobRecord>> {
      const [o] = await store.jobsReleaseIfOwned({ ...releases({ workerId: p.workerId, leases: [p], reason: p.reason }), full: true });
      return released(told([answer(o!)]))[0]!;
    },

    /** The worker's liveness beat on its own. */
    async beat(p: Liveness & { workerId: string }): Promise<void> {
      const { workerId, ...beat } = p;
      await store.workerBeat({ ...storedLiveness(beat), id: workerId, now: clock.now() });
    },

    /** once(): start an effect under the lease, or learn it already ran. */
    async effectStart(p: Lease & { workerId: string; key: string }): Promise<EffectStartAnswer> {
      const o = await store.effectStartIfOwned({ jobId: p.id, key: p.key, lockToken: p.lockToken, workerId: p.workerId, now: clock.now() });
      if (o.kind === 'done') return { kind: 'done', result: parsed(o.result) };
      if (o.kind === 'run') return { kind: 'run' };
      return { kind: 'refused', refusal: effectRefusal(p.id, p.key, o) };
    },

    /** step(): the job's steps as this claim finds them; each uncertain one is recorded as an event. */
    async steps(p: Lease & { workerId: string }): Promise<{ ok: true; steps: StepWire[] } | { ok: false; refusal: Refusal }> {
      const o = await store.stepsListIfOwned({ jobId: p.id, lockToken: p.lockToken, workerId: p.workerId, now: clock.now() });
      if (o.kind === 'not_found') return { ok: false, refusal: notFound(p.id) };
      if (o.kind === 'lease_lost') return { ok: false, refusal: leaseLost(p.id, o.status as JobStatus) };
      const steps = o.steps.map((s): StepWire => ({ name: s.name, state: s.state === 'done' ? 'done' : s.uncertain ? 'uncertain' : 'running', attempt: s.attempt, result: parsed(s.result) }));
      return { ok: true, steps };
    },

    /** reportDuplicate(): the handler found its work already done downstream; recorded (event and counter) under the lease. */
    async reportDuplicate(p: Lease & { workerId: string; key: string }): Promise<{ ok: true } | { ok: false; refusal: Refusal }> {
      const o = await store.duplicateReportIfOwned({ jobId: p.id, key: p.key, lockToken: p.lockToken, workerId: p.workerId, now: clock.now() });
      return o.ok ? { ok: true } : { ok: false, refusal: ownedRefusal(o) };
    },

    /** once(): record that the effect ran; answers the result on record (the first one wins). `checkpoint` (step()): saved with it. */
    async effectFinish(p: Lease & { workerId: string; key: string; result: unknown; checkpoint?: unknown }): Promise<EffectFinishAnswer> {
      const checkpoint = p.checkpoint === undefined ? undefined : JSON.stringify(p.checkpoint);
      const o = await store.effectFinishIfOwned({ jobId: p.id, key: p.key, lockToken: p.lockToken, workerId: p.workerId, result: JSON.stringify(p.result ?? null), checkpoint, now: clock.now() });
      if (o.kind === 'done') return { kind: 'done', result: parsed(o.result) };
      return { kind: 'refused', refusal: effectRefusal(p.id, p.key, o) };
    },
  };
}
