/**
 * The chaos run's operator: a person at the admin API while the faults land.
 * - Held jobs (onLost 'hold', their lost attempt waiting for a person): it
 *   looks every second, and once a job has been held a while it releases it
 *   (most) or fails it by hand (every fourth), each with a reason, as the
 *   playbook says. Nothing else may run a held job again.
 * - Canary requeues: every 100 ms it asks for a dry run and, when the
 *   reaper's rule would take some of the queue's running jobs now (a worker
 *   killed, stopped or cut off), starts a canary run (first 1, doubling, a
 *   one-second window) and follows it to its end, up to `maxCanaries` runs.
 *   The reaper races it for the same jobs, and takes each on its first pass
 *   after the job's lease and grace ran out (every 200-400 ms here): the dry
 *   run has to look inside that window, so it looks often (a read). A start
 *   that lost the race is a 409 that started nothing; the guards decide, and
 *   the verdict checks that nothing ran twice or was written stale for it.
 * Every call is bounded; a server that is down is simply asked again later.
 */

export interface OperatorReport {
  held: { seen: number; released: number; failedByHand: number; refused: number };
  canary: { asked: number; nothingToTake: number; started: number; requeued: number; failedForGood: number; skipped: number; states: Record<string, number>; stopReasons: Record<string, number>; errors: string[] };
}

export interface OperatorOptions {
  /** The base URL of a server that is up now, if any. */
  serverUrl: () => string | undefined;
  adminToken: string;
  queue: string;
  /** How long a job stays held before the operator acts on it. */
  holdForMs: number;
  maxCanaries: number;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const ACTOR = 'chaos-operator';

export function startOperator(o: OperatorOptions) {
  const report: OperatorReport = {
    held: { seen: 0, released: 0, failedByHand: 0, refused: 0 },
    canary: { asked: 0, nothingToTake: 0, started: 0, requeued: 0, failedForGood: 0, skipped: 0, states: {}, stopReasons: {}, errors: [] },
  };
  /** Held jobs seen, with when and what the operator will do with each. */
  const seen = new Map<string, { at: number; action: 'release' | 'fail' }>();
  let stopped = false;

  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: any } | undefined> {
    const base = o.serverUrl();
    if (!base) return undefined;
    try {
      const res = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${o.adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(5_000),
      });
      return { status: res.status, json: await res.json().catch(() => null) };
    } catch {
      return undefined; // down or paused: asked again on the next round
    }
  }

  async function tendHeld() {
    const answer = await call('GET', `/held-jobs?queue=${o.queue}&limit=100`);
    if (answer?.status !== 200) return;
    const now = Date.now();
    for (const job of answer.json.jobs as { id: string }[]) {
      if (!seen.has(job.id)) {
        report.held.seen++;
        seen.set(job.id, { at: now, action: report.held.seen % 4 === 0 ? 'fail' : 'release' });
      }
      const { at, action } = seen.get(job.id)!;
      if (now - at < o.holdForMs) continue;
      const done = await call('POST', `/jobs/${job.id}/held/${action}`, { reason: `chaos operator: read the lost attempt of job ${job.id}, ${action}`, actor: ACTOR });
      if (done?.status === 200) {
        seen.delete(job.id);
        if (action === 'fail') report.held.failedByHand++;
        else report.held.released++;
        o.log(`operator ${action === 'fail' ? 'failed by hand' : 'released'} held job ${job.id}`);
      } else if (done?.status === 409) {
        report.held.refused++;
        seen.delete(job.id);
      }
    }
  }

  const heldLoop = (async () => {
    while (!stopped) {
      await tendHeld();
      await sleep(1_000);
    }
  })();

  async function canary() {
    report.canary.asked++;
    const plan = await call('POST', `/queues/${o.queue}/canary`, { first: 1, dryRun: true });
    if (plan?.status !== 200) {
      if (plan) report.canary.errors.push(`dry run answered ${plan.status}: ${JSON.stringify(plan.json).slice(0, 200)}`);
      return;
    }
    if (plan.json.selected === 0) {
      report.canary.nothingToTake++;
      return;
    }
    const why = `${plan.json.selected} lost job(s) the reaper would take`;
    const started = await call('POST', `/queues/${o.queue}/canary`, { first: 1, growth: 2, windowMs: 1_000, reason: `chaos operator: ${why}`, actor: ACTOR });
    if (started?.status === 409 && started.json?.error?.code === 'conflict') {
      // The jobs the dry run saw were taken meanwhile (the reaper, or their owner came back): nothing started.
      report.canary.nothingToTake++;
      return;
    }
    if (started?.status !== 201) {
      if (started) report.canary.errors.push(`start answered ${started.status}: ${JSON.stringify(started.json).slice(0, 200)}`);
      return;
    }
    report.canary.started++;
    const id = started.json.run.id as string;
    o.log(`operator started canary run ${id} over ${started.json.run.selected} job(s): ${why}`);
    // Follow it to its end (bounded: a run whose steps never end is reported as still watching).
    let run = started.json.run;
    for (let i = 0; i < 120 && run.state === 'watching'; i++) {
      await sleep(500);
      const read = await call('GET', `/canary/${id}`);
      if (read?.status === 200) run = read.json.run;
    }
    report.canary.requeued += run.requeued;
    report.canary.failedForGood += run.failedForGood;
    report.canary.skipped += run.skipped;
    report.canary.states[run.state] = (report.canary.states[run.state] ?? 0) + 1;
    if (run.stopReason) report.canary.stopReasons[run.stopReason] = (report.canary.stopReasons[run.stopReason] ?? 0) + 1;
    o.log(`operator's canary run ${id} ${run.state}${run.stopReason ? ` (${run.stopReason})` : ''}: requeued ${run.requeued}, skipped ${run.skipped}`);
  }

  const canaryLoop = (async () => {
    while (!stopped && report.canary.started < o.maxCanaries) {
      await canary();
      await sleep(100);
    }
  })();

  return {
    report,
    async stop(): Promise<OperatorReport> {
      stopped = true;
      await Promise.race([Promise.all([heldLoop, canaryLoop]), sleep(10_000)]);
      return report;
    },
  };
}
