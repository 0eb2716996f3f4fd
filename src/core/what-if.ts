/**
 * What-if tuning (docs/dashboard.md, "Tuning"): replays a window's evidence
 * against lease settings (today's, and a candidate) and says how many healthy
 * attempts they would have taken back (false reaps, each one a duplicate run)
 * and how long real zombies would have waited to be recovered.
 *
 * The evidence (drizzle/0029, kept a day):
 * - the attempts owners ended, counted by their longest silence: the longest
 *   time without a lease renewal, the last stretch to the owner's own write
 *   included (rounded up to 250 ms);
 * - every attempt the reaper took, with its owner's last renewal, and whether
 *   the owner turned out to be alive (a refused late write, a block it
 *   reported, a later liveness beat from the same process): a false reap.
 *   Its pause ran from the last renewal to the owner's first sign of life;
 *   with only a later beat to go on, its length is unknown;
 * - the event-loop blocks workers reported, with their time.
 *
 * The replay's rule is the reaper's for an owner that cannot beat: an
 * attempt is taken when a silence exceeds lease + grace. It does not replay
 * the reaper's wait for an owner still seen alive (maxReapDeferMs), so for
 * owners that beat apart from their heartbeats it is an upper bound. A
 * candidate heartbeat interval shifts every silence by its difference from
 * today's (a silence is an interval plus whatever delayed it). A zombie's
 * recovery under other settings moves by the difference in lease + grace
 * (lease alone when the owner check said the process was gone). Takes at a
 * deadline are not lease decisions: left out, and counted.
 */
export interface LeaseSettings {
  leaseMs: number;
  graceMs: number;
  heartbeatMs: number;
}

/** Attempts their owners ended, by longest silence (the bucket's upper bound). */
export interface SilenceCount {
  queue: string;
  silenceMs: number;
  attempts: number;
}

/** One attempt the reaper took, with what is known of its owner since. */
export interface TakenAttempt {
  queue: string;
  jobId: number;
  attempt: number;
  workerId: string | null;
  lastHeartbeatAt: number | null;
  leaseMs: number | null;
  takenAt: number;
  reason: string | null;
  /** The owner's first refused write to the job after it was taken (it was alive then). */
  ownerBackAt: number | null;
  /** The owner's process beat after the take (alive, time of return unknown). */
  ownerSeenAfter: boolean;
}

/** An event-loop block a worker reported: it ended at `reportedAt`. */
export interface WorkerBlock {
  queue: string;
  workerId: string;
  reportedAt: number;
  blockMs: number;
}

export interface TuningEvidence {
  silences: SilenceCount[];
  taken: TakenAttempt[];
  blocks: WorkerBlock[];
}

export interface Spread {
  medianMs: number;
  maxMs: number;
}

/** What one set of settings would have done over the window. */
export interface WhatIfOutcome {
  settings: LeaseSettings;
  /** Healthy attempts taken back: their owners were alive (each one a duplicate run). */
  falseReaps: number;
  /** Of the false reaps that happened, those these settings would have left with their owner. */
  falseReapsAvoided: number;
  /**
   * The reaped attempts behind `falseReaps`, newest take first, at most
   * WHAT_IF_LISTED_JOBS: the false reaps replayed from silences are counts
   * only (the evidence keeps no job for them). Ids as the API writes them.
   */
  falseReapJobs: { id: string; attempt: number }[];
  /** Real zombies (owner gone) and how long after their last renewal they would have been taken. */
  zombies: number;
  recovery: Spread | null;
  /** Per zombie, this setting's recovery minus what happened (negative: sooner). */
  extraRecovery: Spread | null;
}

export interface WhatIfReport {
  queue: string;
  window: { sinceMs: number; untilMs: number };
  evidence: {
    /** Attempts ended by their owners. */
    healthyAttempts: number;
    /** The longest silence among them (bucket bound), null: none. */
    longestHealthySilenceMs: number | null;
    reaped: number;
    /** Of those, owners alive after all, and how many of those with a pause of unknown length. */
    falseReapsSeen: number;
    falseReapsUnknownPause: number;
    /** The longest pause of a false reap whose end is known. */
    longestFalseReapPauseMs: number | null;
    zombiesSeen: number;
    /** Taken at their deadline: not lease decisions, left out. */
    deadlineTakes: number;
    blocks: number;
    longestBlockMs: number | null;
  };
  current: WhatIfOutcome;
  candidate: WhatIfOutcome;
  notes: string[];
}

