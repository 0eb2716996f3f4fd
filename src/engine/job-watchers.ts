/**
 * Clients waiting on jobs (POST /jobs/wait): a producer's request parks here
 * until one (or every) job it names is finished, or changed from the version
 * it last saw, instead of the client polling each job with GET /jobs/:id.
 *
 * How a change is seen:
 * - a write on this server (the worker protocol's claim, progress, checkpoint,
 *   complete, fail, release; an operator's action) names the jobs it changed
 *   after it committed (`notify`): their watchers are read again on the next
 *   event-loop turn;
 * - everything else (another server on the same database, the reaper, the
 *   dashboard) is seen by reading every watched job again on an interval
 *   (JOB_WATCH_RECHECK_MS, longer when many jobs are watched).
 * Either way it is one cheap read for all the waits on this server together
 * (statuses from an index, src/db/store/watch.ts), never a read per wait;
 * the answer itself (the jobs that counted, whole) is read once per answer.
 *
 * Bounds: at most MAX_WAIT_JOBS jobs per wait, MAX_JOB_WAIT_MS per wait, and
 * LEASEHOLD_MAX_JOB_WAITS waits at once per server (one more is a 429 with
 * Retry-After, and changes nothing).
 *
 * Workers (`isolated`): a request there cannot finish another's I/O, so each
 * wait reads for itself, in its own request, at most MAX_READS_PER_ISOLATED_WAIT
 * times (D1's queries per invocation are limited), and nothing wakes it but
 * its own re-reads.
 *
 * One set of watchers per engine, like the claim waiters: the HTTP routes and
 * the embedded API built on one engine wake each other.
 */
import { LeaseholdError } from '../core/errors.ts';
import type { JobStatus } from '../core/wire.ts';
import type { JobWatchState } from '../db/store/port.ts';

/** The longest one wait may last: below the server's request timeout and any sane proxy's. */
export const MAX_JOB_WAIT_MS = 30_000;
/** Most jobs one wait may name. */
export const MAX_WAIT_JOBS = 1_000;
/** How often every watched job is read again without a wake-up: the cross-server, reaper and dashboard fallback. */
export const JOB_WATCH_RECHECK_MS = 250;
/** The re-read never covers more than this many watched jobs per second: many watched jobs stretch the interval instead. */
export const RECHECK_JOBS_PER_SECOND = 50_000;
/** On Workers, each wait's own re-reads, so a 30 s wait stays well inside D1's queries per invocation. */
export const MAX_READS_PER_ISOLATED_WAIT = 20;
/** Most bytes of JSON one wait answer carries (payloads, results, checkpoints, progress, errors); the rest is asked for again. */
export const WAIT_ANSWER_BYTES = 8 * 1024 * 1024;

const FINISHED: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

/** One job a wait names: `seen` is the version the client last saw (it counts once its version differs); none: it counts once finished. */
export interface WatchEntry {
  id: number;
  seen?: string | undefined;
}

/** Reads the watch states of jobs (the store's jobsWatchStates). */
export type WatchRead = (p: { ids: readonly number[]; versionsOf: readonly number[] }) => Promise<JobWatchState[]>;

/**
 * Whether a job counts for its wait: gone, changed from what its client saw,
 * or finished. A wait with a job that is gone answers at once, `all` or not.
 */
export function counts(entry: WatchEntry, state: JobWatchState | undefined): boolean {
  if (!state) return true;
  if (entry.seen !== undefined) return state.version !== entry.seen;
  return FINISHED.has(state.status);
}

/** Whether a wait is answered now: any (or, with `all`, every) entry counts, or a job is gone. */
export function waitHolds(entries: readonly WatchEntry[], all: boolean, states: ReadonlyMap<number, JobWatchState>): boolean {
  if (entries.some((e) => !states.has(e.id))) return true;
  return all ? entries.every((e) => counts(e, states.get(e.id))) : entries.some((e) => counts(e, states.get(e.id)));
}

interface Wait {
  entries: readonly WatchEntry[];
  all: boolean;
  /** The entries that counted when last read. */
  counted: Set<number>;
  done: () => void;
}

export class JobWatchers {
  private readonly waits = new Set<Wait>();
  private readonly byId = new Map<number, Set<Wait>>();
  /** Watched jobs to read on the next turn (woken, or newly watched). */
  private readonly dirty = new Set<number>();
  private flushQueued = false;
  private recheck: ReturnType<typeof setTimeout> | undefined;
  private read: WatchRead | undefined;
  private closed = false;
  /** Waits admitted and not yet answered, in either mode (the per-server bound). */
  private admitted = 0;

  /**
   * Takes one of `max` places, or refuses with 429: too many clients wait
   * already. The caller gives it back with `leave` when its answer is sent.
   */
  admit(max: number): void {
    if (this.admitted >= max) {
      throw new LeaseholdError('too_many_requests', `${max} waits on jobs are open on this server already (LEASEHOLD_MAX_JOB_WAITS): try again in a moment, or wait on more jobs per request`, undefined, { retryAfterSeconds: 1 });
    }
    this.admitted++;
  }

