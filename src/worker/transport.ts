/**
 * What a worker needs from leasehold, whichever way it talks to it: over HTTP
 * (any runtime with fetch) or in-process (a database handle). Both transports
 * pass the same conformance tests, so a worker behaves the same on either.
 */
import type { ClaimedJobWire, DependencyLinkWire, LostAttemptAbort, StepWire, WorkerLivenessWire } from '../core/wire.ts';

/** A claimed job: what the worker needs to run, renew and finish it (the claim's wire shape). */
export type ClaimedJob = ClaimedJobWire;

/**
 * The answer to one write on one job: accepted, or refused because the claim is gone. `cause:
 * 'deadline_exceeded'`: the attempt passed its time limit (the handler is aborted with that reason).
 */
export type LeaseAnswer =
  | { id: string; ok: true }
  | { id: string; ok: false; code: 'lease_lost' | 'not_found' | 'snooze_limit'; message: string; cause?: 'deadline_exceeded' | undefined };

export type EffectStart = { kind: 'run' } | { kind: 'done'; result: unknown } | { kind: 'lease_lost'; message: string };

/** A job's steps as a claim finds them, or the lease is gone. */
export type StepsAnswer = { kind: 'ok'; steps: StepWire[] } | { kind: 'lease_lost'; message: string };

export type EffectFinish = { kind: 'done'; result: unknown } | { kind: 'lease_lost'; message: string };

export interface LeaseRef {
  id: string;
  lockToken: string;
}

/** What a worker says about itself in its liveness beat. */
export interface WorkerLiveness extends WorkerLivenessWire {
  queues: string[];
  runningCount: number;
}

/**
 * A claim's answer: the jobs claimed (empty: nothing ready), and
 * `retryAfterMs` when claiming again sooner would be refused or held back:
 * the queue's rate limit held claims back (its next window opens then), or
 * the server held as many waiting claims as it allows (its Retry-After).
 */
export interface ClaimAnswer {
  jobs: ClaimedJob[];
  retryAfterMs?: number | undefined;
}

/**
 * Per call: `signal` aborts when the answer is no longer worth waiting for
 * (the leases the call carries have run out by the worker's clock, see
 * call-budget.ts). A transport should stop waiting then; the worker gives the
 * call up at that moment either way.
 */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface Transport {
  /**
   * The longest one request may take (the HTTP transport's requestTimeoutMs),
   * when the transport has such a limit: the worker checks it against the
   * leases it is given (lease-rules.ts).
   */
  readonly requestTimeoutMs?: number | undefined;
  /** `instanceId`: this process of the worker (see createWorker), stored with the claim. */
  /**
   * `waitMs`: when nothing is ready, the server waits up to that long for work
   * before answering an empty list (an idle worker's long poll); `signal` ends
   * that wait early (the worker is closing) with an empty list or an abort.
   * `claimId`: this claim's own id (new per claim); sent again with the same
   * id, the claim answers the jobs it already took instead of claiming more.
   */
  claim(p: {
    queue: string;
    workerId: string;
    instanceId?: string | undefined;
    limit: number;
    leaseMs?: number | undefined;
    claimId?: string | undefined;
    waitMs?: number | undefined;
    signal?: AbortSignal | undefined;
  }): Promise<ClaimAnswer>;
  /**
   * Renews many leases in one call; `leaseMs` also changes their length
   * (extend). With `beat`, the worker's liveness beat goes in the same call
   * (and the same transaction): `leases` may then be empty. The SDK beats
   * only this way; a transport must record `beat` when it is given.
   */
  heartbeat(p: { workerId: string; leases: (LeaseRef & { progress?: unknown })[]; leaseMs?: number | undefined; beat?: WorkerLiveness | undefined }, call?: CallOptions): Promise<LeaseAnswer[]>;
  checkpoint(p: { workerId: string; lease: LeaseRef; checkpoint: unknown }, call?: CallOptions): Promise<LeaseAnswer>;
  /**
   * Completes many jobs in one call, each fenced by its own token; with
   * `claim`, also claims the next jobs in the same transaction. Safe to send
   * again: a completion already stored under its token is answered ok, and
   * the claim with the same `claimId` answers the jobs it took.
   */
  complete(p: {
    workerId: string;
    instanceId?: string | undefined;
    results: (LeaseRef & { result?: unknown })[];
    claim?: { queue: string; limit: number; leaseMs?: number | undefined; claimId?: string | undefined } | undefined;
  }, call?: CallOptions): Promise<{ answers: LeaseAnswer[]; claimed: ClaimedJob[] }>;
  /**
   * Ends the attempt with an error. `abortedBy`: the worker stopped the
   * handler because the attempt lost its lease or ran out of time, so the
   * server treats the attempt as lost (a job whose onLost is 'hold' is held
   * for a person instead of retried).
   */
  fail(p: { workerId: string; lease: LeaseRef; error: string; retryable: boolean; retryAfterMs?: number | undefined; abortedBy?: LostAttemptAbort | undefined }, call?: CallOptions): Promise<LeaseAnswer>;
  /**
   * A snooze (JobSnooze): pending again after delayMs, the attempt given
   * back. `snooze_limit`: refused at the queue's maxSnoozes, the job still
   * held. Optional: without it a snooze is a retry that spends an attempt.
   */
  snooze?(p: { workerId: string; lease: LeaseRef; delayMs: number }, call?: CallOptions): Promise<LeaseAnswer>;
  /** Gives many leases back in one call (shutdown), each fenced by its own token. */
  release(p: { workerId: string; leases: LeaseRef[]; reason: string }, call?: CallOptions): Promise<LeaseAnswer[]>;
  /** once(): start an effect under the lease, or learn it already ran. */
  effectStart(p: { workerId: string; lease: LeaseRef; key: string }, call?: CallOptions): Promise<EffectStart>;
  /** once(): record that the effect ran, under the lease; answers the recorded result (the first one recorded wins). */
  effectFinish(p: { workerId: string; lease: LeaseRef; key: string; result: unknown; checkpoint?: unknown }, call?: CallOptions): Promise<EffectFinish>;
  /** step(): the job's steps as this claim finds them (the server records each uncertain one). */
  steps(p: { workerId: string; lease: LeaseRef }, call?: CallOptions): Promise<StepsAnswer>;
  /** reportDuplicate(): the handler found its work already done downstream; recorded and counted under the lease. */
  reportDuplicate(p: { workerId: string; lease: LeaseRef; key: string }, call?: CallOptions): Promise<LeaseAnswer>;
  /**
   * ctx.dependencies(): what the job waits for (docs/flows.md), each
   * completed one with its result, as GET /jobs/:id/dependencies answers
   * them. A read, not fenced by the lease. Optional: a transport without it
   * makes ctx.dependencies() throw.
   */
  dependencies?(p: { id: string }, call?: CallOptions): Promise<DependencyLinkWire[]>;
}

/** A failure to reach leasehold (network, 5xx): retried with backoff, never a lease verdict. */
export class TransportError extends Error {
  override readonly name: string = 'TransportError';
}

/**
 * leasehold refused the worker's token (401 or 403). Retrying cannot help
 * until someone fixes the token, so the worker stops claiming and closes
 * (calls already in flight for running jobs still retry, as for any
 * TransportError, until their leases end).
 */
export class TokenRefusedError extends TransportError {
  override readonly name: string = 'TokenRefusedError';
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
  }
}
