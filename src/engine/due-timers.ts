/**
 * Jobs that become claimable later, at a time the engine knows: a delayed
 * enqueue (delayMs, runAt) or a failed attempt waiting out its backoff. One
 * timer per queue, armed for the earliest known due time, tells the claim
 * waiters when jobs come due, so a waiting worker starts a retry when its
 * backoff ends rather than at the next shared look.
 *
 * Only a hint, and only for what this process wrote: the shared look
 * (CLAIM_REPOLL_MS) still finds everything else. Times past DUE_HORIZON_MS
 * are left to it, and each queue keeps at most MAX_DUE_PER_QUEUE times, so
 * a bulk of delayed jobs costs no more than that.
 */

/** Due times further out than this are left to the shared look (and to the timers of a later write). */
export const DUE_HORIZON_MS = 5 * 60_000;
/** Most due times kept per queue. */
export const MAX_DUE_PER_QUEUE = 1_000;

export class DueTimers {
  private readonly byQueue = new Map<string, { times: number[]; timer: ReturnType<typeof setTimeout> | undefined }>();
  private closed = false;

  /** `due(queue, n)`: n jobs of the queue are claimable now. */
  constructor(private readonly due: (queue: string, n: number) => void) {}

  /** A job of `queue` is claimable from `availableAt` (epoch ms, the database's clock). */
  add(queue: string, availableAt: number): void {
    if (this.closed) return;
    const wait = availableAt - Date.now();
    if (wait <= 0) return this.due(queue, 1);
    if (wait > DUE_HORIZON_MS) return;
    let entry = this.byQueue.get(queue);
    if (!entry) this.byQueue.set(queue, (entry = { times: [], timer: undefined }));
    if (entry.times.length >= MAX_DUE_PER_QUEUE) return;
    entry.times.push(availableAt);
    this.arm(queue);
  }

  close(): void {
    this.closed = true;
    for (const entry of this.byQueue.values()) clearTimeout(entry.timer);
    this.byQueue.clear();
  }

  private arm(queue: string): void {
    const entry = this.byQueue.get(queue);
    if (!entry) return;
    clearTimeout(entry.timer);
    if (entry.times.length === 0) return void this.byQueue.delete(queue);
    const first = Math.min(...entry.times);
    entry.timer = setTimeout(() => this.fire(queue), Math.max(0, first - Date.now()));
    // Never what keeps a process alive.
    (entry.timer as { unref?: () => void }).unref?.();
  }

  private fire(queue: string): void {
    const entry = this.byQueue.get(queue);
    if (!entry) return;
    const now = Date.now();
    const due = entry.times.filter((t) => t <= now).length;
    entry.times = entry.times.filter((t) => t > now);
    entry.timer = undefined;
    if (due > 0) this.due(queue, due);
    this.arm(queue);
  }
}