  leave(): void {
    this.admitted = Math.max(0, this.admitted - 1);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Waits in progress (tests). */
  get waiting(): number {
    return this.waits.size;
  }

  /**
   * Resolves when the wait's condition holds (any entry counts, or every one
   * with `all`), after `ms`, when `signal` aborts or at shutdown. Never
   * rejects on the condition's account: the caller reads the answer itself.
   * A failed read resolves the wait too (the caller's own read then fails
   * with the real error).
   */
  wait(p: { entries: readonly WatchEntry[]; all: boolean; ms: number; signal?: AbortSignal | undefined; read: WatchRead }): Promise<void> {
    if (this.closed || p.signal?.aborted || p.ms <= 0) return Promise.resolve();
    this.read ??= p.read;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        p.signal?.removeEventListener('abort', done);
        if (!this.waits.delete(wait)) return;
        for (const e of p.entries) {
          const set = this.byId.get(e.id);
          set?.delete(wait);
          if (set?.size === 0) this.byId.delete(e.id);
        }
        if (this.waits.size === 0) {
          clearTimeout(this.recheck);
          this.recheck = undefined;
          this.read = undefined;
        }
        resolve();
      };
      const wait: Wait = { entries: p.entries, all: p.all, counted: new Set(), done };
      const timer = setTimeout(done, p.ms);
      p.signal?.addEventListener('abort', done, { once: true });
      this.waits.add(wait);
      for (const e of p.entries) {
        let set = this.byId.get(e.id);
        if (!set) this.byId.set(e.id, (set = new Set()));
        set.add(wait);
        // Read soon: the job may have changed between the caller's first read and now.
        this.dirty.add(e.id);
      }
      this.queueFlush();
      this.armRecheck();
    });
  }

  /** These jobs changed (after the write committed): their watchers look again on the next turn. */
  notify(ids: Iterable<number>): void {
    let any = false;
    for (const id of ids) {
      if (!this.byId.has(id)) continue;
      this.dirty.add(id);
      any = true;
    }
    if (any) this.queueFlush();
  }

  /** Shutdown: every wait answers now, and later ones do not wait. */
  close(): void {
    this.closed = true;
    for (const w of [...this.waits]) w.done();
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // The next turn, not a microtask: the requests and writes of this turn share one read.
    setTimeout(() => {
      this.flushQueued = false;
      void this.flush();
    }, 0);
  }

  private armRecheck(): void {
    if (this.recheck !== undefined || this.waits.size === 0) return;
    const ms = Math.max(JOB_WATCH_RECHECK_MS, Math.ceil((this.byId.size * 1000) / RECHECK_JOBS_PER_SECOND));
    this.recheck = setTimeout(() => {
      this.recheck = undefined;
      for (const id of this.byId.keys()) this.dirty.add(id);
      void this.flush().finally(() => this.armRecheck());
    }, ms);
  }

  /** One read for every dirty job still watched; each wait it satisfies is answered. */
  private async flush(): Promise<void> {
    const read = this.read;
    const ids = [...this.dirty].filter((id) => this.byId.has(id));
    this.dirty.clear();
    if (!read || ids.length === 0) return;
    const versionsOf = ids.filter((id) => [...this.byId.get(id)!].some((w) => w.entries.some((e) => e.id === id && e.seen !== undefined)));
    let states: JobWatchState[];
    try {
      states = await read({ ids, versionsOf });
    } catch {
      // The database failed: every affected wait answers, and its own read says why.
      for (const id of ids) for (const w of [...(this.byId.get(id) ?? [])]) w.done();
      return;
    }
    const byId = new Map(states.map((s) => [s.id, s]));
    for (const id of ids) {
      for (const w of [...(this.byId.get(id) ?? [])]) {
        for (const e of w.entries) if (e.id === id) (counts(e, byId.get(id)) ? w.counted.add(id) : w.counted.delete(id));
        // A hint only: the caller reads the answer afresh. A job with no row answers at once, whatever the mode: it will never change.
        if (!byId.has(id) || (w.all ? w.counted.size === w.entries.length : w.counted.size > 0)) w.done();
      }
    }
  }
}

/**
 * One wait on Workers: this request's own re-reads of its own jobs, spread
 * over the wait (at least JOB_WATCH_RECHECK_MS apart, at most
 * MAX_READS_PER_ISOLATED_WAIT of them), until the condition holds.
 */
export async function waitIsolated(p: { entries: readonly WatchEntry[]; all: boolean; ms: number; signal?: AbortSignal | undefined; read: WatchRead; closed: () => boolean }): Promise<void> {
  const every = Math.max(JOB_WATCH_RECHECK_MS, Math.ceil(p.ms / MAX_READS_PER_ISOLATED_WAIT));
  const deadline = Date.now() + p.ms;
  const ids = p.entries.map((e) => e.id);
  const versionsOf = p.entries.filter((e) => e.seen !== undefined).map((e) => e.id);
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0 || p.signal?.aborted || p.closed()) return;
    await sleep(Math.min(every, left), p.signal);
    if (p.signal?.aborted || p.closed() || Date.now() >= deadline) return;
    const byId = new Map((await p.read({ ids, versionsOf })).map((s) => [s.id, s]));
    if (waitHolds(p.entries, p.all, byId)) return;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
