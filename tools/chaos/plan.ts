/**
 * The chaos plan: everything random about a run, drawn from one seed before
 * the run starts, so the same seed replays the same fault schedule and the
 * same handler behaviours (the machine's timing still varies).
 */
import { createHash } from 'node:crypto';
import { rng } from './rng.ts';

export interface Timings {
  leaseMs: number;
  heartbeatMs: number;
  graceMs: number;
  workerAliveMs: number;
  maxReapDeferMs: number;
  reaperIntervalMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  maxAttempts: number;
  maxLostAttempts: number;
}

export interface ChaosOptions {
  seed: number;
  jobs: number;
  workers: number;
  concurrency: number;
  /** Faults are injected (and jobs enqueued) over this span; the network phase follows it (networkSpanMs). */
  horizonMs: number;
  /** The whole run, start to verdict, must fit in this; past it the run stops and fails. */
  durationLimitMs: number;
  secondServer: boolean;
  long: boolean;
  /** Add the network faults (NETWORK_FAULT_KINDS) to the schedule. */
  networkFaults: boolean;
  /** Add the clock steps (CLOCK_FAULT_KINDS) to the schedule (default: on). */
  clockSteps?: boolean;
  jsonPath?: string | undefined;
  dir?: string | undefined;
  /** Report unhandled rejections in worker processes as findings, not violations. */
  tolerateUnhandledRejections: boolean;
  progressEveryMs: number;
  timings: Timings;
}

export const SHORT_TIMINGS: Timings = {
  leaseMs: 2_000,
  heartbeatMs: 400,
  graceMs: 800,
  workerAliveMs: 1_200,
  maxReapDeferMs: 600,
  reaperIntervalMs: 200,
  backoffBaseMs: 50,
  backoffMaxMs: 200,
  maxAttempts: 10,
  maxLostAttempts: 6,
};

export const LONG_TIMINGS: Timings = {
  leaseMs: 4_000,
  heartbeatMs: 800,
  graceMs: 1_600,
  workerAliveMs: 2_400,
  maxReapDeferMs: 1_200,
  reaperIntervalMs: 400,
  backoffBaseMs: 100,
  backoffMaxMs: 1_000,
  maxAttempts: 10,
  maxLostAttempts: 6,
};

export const FAULT_KINDS = ['kill_worker', 'stop_worker', 'partition_stall', 'partition_drop', 'kill_server', 'stop_server'] as const;
/**
 * Faults of the network between a proxied worker and its server, with the
 * worker and the server both running: one direction stalls (requests never
 * arrive, or answers never come back), answers to one kind of call are dropped
 * after the server acted on them, or every answer is slow.
 */
export const NETWORK_FAULT_KINDS = ['partition_stall_requests', 'partition_stall_answers', 'drop_answers', 'slow_answers'] as const;
/**
 * Steps of the servers' lease clock (the wall clock the leases use), through
 * the servers' test-only hook (src/runtime/test-clock-step.ts), while their
 * monotonic clocks go on: the clock steps by `stepMs` (forward when positive)
 * and steps back to true time after `durationMs`, so each fault is one step
 * each way.
 */
export const CLOCK_FAULT_KINDS = ['clock_step'] as const;
/**
 * Large flow cascades: through the worker API, a flow graph of
 * CASCADE_DEPENDENTS jobs (each waiting for the 10 before it) on a queue of
 * its own, whose root the harness then fails for good, while the other
 * faults land; the verdict checks that every dependent ended failed.
 */
export const CASCADE_FAULT_KINDS = ['flow_cascade'] as const;
export const CASCADE_DEPENDENTS = 2_000;
export type FaultKind =
  | (typeof FAULT_KINDS)[number]
  | (typeof NETWORK_FAULT_KINDS)[number]
  | (typeof CLOCK_FAULT_KINDS)[number]
  | (typeof CASCADE_FAULT_KINDS)[number];

/** The calls whose answers drop_answers loses, by the head of their request. */
export const DROPPED_CALLS = {
  claim: 'POST /api/v1/queues/',
  completion: 'POST /api/v1/completions',
  heartbeat: 'POST /api/v1/heartbeats',
  fail: 'POST /api/v1/jobs/',
} as const;
export type DroppedCall = keyof typeof DROPPED_CALLS;

