/**
 * The completer: sends what a handler's run came to, and says when it could not.
 *
 * - Completions go in one call at a time, each carrying every completion
 *   that piled up meanwhile, and claiming jobs for the room they free (one
 *   transaction, one round trip). A call whose answer was lost is sent again
 *   as it was: completions already stored are answered as stored (not a
 *   stale write), and the claim, by its claim id, with the jobs it took.
 * - A failure goes alone, classified by what the handler threw
 *   (NonRetryableError, RetryAfter, anything else), and saying why the
 *   handler was stopped when its attempt lost its lease or ran out of time.
 * - `abandoned`: a result the server refused (the lease is gone) or that
 *   could not be delivered before the lease ran out, and a run the worker
 *   knows is not its to report (lease lost, released at shutdown).
 * - Releases: leases given back at shutdown, in one call.
 * - Each call gives up when the leases it carries run out by the worker's
 *   clock (call-budget.ts); its retries stop there too.
 */
import { JobSnooze, NonRetryableError, RetryAfter } from './errors.ts';
import { LAST_TRY_MS, withinLeases } from './call-budget.ts';
import { leaseGone, type Held, type Running } from './held.ts';
import { persist } from './persist.ts';
import { after } from './timers.ts';
import type { ClaimedJob, LeaseRef } from './transport.ts';
import { storableText } from '../core/text.ts';
import { LOST_ATTEMPT_ABORTS, type LostAttemptAbort } from '../core/wire.ts';

export type Outcome = { kind: 'complete'; result: unknown } | { kind: 'fail'; error: string; retryable: boolean; retryAfterMs?: number | undefined; raw: unknown };

/** How long shutdown keeps trying to give leases back before leaving them to expire. */
export const RELEASE_RETRY_MS = 5_000;

/** What a thrown value asks for. */
export function classify(err: unknown): Extract<Outcome, { kind: 'fail' }> {
  // The server keeps at most 16,000 characters of an error, and refuses a
  // lone surrogate (a cut emoji) or NUL: an error message is anyone's text.
  const message = storableText(err instanceof Error ? `${err.name}: ${err.message}` : String(err), 16_000);
  if (err instanceof NonRetryableError) return { kind: 'fail', error: message, retryable: false, raw: err };
  // A snooze past its limit is retried after the same delay (fail() tries the snooze first).
  if (err instanceof JobSnooze) return { kind: 'fail', error: message, retryable: true, retryAfterMs: Math.max(0, Math.round(err.delayMs)), raw: err };
  if (err instanceof RetryAfter) return { kind: 'fail', error: message, retryable: true, retryAfterMs: Math.max(0, Math.round(err.delayMs)), raw: err };
  return { kind: 'fail', error: message, retryable: true, raw: err };
}

/** Why the job's handler was stopped, when that made its attempt a lost one (not a shutdown). */
function lostAbort(r: Running): LostAttemptAbort | undefined {
  const reason = r.abortedBy?.reason;
  return reason !== undefined && (LOST_ATTEMPT_ABORTS as readonly string[]).includes(reason) ? (reason as LostAttemptAbort) : undefined;
}

/** Where a completion's claim for the slots it frees comes from (the claim loop's slots and queue rotation). */
export interface RidingClaim {
  /** The claim to send along with completions, if there is room; `settle()` once the call is over. */
  reserve(): { claim: { queue: string; limit: number; leaseMs?: number | undefined; claimId: string } | undefined; settle(): void };
  /** Runs jobs the completion claimed (local time `sentAt`: when the call was sent). */
  start(job: ClaimedJob, sentAt: number): void;
}

export type Completer = ReturnType<typeof createCompleter>;

