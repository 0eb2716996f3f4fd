/**
 * Claims that wait on the server for work (POST /queues/:queue/claim with
 * waitMs): an idle worker's request parks here until work is ready, instead
 * of the worker polling with backoff (which put hundreds of milliseconds
 * between an enqueue and its handler).
 *
 * An enqueue through this engine runs the parked claims it has work for
 * in its own transaction (take): their statements follow its jobs' insert,
 * and they are answered from that commit, one transaction per job instead
 * of an enqueue's and then a woken claim's (src/engine/claim-handoff.ts).
 * Two other things wake a parked claim, and both are only hints: the claim
 * statement still decides.
 * - A transition through this engine that makes jobs claimable (notify),
 *   right after its commit: an enqueue, a release, an operator's retry or
 *   requeue, a schedule's occurrence or a reaper requeue of the maintenance
 *   pass this process runs, a delayed job or retry coming due whose time the
 *   engine knows (src/engine/due-timers.ts). A transition that may have made
 *   jobs claimable on queues it cannot name (a completion that released jobs
 *   waiting for it, docs/flows.md; a bulk action over every queue) runs the
 *   shared look at once instead (lookNow).
 * - One shared look per queue every CLAIM_REPOLL_MS, for work this process
 *   did not write (another server on the same database, the CLI). It is a read ("how many jobs could a claim take
 *   now?", with the claim's own conditions), made once per queue however
 *   many claims wait on it, and it wakes only as many of them as there are
 *   jobs. A parked claim itself runs no statement: waiting costs a read per
 *   queue per interval, not a claim (a write) per waiting request.
 *
 * Waiting claims hold a connection and a request each, so their number is
 * bounded per server and per token (LEASEHOLD_MAX_WAITING_CLAIMS,
 * LEASEHOLD_MAX_WAITING_CLAIMS_PER_TOKEN): one past either bound is answered
 * 429 with Retry-After instead of waiting.
 *
 * One set of waiters per engine (src/engine/engine.ts): the HTTP routes and
 * the in-process transport built on one engine wake each other.
 */
import { LeaseholdError } from '../core/errors.ts';

/** How often the jobs of a queue with waiting claims are looked at without a wake-up: the cross-server and delayed-job fallback. */
export const CLAIM_REPOLL_MS = 250;

/** What a claim told to come back later waits: long enough to shed load, short next to a lease. */
export const WAITING_CLAIMS_RETRY_AFTER_SECONDS = 1;

/** How many jobs a claim on the queue could take now (counting at most `cap`). */
export type ReadyCount = (cap: number) => Promise<number>;

interface Waiter<O, R> {
  /** Ends the wait without an answer: the claim runs again. */
  wake: () => void;
  /** Leaves the waiters without answering yet (take); false when the wait had already ended. */
  leave: () => boolean;
  /** Answers a wait that has left (take). */
  answer: (handed?: R) => void;
  /** Whose wait this is (the token's name), for the per-token bound; undefined: not bounded (in-process callers). */
  owner: string | undefined;
  /** The claim an enqueue may run for this wait (take); absent: only woken. */
  offer: O | undefined;
}

/** A parked claim an enqueue took: what to claim, and how to answer it (once; without an answer it claims again). */
export interface TakenClaim<O, R> {
  offer: O;
  answer(handed?: R): void;
}

interface QueueWaiters<O, R> {
  /** In arrival order: a look that finds n jobs wakes the n that waited longest. */
  waiters: Set<Waiter<O, R>>;
  /** The look of the claim that parked first: the queue's own conditions, on its database clock. */
  ready: ReadyCount;
}

/** Bounds on waiting claims; absent: unbounded (in-process use). */
export interface WaitBounds {
  maxWaiting: number;
  maxWaitingPerOwner: number;
}

/** `O`: what a parked claim offers an enqueue (its claim's request); `R`: the answer an enqueue hands it. */
export class ClaimWaiters<O = unknown, R = unknown> {
  private readonly byQueue = new Map<string, QueueWaiters<O, R>>();
  /** Bumped on every notify: a claim that saw an older value knows it may have missed work. */
  private readonly generations = new Map<string, number>();
  /** Bumped on every lookNow, which names no queue: counted in every queue's generation. */
  private everywhere = 0;
  private readonly perOwner = new Map<string, number>();
  private count = 0;
  private closed = false;
  private ticker: ReturnType<typeof setTimeout> | undefined;
  /** A look is reading now (lookNow does not start a second). */
  private looking = false;
  /** lookNow was called while a look was reading (it may have read before the commit): look again when it ends. */
  private lookAgain = false;