export interface Fault {
  /** Index in the schedule. */
  n: number;
  atMs: number;
  kind: FaultKind;
  /** Worker slot (worker faults, partitions) or server index (kill_server, stop_server, flow_cascade). */
  target: number;
  /**
   * stop: how long stopped; partition: how long cut off; kill_worker: delay before the
   * replacement; kill_server: downtime; stop_server: how long paused; drop_answers: how long
   * its drops stay armed; slow_answers: how long answers are slow.
   */
  durationMs: number;
  /** drop_answers: which call's answers, and how many. */
  call?: DroppedCall;
  count?: number;
  /** slow_answers: how late each answer arrives. */
  delayMs?: number;
  /** clock_step: how far the lease clock steps first (forward when positive); it steps back by as much after durationMs. */
  stepMs?: number;
}

export const BEHAVIOURS = ['normal', 'block', 'block_past_lease', 'hang_io', 'throw_once', 'fatal', 'long', 'long_ignores_signal'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export interface JobSpec {
  i: number;
  behaviour: Behaviour;
  /** sleep / block / run time, per behaviour. */
  ms: number;
  /** Hard deadline per attempt (hang_io only). */
  timeoutMs?: number;
  /** A lost attempt waits for the run's operator instead of running again (every eighth job, and every other hang_io job). */
  onLost?: 'hold';
}

export interface Plan {
  faults: Fault[];
  jobs: JobSpec[];
  /** Worker slots that reach their server through the harness's TCP proxy. */
  proxiedSlots: number[];
  servers: number;
  faultsHash: string;
  jobsHash: string;
}

export function makePlan(o: ChaosOptions): Plan {
  const t = o.timings;
  const r = rng(o.seed);
  const servers = o.secondServer ? 2 : 1;
  const proxiedSlots = Array.from({ length: Math.max(1, Math.ceil(o.workers / 2)) }, (_, i) => i);

  // Every kind at least twice, then more picked at random, roughly one fault per 1.5 s of horizon.
  const count = Math.max((FAULT_KINDS.length - 1) * 2, Math.floor(o.horizonMs / 1_500));
  // Server pauses are drawn apart (below), so adding them kept every earlier seed's schedule.
  const drawn = FAULT_KINDS.filter((k) => k !== 'stop_server');
  const kinds: (typeof FAULT_KINDS)[number][] = [...drawn, ...drawn];
  while (kinds.length < count) kinds.push(r.pick(['kill_worker', 'kill_worker', 'stop_worker', 'partition_stall', 'partition_drop', 'kill_server'] as const));
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  const start = 2_000;
  const spacing = (o.horizonMs - start) / kinds.length;
  let lastServerKill = -Infinity;
  const faults: Fault[] = kinds.map((kind, n) => {
    let atMs = Math.round(start + n * spacing + r.next() * spacing * 0.6);
    if (kind === 'kill_server') {
      // Leave the last restart time to settle before the next one.
      atMs = Math.max(atMs, lastServerKill + 5_000);
      lastServerKill = atMs;
    }
    switch (kind) {
      case 'kill_worker':
        return { n, atMs, kind, target: r.int(0, o.workers - 1), durationMs: r.int(200, 1_500) };
      case 'stop_worker':
        return { n, atMs, kind, target: r.int(0, o.workers - 1), durationMs: t.leaseMs + t.graceMs + r.int(200, t.leaseMs) };
      case 'partition_stall':
      case 'partition_drop':
        return { n, atMs, kind, target: r.pick(proxiedSlots), durationMs: r.int(Math.round(t.leaseMs / 2), t.leaseMs * 2) };
      case 'kill_server':
        return { n, atMs, kind, target: r.int(0, servers - 1), durationMs: r.int(300, 2_000) };
      case 'stop_server':
        throw new Error('server pauses are planned by serverPauses()');
    }
  });
  faults.push(...serverPauses(o, faults, servers));
  if (o.networkFaults) faults.push(...networkFaults(o, faults.length, proxiedSlots));
  faults.push(...cascadeFaults(o, faults.length, servers));
  if (clockStepsOn(o)) faults.push(...clockSteps(o, faults.length));
  faults.sort((a, b) => a.atMs - b.atMs || a.n - b.n);
  faults.forEach((f, n) => (f.n = n));

  const jr = rng((o.seed ^ 0x5eed) >>> 0);
  const jobs: JobSpec[] = [];
  for (let i = 0; i < o.jobs; i++) {
    const x = jr.next();
    // In the long run most jobs are quick so 100k fit in minutes.
    const rare = o.long ? 0.05 : 1;
    let spec: JobSpec;
    if (x < 0.05 * rare) spec = { i, behaviour: 'block', ms: jr.int(100, Math.round(t.leaseMs * 0.5)) };
    else if (x < 0.065 * rare) spec = { i, behaviour: 'block_past_lease', ms: Math.round(t.leaseMs * 1.2) + jr.int(0, t.graceMs) };
    else if (x < 0.105 * rare) spec = { i, behaviour: 'hang_io', ms: 0, timeoutMs: Math.round(t.leaseMs * 1.5) };
    else if (x < 0.185 * rare) spec = { i, behaviour: 'throw_once', ms: jr.int(5, 50) };
    else if (x < 0.205 * rare) spec = { i, behaviour: 'fatal', ms: jr.int(5, 50) };
    else if (x < 0.245 * rare) spec = { i, behaviour: 'long', ms: jr.int(t.leaseMs * 2, t.leaseMs * 4) };
    else if (x < 0.26 * rare) spec = { i, behaviour: 'long_ignores_signal', ms: jr.int(t.leaseMs * 2, t.leaseMs * 3) };
    else spec = { i, behaviour: 'normal', ms: o.long ? jr.int(0, 20) : jr.int(5, 150) };
    // No random draw: every other job keeps the behaviour earlier seeds gave it.
    // Every other hung-on-I/O job holds too: its first attempt hangs until its
    // deadline stops it, so every run has hold jobs on the deadline's path.
    if (i % 8 === 5 || (spec.behaviour === 'hang_io' && i % 2 === 0)) spec.onLost = 'hold';
    jobs.push(spec);
  }
  const hash = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 16);
  return { faults, jobs, proxiedSlots, servers, faultsHash: hash(faults), jobsHash: hash(jobs) };
}