const DEADLINE_REASONS = new Set(['deadline_exceeded', 'deadline_held']);

type Classified =
  | { kind: 'false_reap'; pauseMs: number | null; takenAfterMs: number; jobId: number; attempt: number }
  | { kind: 'zombie'; delayMs: number; leaseMs: number | null; ownerGone: boolean };

/**
 * A taken attempt: a false reap (its owner showed up later; the pause ends
 * at its first sign of life: a refused write, or the end of a block it
 * reported that overlaps the silence) or a real zombie.
 */
function classify(t: TakenAttempt & { lastHeartbeatAt: number }, blocks: WorkerBlock[]): Classified {
  const ends: number[] = [];
  if (t.ownerBackAt !== null) ends.push(t.ownerBackAt);
  for (const b of blocks) {
    if (b.workerId === t.workerId && b.reportedAt >= t.lastHeartbeatAt && b.reportedAt - b.blockMs <= t.takenAt) ends.push(b.reportedAt);
  }
  const takenAfterMs = t.takenAt - t.lastHeartbeatAt;
  // The pause is the silence the owner went through, not how long the reaper
  // waited: a worker back from a block may have stopped the job itself (its
  // lease ran out by its own clock) and never renewed again.
  const job = { jobId: t.jobId, attempt: t.attempt };
  if (ends.length > 0) return { kind: 'false_reap', pauseMs: Math.min(...ends) - t.lastHeartbeatAt, takenAfterMs, ...job };
  if (t.ownerSeenAfter) return { kind: 'false_reap', pauseMs: null, takenAfterMs, ...job };
  return { kind: 'zombie', delayMs: takenAfterMs, leaseMs: t.leaseMs, ownerGone: t.reason === 'owner_gone' };
}

function spread(values: number[]): Spread | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { medianMs: sorted[Math.floor((sorted.length - 1) / 2)]!, maxMs: sorted.at(-1)! };
}

function outcome(s: LeaseSettings, today: LeaseSettings, silences: SilenceCount[], taken: Classified[]): WhatIfOutcome {
  const limit = s.leaseMs + s.graceMs;
  const shift = s.heartbeatMs - today.heartbeatMs;
  let falseReaps = 0;
  let falseReapsAvoided = 0;
  const falseReapJobs: WhatIfOutcome['falseReapJobs'] = [];
  for (const c of silences) if (c.silenceMs + shift > limit) falseReaps += c.attempts;
  const delays: number[] = [];
  const extra: number[] = [];
  for (const t of taken) {
    if (t.kind === 'false_reap') {
      // A pause of unknown length is taken under any settings (the replay cannot say otherwise).
      if (t.pauseMs === null || t.pauseMs + shift > limit) {
        falseReaps++;
        if (falseReapJobs.length < WHAT_IF_LISTED_JOBS) falseReapJobs.push({ id: String(t.jobId), attempt: t.attempt });
      } else falseReapsAvoided++;
      continue;
    }
    const leaseThen = t.leaseMs ?? today.leaseMs;
    const moved = t.ownerGone ? s.leaseMs - leaseThen : limit - (leaseThen + today.graceMs);
    const delay = Math.max(0, t.delayMs + moved);
    delays.push(delay);
    extra.push(delay - t.delayMs);
  }
  return { settings: s, falseReaps, falseReapsAvoided, falseReapJobs, zombies: delays.length, recovery: spread(delays), extraRecovery: spread(extra) };
}

const maxOf = (values: number[]) => (values.length === 0 ? null : Math.max(...values));

/**
 * Replays one queue's evidence against today's settings and a candidate.
 *
 * @example
 *   replayWhatIf(evidence, { queue: 'mail', window, current: { leaseMs: 2000, graceMs: 1000, heartbeatMs: 600 }, candidate: { leaseMs: 8000, graceMs: 2000, heartbeatMs: 600 } })
 */