export function createCompleter(w: Held, riding: RidingClaim) {
  const { transport, workerId, instanceId, timers, stats, emit } = w;
  let pending: { running: Running; result: unknown }[] = [];
  /** The completion call that will carry what finishes now, and the one before it. */
  let nextFlush: Promise<void> | undefined;
  let lastFlush: Promise<void> = Promise.resolve();
  /** Jobs a claim brought back after close() began, given back without running. */
  const releasedUnstarted: string[] = [];

  /** Reports how the handler's run ended; resolves when the server has answered (or the lease has run out). */
  async function finish(r: Running, outcome: Outcome): Promise<void> {
    const aborted = r.abortedBy?.reason;
    if (aborted === 'shutdown' && w.state() === 'stopped') {
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: 'released at shutdown' });
      return;
    }
    if (aborted === 'lease_lost') {
      // The server has already said the lease is someone else's: a write now
      // could only be refused (and counted again as a stale write).
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: 'lease lost while running: result not sent' });
      return;
    }
    r.finishing = true;
    if (outcome.kind === 'complete') await complete(r, outcome.result);
    else await fail(r, outcome);
  }

  function complete(r: Running, result: unknown): Promise<void> {
    pending.push({ running: r, result });
    // One completion call at a time: what finishes while one is on its way
    // goes with the next, so a round trip carries every job that finished
    // during the last (and claims as many), instead of a call per job.
    if (!nextFlush) {
      nextFlush = lastFlush.then(() => {
        nextFlush = undefined;
        return flushCompletions();
      });
      // A flush that threw must not stop every completion after it.
      lastFlush = nextFlush.catch(() => {});
    }
    return nextFlush;
  }

  /**
   * Sends every completion that piled up since the last flush in one call, and
   * in the same call claims jobs for the slots those completions free: one
   * transaction and one round trip per cycle instead of two.
   */
  async function flushCompletions() {
    const batch = pending;
    pending = [];
    const { claim, settle } = riding.reserve();
    // Every try is the same request: if an answer was lost in transit, the
    // server answers the completions it already stored as stored, and the
    // claim (same claim id) with the jobs it took the first time, never more.
    let sentAt = timers.now();
    const results = batch.map(({ running, result }) => ({ id: running.job.id, lockToken: running.job.lockToken, result: result ?? null }));
    const reply = await persist(w, leaseGone(w, ...batch.map((b) => b.running)), 'complete', () => {
      // The jobs it claims are leased from the try that brought them.
      sentAt = timers.now();
      // Each try waits as long as the leases (renewed meanwhile, perhaps) last now.
      const until = batch.reduce((end, b) => Math.max(end, b.running.leaseValidUntil), -Infinity);
      return withinLeases(w, until, 'complete', (c) => transport.complete({ workerId, instanceId, results, claim }, c), LAST_TRY_MS);
    })
      .catch((err) => {
        emit('error', { error: err, during: 'complete' });
        return undefined;
      })
      .finally(settle);
    // No answer came back: the server may hold jobs for the claim; the next beat gives them back.
    if (!reply && claim) w.lostClaims.add(claim.claimId);
    const answers = reply?.answers;
    const claimed = reply?.claimed ?? [];
    if (w.state() !== 'running') await releaseUnstarted(claimed);
    else for (const job of claimed) riding.start(job, sentAt);
    batch.forEach(({ running, result }, i) => {
      const answer = answers?.[i];
      if (answer?.ok) {
        stats.completed++;
        emit('completed', { job: running.job, result });
      } else {
        stats.abandoned++;
        emit('abandoned', { job: running.job, reason: answer ? `completion refused: ${answer.message}` : 'completion could not be delivered' });
      }
    });
  }

  async function fail(r: Running, o: Extract<Outcome, { kind: 'fail' }>) {
    // Stopped because the attempt lost its lease or ran out of time: the
    // server is told, so it treats the attempt as lost (a job whose onLost is
    // 'hold' waits for a person) rather than as an ordinary error, and a
    // snooze (which would give the attempt back) is not asked for.
    const abortedBy = lostAbort(r);
    if (!abortedBy && o.raw instanceof JobSnooze && transport.snooze && (await snooze(r, o.raw))) return;
    const answer = await persist(w, leaseGone(w, r), 'fail', () =>
      withinLeases(w, r.leaseValidUntil, 'fail', (c) =>
        transport.fail({ workerId, lease: { id: r.job.id, lockToken: r.job.lockToken }, error: o.error, retryable: o.retryable, retryAfterMs: o.retryAfterMs, abortedBy }, c),
        LAST_TRY_MS,
      ),
    ).catch((err) => {
      emit('error', { error: err, during: 'fail' });
      return undefined;
    });
    if (answer?.ok) {
      stats.failed++;
      emit('failed', { job: r.job, error: o.raw, retryable: o.retryable });
    } else {
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: answer ? `failure refused: ${answer.message}` : 'failure could not be delivered' });
    }
  }

  /**
   * A snooze: true when the server took it, or the lease is gone (nothing
   * more to send); false when it refused it at the queue's maxSnoozes, and
   * the caller fails the attempt instead (retried after the same delay).
   */
  async function snooze(r: Running, s: JobSnooze): Promise<boolean> {
    const delayMs = Math.max(0, Math.round(s.delayMs));
    const answer = await persist(w, leaseGone(w, r), 'snooze', () =>
      withinLeases(w, r.leaseValidUntil, 'snooze', (c) => transport.snooze!({ workerId, lease: { id: r.job.id, lockToken: r.job.lockToken }, delayMs }, c), LAST_TRY_MS),
    ).catch((err) => {
      emit('error', { error: err, during: 'snooze' });
      return undefined;
    });
    if (answer?.ok) {
      stats.snoozed++;
      emit('snoozed', { job: r.job, delayMs });
      return true;
    }
    if (answer && !answer.ok && answer.code === 'snooze_limit') return false;
    stats.abandoned++;
    emit('abandoned', { job: r.job, reason: answer ? `snooze refused: ${answer.message}` : 'snooze could not be delivered' });
    return true;
  }

  /**
   * Gives leases back (shutdown) in one call, retried for a while; answers the
   * ids the server took back. Each try gives up when the last of the leases
   * runs out (a job a claim just brought, not kept yet: its lease from now).
   */
  async function release(leases: (LeaseRef & { leaseMs?: number })[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const leaseEnd = (l: (typeof leases)[number]) => {
      const kept = w.active.get(l.id);
      return kept?.job.lockToken === l.lockToken ? kept.leaseValidUntil : timers.now() + (l.leaseMs ?? 0);
    };
    const until = leases.reduce((end, l) => Math.max(end, leaseEnd(l)), -Infinity);
    const refs = leases.map((l) => ({ id: l.id, lockToken: l.lockToken }));
    const answers = await persist(w, after(timers, RELEASE_RETRY_MS), 'release', () =>
      withinLeases(w, until, 'release', (c) => transport.release({ workerId, leases: refs, reason: 'worker_shutdown' }, c), LAST_TRY_MS),
    ).catch(() => undefined);
    return (answers ?? []).filter((a) => a.ok).map((a) => a.id);
  }

  /** Jobs a claim brought back after close() began: give them straight back. */
  async function releaseUnstarted(jobs: ClaimedJob[]) {
    releasedUnstarted.push(...(await release(jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, leaseMs: j.leaseMs })))));
  }

  return { finish, release, releaseUnstarted, releasedUnstarted };
}