/**
 * Two server pauses (SIGSTOP past lease + grace), from their own random
 * stream, in the second half of the horizon and at least 5 s from any server
 * kill, so a restart and a pause never overlap.
 */
function serverPauses(o: ChaosOptions, others: readonly Fault[], servers: number): Fault[] {
  const t = o.timings;
  const r = rng((o.seed ^ 0x57095) >>> 0);
  const busy = others.filter((f) => f.kind === 'kill_server').map((f) => f.atMs);
  const pauses: Fault[] = [];
  for (let i = 0; i < 2; i++) {
    let atMs = Math.round(o.horizonMs * (0.5 + 0.25 * i) + r.next() * o.horizonMs * 0.2);
    while (busy.some((k) => Math.abs(k - atMs) < 5_000)) atMs += 1_000;
    busy.push(atMs);
    pauses.push({ n: others.length + i, atMs, kind: 'stop_server', target: r.int(0, servers - 1), durationMs: t.leaseMs + t.graceMs + r.int(200, t.leaseMs) });
  }
  return pauses;
}

/**
 * How long the network phase lasts: it follows the horizon, with nothing else
 * going on, so that what a cut-off worker or a lost answer does is not hidden
 * by a server outage (which excuses every lease it costs).
 */
export const networkSpanMs = (o: ChaosOptions) => (o.networkFaults ? Math.max(16_000, Math.round(o.horizonMs * 0.2)) : 0);

/**
 * The network faults, from their own random stream (so adding them kept every
 * earlier seed's other faults): each one-way stall and slow answers twice,
 * drop_answers once for each call it can lose, on proxied slots. A stall
 * outlasts lease + grace, so the server takes the job back and another
 * worker can start it while the cut-off one is still alive.
 */
function networkFaults(o: ChaosOptions, firstN: number, proxiedSlots: number[]): Fault[] {
  const t = o.timings;
  const r = rng((o.seed ^ 0x7e7f0) >>> 0);
  const calls = Object.keys(DROPPED_CALLS) as DroppedCall[];
  const kinds: FaultKind[] = ['partition_stall_requests', 'partition_stall_answers', 'slow_answers', ...calls.map(() => 'drop_answers' as const), 'partition_stall_requests', 'partition_stall_answers', 'slow_answers'];
  const span = networkSpanMs(o) - 4_000;
  let call = 0;
  return kinds.map((kind, i) => {
    const atMs = Math.round(o.horizonMs + (span * (i + r.next() * 0.5)) / kinds.length);
    // Alternate the proxied slots, so two faults in a row do not land on one worker.
    const target = proxiedSlots[i % proxiedSlots.length]!;
    const n = firstN + i;
    switch (kind) {
      case 'drop_answers':
        return { n, atMs, kind, target, durationMs: t.leaseMs * 2, call: calls[call++]!, count: r.int(1, 3) };
      case 'slow_answers':
        return { n, atMs, kind, target, durationMs: r.int(t.leaseMs, t.leaseMs * 2), delayMs: r.int(Math.round(t.heartbeatMs / 2), t.heartbeatMs * 2) };
      default:
        return { n, atMs, kind, target, durationMs: t.leaseMs + t.graceMs + r.int(1_000, t.leaseMs * 2) };
    }
  });
}

