/**
 * The jobs a worker holds that wait for a handler slot (run-queue.ts), in the
 * order they start: the server's fairness across groups, kept across claims.
 *
 * - Jobs without a group go first, in the order they were claimed: the
 *   server claims them before grouped ones. A queue without groups has only
 *   this line, first-in first-out.
 * - Grouped jobs take turns: one job of each group that has jobs waiting per
 *   turn, the group whose turn came longest ago first (a group new to the
 *   line joins at the end of the round), and within a group, claim order.
 *   So a group's backlog claimed ahead does not hold back the jobs of
 *   another group claimed after it, as the server's round-robin does not.
 * - Except: a grouped job that has waited twice its wait budget (what
 *   run-queue.ts lets a job claimed ahead wait: an eighth of its lease or
 *   deadline) goes next. Turns alone could keep one group's jobs waiting
 *   as long as other groups keep arriving, and a job waiting here holds a
 *   lease and a deadline that no other worker can use.
 *
 * Groups are told apart per queue: two queues' groups of the same name are
 * different groups.
 */
import type { Running } from './held.ts';

/** How many wait budgets a grouped job waits at most before it starts ahead of its turn. */
const OVERDUE_BUDGETS = 2;

interface Waiting {
  r: Running;
  key: string;
  /** Local time from which it starts ahead of its turn. */
  overdueAt: number;
  started: boolean;
}

export function createFairLine(now: () => number) {
  /** Jobs without a group, in claim order. */
  let plain: Running[] = [];
  /** Groups with jobs waiting, the next turn's first (a Map keeps the order keys were set in). */
  let turns = new Map<string, Waiting[]>();
  /** Every grouped job waiting, in arrival order (those started out of it are dropped when they reach the front). */
  let grouped: Waiting[] = [];
  let size = 0;

  /** Starts `w`, the first of its group's jobs: the group's turn is spent, so it goes to the end of the round. */
  function startFirstOf(w: Waiting, jobs: Waiting[]): Running {
    jobs.shift();
    turns.delete(w.key);
    if (jobs.length > 0) turns.set(w.key, jobs);
    w.started = true;
    return w.r;
  }

  return {
    get length() {
      return size;
    },
    /** A job claimed; `budgetMs`: how long a job claimed ahead is expected to wait, at most. */
    push(r: Running, budgetMs: number) {
      size++;
      const group = r.job.group;
      if (group == null) {
        plain.push(r);
        return;
      }
      const w: Waiting = { r, key: `${r.job.queue}\u0000${group}`, overdueAt: now() + OVERDUE_BUDGETS * budgetMs, started: false };
      const jobs = turns.get(w.key);
      if (jobs) jobs.push(w);
      else turns.set(w.key, [w]);
      grouped.push(w);
    },
    /** The job to start next (undefined: none waits). */
    next(): Running | undefined {
      if (size === 0) return undefined;
      size--;
      while (grouped.length > 0 && grouped[0]!.started) grouped.shift();
      const oldest = grouped[0];
      // The oldest grouped job is the first of its group's (each group's jobs wait in arrival order).
      if (oldest && oldest.overdueAt <= now()) return startFirstOf(oldest, turns.get(oldest.key)!);
      if (plain.length > 0) return plain.shift()!;
      const jobs = turns.values().next().value!;
      return startFirstOf(jobs[0]!, jobs);
    },
    /** Every job still waiting, out of the line (shutdown). */
    takeAll(): Running[] {
      const all = [...plain, ...grouped.filter((w) => !w.started).map((w) => w.r)];
      plain = [];
      turns = new Map();
      grouped = [];
      size = 0;
      return all;
    },
  };
}