  /** The queue's wake-up count; read it before claiming, pass it to wait(). */
  generation(queue: string): number {
    return (this.generations.get(queue) ?? 0) + this.everywhere;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Throws 429 when one more claim waiting for `owner` would pass a bound.
   * Checked before parking, never for a claim that found work.
   */
  admit(owner: string | undefined, bounds: WaitBounds | undefined): void {
    if (!bounds || owner === undefined) return;
    const mine = this.perOwner.get(owner) ?? 0;
    const full =
      this.count >= bounds.maxWaiting
        ? `this server already holds ${this.count} waiting claims (LEASEHOLD_MAX_WAITING_CLAIMS is ${bounds.maxWaiting})`
        : mine >= bounds.maxWaitingPerOwner
          ? `this token already holds ${mine} waiting claims (LEASEHOLD_MAX_WAITING_CLAIMS_PER_TOKEN is ${bounds.maxWaitingPerOwner})`
          : undefined;
    if (full) {
      throw new LeaseholdError('too_many_requests', `${full}: nothing was claimed; claim again after Retry-After, or with a shorter waitMs`, 'waitMs', {
        retryAfterSeconds: WAITING_CLAIMS_RETRY_AFTER_SECONDS,
      });
    }
  }

  /**
   * Resolves when the queue is notified after `seen` (at once if it already
   * was), when the shared look finds work for this claim, after `ms`, when
   * `signal` aborts (the client went away) or when the waiters are closed
   * (shutdown): then with nothing, and the caller claims again, deciding
   * from its own deadline whether to keep waiting. Resolves with an answer
   * when an enqueue took this wait's `offer` and ran its claim (take).
   * Never rejects.
   */
  wait(p: { queue: string; seen: number; ms: number; ready: ReadyCount; owner?: string | undefined; signal?: AbortSignal | undefined; offer?: O | undefined }): Promise<R | undefined> {
    const { queue, signal } = p;
    if (this.closed || signal?.aborted || p.ms <= 0 || this.generation(queue) !== p.seen) return Promise.resolve(undefined);
    return new Promise<R | undefined>((resolve) => {
      let entry = this.byQueue.get(queue);
      if (!entry) this.byQueue.set(queue, (entry = { waiters: new Set(), ready: p.ready }));
      const { waiters } = entry;
      const leave = (): boolean => {
        if (!waiters.delete(waiter)) return false;
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.count--;
        if (waiter.owner !== undefined) {
          const left = (this.perOwner.get(waiter.owner) ?? 1) - 1;
          if (left === 0) this.perOwner.delete(waiter.owner);
          else this.perOwner.set(waiter.owner, left);
        }
        if (waiters.size === 0 && this.byQueue.get(queue)?.waiters === waiters) this.byQueue.delete(queue);
        return true;
      };
      const done = () => {
        if (leave()) resolve(undefined);
      };
      const waiter: Waiter<O, R> = { wake: done, leave, answer: resolve, owner: p.owner, offer: p.offer };
      waiters.add(waiter);
      this.count++;
      if (p.owner !== undefined) this.perOwner.set(p.owner, (this.perOwner.get(p.owner) ?? 0) + 1);
      const timer = setTimeout(done, p.ms);
      signal?.addEventListener('abort', done, { once: true });
      this.startLooking();
    });
  }

  /**
   * Work was added to `queue` (after its transaction committed): up to
   * `jobs` claims waiting on it look again (all of them when not given).
   * Answers how many it woke.
   */
  notify(queue: string, jobs = Number.POSITIVE_INFINITY): number {
    this.generations.set(queue, this.generation(queue) + 1);
    return this.wakeOldest(queue, jobs);
  }

  /** Whether any claim waits on `queue` (an enqueue looks before counting its due jobs). */
  hasWaiting(queue: string): boolean {
    return this.byQueue.has(queue);
  }

  /**
   * An enqueue of `jobs` due now to `queue` is about to be written: the
   * claims waiting on it that offered their claim, oldest first, as many as
   * it takes for their limits (`limitOf`) to cover the jobs. They leave the
   * waiters at once (nothing else wakes them), and each is to be answered
   * once: with its claim's answer after the enqueue committed, or with
   * nothing (it claims again) when the write failed.
   */
  take(queue: string, jobs: number, limitOf: (offer: O) => number): TakenClaim<O, R>[] {
    const entry = this.byQueue.get(queue);
    const taken: TakenClaim<O, R>[] = [];
    if (!entry || this.closed) return taken;
    let room = 0;
    for (const waiter of [...entry.waiters]) {
      if (room >= jobs) break;
      const { offer } = waiter;
      if (offer === undefined || !waiter.leave()) continue;
      room += limitOf(offer);
      taken.push({ offer, answer: waiter.answer });
    }
    return taken;
  }

  /**
   * Work may have become claimable on queues not named (a bulk action over
   * every queue, a completion that released jobs waiting for it): the shared
   * look runs now instead of at its next interval; it wakes only as many
   * claims as it finds jobs. A claim between its statement and its wait
   * (it may have claimed before the commit) claims again instead of
   * waiting, as after a notify; a look already reading (it may have read
   * before the commit) is followed by another.
   */
  lookNow(): void {
    this.everywhere++;
    if (this.closed || this.count === 0) return;
    if (this.looking) {
      this.lookAgain = true;
      return;
    }
    clearTimeout(this.ticker);
    this.ticker = undefined;
    void this.look();
  }

  /** Shutdown: every waiting claim answers now, and later ones do not wait. */
  close(): void {
    this.closed = true;
    clearTimeout(this.ticker);
    this.ticker = undefined;
    for (const queue of [...this.byQueue.keys()]) this.wakeOldest(queue, Number.POSITIVE_INFINITY);
  }

  /** How many claims wait now (tests, metrics). */
  get waiting(): number {
    return this.count;
  }

  private wakeOldest(queue: string, n: number): number {
    const entry = this.byQueue.get(queue);
    if (!entry) return 0;
    let woken = 0;
    for (const waiter of [...entry.waiters]) {
      if (woken >= n) break;
      woken++;
      waiter.wake();
    }
    return woken;
  }

  /** One timer for every queue with waiting claims, running only while there are some. */
  private startLooking(): void {
    if (this.ticker !== undefined || this.closed) return;
    this.ticker = setTimeout(() => void this.look(), CLAIM_REPOLL_MS);
  }

  private async look(): Promise<void> {
    this.looking = true;
    this.lookAgain = false;
    const queues = [...this.byQueue.entries()];
    await Promise.all(
      queues.map(async ([queue, entry]) => {
        let jobs: number;
        try {
          jobs = await entry.ready(entry.waiters.size);
        } catch {
          // The database could not be read: let the claims try, so their
          // clients get the storage fault in their answers.
          jobs = Number.POSITIVE_INFINITY;
        }
        if (jobs > 0) this.wakeOldest(queue, jobs);
      }),
    );
    this.looking = false;
    // A claim that parked while a lookNow's look read may have started the timer: one timer at a time.
    clearTimeout(this.ticker);
    this.ticker = undefined;
    if (this.lookAgain && this.count > 0 && !this.closed) void this.look();
    else if (this.count > 0) this.startLooking();
  }
}

/** The longest a claim may wait for work: below the server's request timeout and any sane proxy's. */
export const MAX_CLAIM_WAIT_MS = 30_000;

/**
 * Claims; when that finds nothing and `waitMs` > 0, parks until a wake-up
 * and claims again, until something is claimed, the wait is over, the
 * client went away (`signal`) or the server shuts down. A client that went
 * away is never claimed for: those jobs would sit out a lease for nobody (its
 * wait ends at the abort, so no enqueue takes it either).
 * `owner` and `bounds`: whose claim this is, and how many may wait (429
 * past them); `ready`: the cheap look the waiters share while it waits;
 * `offer`: what an enqueue may claim for it while it waits (take), the
 * answer then being that claim's.
 */
export async function claimOrWait<O, R extends { jobs: readonly unknown[] }>(p: {
  waiters: ClaimWaiters<O, R>;
  queue: string;
  waitMs: number;
  signal?: AbortSignal | undefined;
  claim: () => Promise<R>;
  ready: ReadyCount;
  owner?: string | undefined;
  bounds?: WaitBounds | undefined;
  offer?: O | undefined;
}): Promise<R> {
  const deadline = Date.now() + p.waitMs;
  let admitted = false;
  for (;;) {
    const seen = p.waiters.generation(p.queue);
    const claimed = await p.claim();
    const left = deadline - Date.now();
    if (claimed.jobs.length > 0 || left <= 0 || p.waiters.isClosed || p.signal?.aborted) return claimed;
    if (!admitted) p.waiters.admit(p.owner, p.bounds);
    admitted = true;
    const handed = await p.waiters.wait({ queue: p.queue, seen, ms: left, ready: p.ready, owner: p.owner, signal: p.signal, offer: p.offer });
    // Jobs an enqueue claimed for this wait are its answer, whatever happened since. One that
    // took nothing (a rate limit, a pause) is like a wake-up: the claim runs again.
    if (handed !== undefined && handed.jobs.length > 0) return handed;
    if (p.waiters.isClosed || p.signal?.aborted) return claimed;
  }
}