export const clockStepsOn = (o: ChaosOptions) => o.clockSteps !== false;

/**
 * How long the clock phase lasts: after the network phase, with nothing else
 * going on, so a job taken back during it was taken because of the step.
 */
export const clockSpanMs = (o: ChaosOptions) => (clockStepsOn(o) ? Math.max(14_000, 4 * (2 * o.timings.leaseMs + o.timings.graceMs)) : 0);

/**
 * The clock steps, from their own random stream (so adding them kept every
 * earlier seed's other faults): one that steps forward first and one that
 * steps back first, each by twice lease + grace (past lease + grace, every
 * running lease would look expired at once), staying off for a lease or two.
 */
function clockSteps(o: ChaosOptions, firstN: number): Fault[] {
  const t = o.timings;
  const r = rng((o.seed ^ 0xc10c5) >>> 0);
  const from = o.horizonMs + networkSpanMs(o);
  const half = clockSpanMs(o) / 2;
  const stepMs = 2 * (t.leaseMs + t.graceMs);
  return [1, -1].map((sign, i) => ({
    n: firstN + i,
    atMs: Math.round(from + half * i + 1_000 + r.next() * 500),
    kind: 'clock_step' as const,
    target: 0,
    durationMs: r.int(t.leaseMs + t.graceMs, 2 * t.leaseMs + t.graceMs),
    stepMs: sign * stepMs,
  }));
}

/**
 * Two large flow cascades, from their own random stream (every other
 * fault keeps the time earlier seeds gave it), a third and two thirds into
 * the horizon, each on a server drawn at random.
 */
function cascadeFaults(o: ChaosOptions, firstN: number, servers: number): Fault[] {
  const r = rng((o.seed ^ 0xca5cade) >>> 0);
  return [1 / 3, 2 / 3].map((at, i) => ({
    n: firstN + i,
    atMs: Math.round(o.horizonMs * (at + (r.next() - 0.5) * 0.1)),
    kind: 'flow_cascade' as const,
    target: r.int(0, servers - 1),
    durationMs: 0,
    count: CASCADE_DEPENDENTS,
  }));
}

export function describeFault(f: Fault): string {
  const at = `t+${(f.atMs / 1000).toFixed(2)}s`.padEnd(10);
  switch (f.kind) {
    case 'kill_worker':
      return `${at} SIGKILL worker slot ${f.target} mid-job, replacement after ${f.durationMs} ms`;
    case 'stop_worker':
      return `${at} SIGSTOP worker slot ${f.target} for ${f.durationMs} ms, then SIGCONT`;
    case 'partition_stall':
      return `${at} partition slot ${f.target}: proxy stalls every byte for ${f.durationMs} ms`;
    case 'partition_drop':
      return `${at} partition slot ${f.target}: proxy resets every connection for ${f.durationMs} ms`;
    case 'kill_server':
      return `${at} SIGKILL server ${f.target}, restart on the same port and database after ${f.durationMs} ms`;
    case 'stop_server':
      return `${at} SIGSTOP server ${f.target} for ${f.durationMs} ms, then SIGCONT`;
    case 'partition_stall_requests':
      return `${at} partition slot ${f.target}: proxy holds every byte the worker sends for ${f.durationMs} ms (answers flow)`;
    case 'partition_stall_answers':
      return `${at} partition slot ${f.target}: proxy holds every byte the server answers for ${f.durationMs} ms (requests arrive)`;
    case 'drop_answers':
      return `${at} slot ${f.target}: the next ${f.count} ${f.call} answer(s) within ${f.durationMs} ms are dropped after the server acted`;
    case 'slow_answers':
      return `${at} slot ${f.target}: every answer arrives ${f.delayMs} ms late for ${f.durationMs} ms`;
    case 'clock_step':
      return `${at} the servers' lease clock steps ${f.stepMs! > 0 ? 'forward' : 'back'} ${Math.abs(f.stepMs!)} ms (monotonic clocks go on), and steps back to true time after ${f.durationMs} ms`;
    case 'flow_cascade':
      return `${at} server ${f.target}: a flow graph of ${f.count} dependents through the worker API, then its root failed for good (the cascade goes in bounded steps)`;
  }
}