export function replayWhatIf(
  evidence: TuningEvidence,
  p: { queue: string; window: { sinceMs: number; untilMs: number }; current: LeaseSettings; candidate: LeaseSettings },
): WhatIfReport {
  const silences = evidence.silences.filter((s) => s.queue === p.queue);
  const blocks = evidence.blocks.filter((b) => b.queue === p.queue);
  const mine = evidence.taken.filter((t) => t.queue === p.queue && t.lastHeartbeatAt !== null) as (TakenAttempt & { lastHeartbeatAt: number })[];
  const deadlineTakes = mine.filter((t) => DEADLINE_REASONS.has(t.reason ?? '')).length;
  const taken = mine.filter((t) => !DEADLINE_REASONS.has(t.reason ?? '')).map((t) => classify(t, blocks));
  const falseReaps = taken.filter((t) => t.kind === 'false_reap');
  const healthyAttempts = silences.reduce((n, s) => n + s.attempts, 0);
  const notes: string[] = [];
  const unknown = falseReaps.filter((t) => t.pauseMs === null).length;
  if (unknown > 0) notes.push(`${unknown} reaped attempts' owners beat again later without saying when they resumed: counted as taken under any settings`);
  if (deadlineTakes > 0) notes.push(`${deadlineTakes} attempts taken at their deadline are left out: the timeout decides those, not the lease`);
  if (healthyAttempts === 0 && taken.length === 0) notes.push('no attempt ended in this window: nothing to replay');
  return {
    queue: p.queue,
    window: p.window,
    evidence: {
      healthyAttempts,
      longestHealthySilenceMs: maxOf(silences.filter((s) => s.attempts > 0).map((s) => s.silenceMs)),
      reaped: taken.length,
      falseReapsSeen: falseReaps.length,
      falseReapsUnknownPause: unknown,
      longestFalseReapPauseMs: maxOf(falseReaps.flatMap((t) => (t.pauseMs === null ? [] : [t.pauseMs]))),
      zombiesSeen: taken.length - falseReaps.length,
      deadlineTakes,
      blocks: blocks.length,
      longestBlockMs: maxOf(blocks.map((b) => b.blockMs)),
    },
    current: outcome(p.current, p.current, silences, taken),
    candidate: outcome(p.candidate, p.current, silences, taken),
    notes,
  };
}

/**
 * The pauses the evidence shows for one queue, for the recommendation
 * (src/core/tuning.ts): the longest event-loop block a worker serving it
 * reported, and the longest known pause of an attempt taken while its owner
 * was alive. Either means the lease must outlast that pause.
 */
export function observedPauses(evidence: TuningEvidence, queue: string): { longestBlockMs: number | null; longestFalseReapPauseMs: number | null; falseReaps: number } {
  const blocks = evidence.blocks.filter((b) => b.queue === queue);
  const taken = evidence.taken
    .filter((t) => t.queue === queue && t.lastHeartbeatAt !== null && !DEADLINE_REASONS.has(t.reason ?? ''))
    .map((t) => classify(t as TakenAttempt & { lastHeartbeatAt: number }, blocks))
    .filter((t) => t.kind === 'false_reap');
  return {
    longestBlockMs: maxOf(blocks.map((b) => b.blockMs)),
    longestFalseReapPauseMs: maxOf(taken.flatMap((t) => (t.pauseMs === null ? [] : [t.pauseMs]))),
    falseReaps: taken.length,
  };
}

/** A what-if names at most this many of the jobs behind its false reaps (the count has them all). */
export const WHAT_IF_LISTED_JOBS = 100;

/** The longest window a what-if replays: the evidence is kept a day. */
export const WHAT_IF_MAX_WINDOW_MS = 24 * 3_600_000;
export const WHAT_IF_DEFAULT_WINDOW_MS = 3_600_000;

/**
 * The candidate's rules beyond each field's range, written once for the
 * API, dashboard and CLI: the heartbeat must come before the lease runs out.
 * Returns the field at fault and why, or null.
 */
export function whatIfProblem(c: LeaseSettings): { field: 'heartbeatMs'; message: string } | null {
  if (c.heartbeatMs >= c.leaseMs) return { field: 'heartbeatMs', message: `heartbeatMs (${c.heartbeatMs}) must be under leaseMs (${c.leaseMs}): the lease would run out before the next renewal` };
  return null;
}
