/**
 * Claims that wait on the server for work (POST /queues/:queue/claim with
 * waitMs): an idle worker's request parks here until an enqueue to its queue
 * in this process wakes it, instead of the worker polling with backoff (which
 * put hundreds of milliseconds between an enqueue and its handler).
 *
 * This is only a hint that work may be ready: the claim statement still
 * decides. Enqueues by another server on the same database, and jobs that
 * become due by time, wake no one here; the waiting claim re-polls on a short
 * interval for those (CLAIM_REPOLL_MS).
 *
 * One set of waiters per database handle, so the HTTP routes and the embedded
 * API over the same handle wake each other, and two apps on two databases
 * (tests) do not.
 */

/** How often a waiting claim looks again without a wake-up: the cross-server and delayed-job fallback. */
export const CLAIM_REPOLL_MS = 250;

interface Waiter {
  wake: () => void;
}

export class ClaimWaiters {
  private readonly byQueue = new Map<string, Set<Waiter>>();
  /** Bumped on every notify: a claim that saw an older value knows it may have missed work. */
  private readonly generations = new Map<string, number>();
  private closed = false;

  /** The queue's wake-up count; read it before claiming, pass it to wait(). */
  generation(queue: string): number {
    return this.generations.get(queue) ?? 0;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Resolves when the queue is notified after `seen` (at once if it already
   * was), after `ms`, when `signal` aborts (the client went away) or when the
   * waiters are closed (shutdown). Never rejects: the caller claims again
   * either way, and decides from its own deadline whether to keep waiting.
   */
  wait(queue: string, seen: number, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || signal?.aborted || ms <= 0 || this.generation(queue) !== seen) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let set = this.byQueue.get(queue);
      if (!set) this.byQueue.set(queue, (set = new Set()));
      const waiters = set;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(waiter);
        if (waiters.size === 0 && this.byQueue.get(queue) === waiters) this.byQueue.delete(queue);
        resolve();
      };
      const waiter: Waiter = { wake: done };
      waiters.add(waiter);
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Work was added to `queue` (after its transaction committed): every claim waiting on it looks again. */
  notify(queue: string): void {
    this.generations.set(queue, this.generation(queue) + 1);
    const set = this.byQueue.get(queue);
    if (!set) return;
    for (const waiter of [...set]) waiter.wake();
  }

  /** Shutdown: every waiting claim answers now, and later ones do not wait. */
  close(): void {
    this.closed = true;
    for (const set of [...this.byQueue.values()]) for (const waiter of [...set]) waiter.wake();
  }

  /** How many claims wait now (tests, metrics). */
  get waiting(): number {
    let n = 0;
    for (const set of this.byQueue.values()) n += set.size;
    return n;
  }
}

const registry = new WeakMap<object, ClaimWaiters>();

/** The waiters of this database handle (made on first use). */
export function claimWaiters(db: object): ClaimWaiters {
  let waiters = registry.get(db);
  if (!waiters) registry.set(db, (waiters = new ClaimWaiters()));
  return waiters;
}

/** The longest a claim may wait for work: below the server's request timeout and any sane proxy's. */
export const MAX_CLAIM_WAIT_MS = 30_000;

/**
 * Claims; when that finds nothing and `waitMs` > 0, waits for a wake-up or
 * the re-poll interval and claims again, until something is claimed, the
 * wait is over, the client went away (`signal`) or the server shuts down.
 * A client that went away is never claimed for: those jobs would sit out a
 * lease for nobody.
 */
export async function claimOrWait<R extends { length: number }>(p: { waiters: ClaimWaiters; queue: string; waitMs: number; signal?: AbortSignal | undefined; claim: () => Promise<R> }): Promise<R> {
  const deadline = Date.now() + p.waitMs;
  for (;;) {
    const seen = p.waiters.generation(p.queue);
    const claimed = await p.claim();
    const left = deadline - Date.now();
    if (claimed.length > 0 || left <= 0 || p.waiters.isClosed || p.signal?.aborted) return claimed;
    await p.waiters.wait(p.queue, seen, Math.min(CLAIM_REPOLL_MS, left), p.signal);
    if (p.waiters.isClosed || p.signal?.aborted) return claimed;
  }
}
