/**
 * One chaos worker process: an HTTP-transport leasehold worker whose handler
 * does what its job's behaviour says. It records, outside leasehold, one
 * append-only line per event in EFFECTS_FILE (written with writeSync, so a
 * line written before SIGKILL is in the file):
 *   run   — the handler started (the plain, non-idempotent counter)
 *   once  — the once() side effect was applied (inside fn)
 *   done  — the handler returned
 *   abort — the handler's signal was aborted (with the SDK's reason)
 *   end   — the handler ended, however (returned, threw, or gave up on its signal)
 * Worker events go to stdout as JSON lines for the harness.
 *
 * The worker runs with the SDK's default settings (request timeout, polling,
 * heartbeat from the server's claim answer) but for its concurrency and drain:
 * a fault that only shows with tuned timeouts must not be hidden by them.
 */
import { openSync, writeSync } from 'node:fs';
import { createWorker, httpTransport, JobAbortedError, NonRetryableError, type JobContext } from '../../src/worker/index.ts';
import type { JobSpec } from './plan.ts';

const workerId = process.env.WORKER_ID!;
const fd = openSync(process.env.EFFECTS_FILE!, 'a');
const record = (entry: Record<string, unknown>) => writeSync(fd, JSON.stringify({ t: Date.now(), w: workerId, pid: process.pid, ...entry }) + '\n');
const say = (entry: Record<string, unknown>) => process.stdout.write(JSON.stringify(entry) + '\n');

// An unhandled rejection would kill this process (Node's default). Record it and keep
// going, so that one defect does not end the run; the harness reports every one.
process.on('unhandledRejection', (err) => {
  const e = err as Error;
  say({ e: 'unhandled_rejection', message: `${e?.name ?? 'Error'}: ${String(e?.message ?? err).slice(0, 200)}`, stack: String(e?.stack ?? '').split('\n').slice(1, 4).map((l) => l.trim()).join(' < ') });
});

// The harness holds our stdin: when it goes away (killed), so do we.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

const worker = createWorker<JobSpec>({
  transport: httpTransport({ url: process.env.LEASEHOLD_URL!, token: process.env.LEASEHOLD_WORKER_TOKEN }),
  queue: 'chaos',
  concurrency: Number(process.env.CONCURRENCY ?? 4),
  drainTimeoutMs: 2_000,
  workerId,
  logger: { info() {}, warn() {}, error: (m) => say({ e: 'log_error', message: m.slice(0, 300) }) },
  async handler(ctx) {
    const spec = ctx.job.payload;
    const { id, attempt } = ctx.job;
    const fence = ctx.fencingToken;
    record({ k: 'run', job: id, attempt, fence, b: spec.behaviour });
    ctx.signal.addEventListener('abort', () => record({ k: 'abort', job: id, attempt, fence, reason: abortReason(ctx.signal) }), { once: true });
    try {
      return await run(ctx, spec, id, attempt, fence);
    } finally {
      record({ k: 'end', job: id, attempt, fence, aborted: ctx.signal.aborted });
    }
  },
});

/** The reason the SDK gave for aborting (its code: lease_lost, lease_expired_locally, ...). */
function abortReason(signal: AbortSignal): string {
  const r = signal.reason as unknown;
  return r instanceof JobAbortedError ? r.reason : String((r as Error | undefined)?.message ?? r).slice(0, 80);
}

async function run(ctx: JobContext<JobSpec>, spec: JobSpec, id: string, attempt: number, fence: number) {
  const effect = () => (
    record({ k: 'once_call', job: id, attempt, fence }),
    ctx.once('effect', () => {
      record({ k: 'once', job: id, attempt, fence });
      return { appliedBy: workerId, fence };
    })
  );
  switch (spec.behaviour) {
    case 'normal':
      await effect();
      await sleep(spec.ms, ctx.signal);
      break;
    case 'block':
    case 'block_past_lease': {
      await effect();
      const end = performance.now() + spec.ms;
      while (performance.now() < end) {
        // blocking the event loop on purpose
      }
      break;
    }
    case 'hang_io':
      await effect();
      if (attempt === 1) await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
      break;
    case 'throw_once':
      await effect();
      await sleep(spec.ms, ctx.signal);
      if (attempt === 1) throw new Error(`chaos: planned failure of attempt 1 of job ${id}`);
      break;
    case 'fatal':
      await effect();
      await sleep(spec.ms, ctx.signal);
      throw new NonRetryableError(`chaos: planned permanent failure of job ${id}`);
    case 'long':
      // Heartbeats keep the lease; the side effect comes at the end.
      await sleep(spec.ms, ctx.signal);
      await effect();
      break;
    case 'long_ignores_signal':
      await effect();
      await sleep(spec.ms);
      break;
  }
  record({ k: 'done', job: id, attempt, fence, aborted: ctx.signal.aborted });
  return { by: workerId, fence };
}

for (const event of ['claimed', 'completed', 'failed', 'abandoned', 'lease_lost', 'event_loop_blocked', 'heartbeat_failed'] as const) {
  worker.on(event, (raw: Record<string, unknown>) => {
    const e = raw as { job?: { id: string }; reason?: unknown; delayMs?: number };
    say({ e: event, ...(e.job ? { job: e.job.id } : {}), ...(typeof e.reason === 'string' ? { reason: e.reason.slice(0, 200) } : {}), ...(e.delayMs ? { delayMs: Math.round(e.delayMs) } : {}) });
  });
}
worker.on('stopped', () => setTimeout(() => process.exit(0), 10));
worker.start();
say({ e: 'ready', workerId });
