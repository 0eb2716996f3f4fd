/**
 * The in-process reaper of a long-running server (Node, Bun, Deno), and the
 * pass a Workers cron runs: runMaintenancePass every interval (through the
 * engine), a pass never overlapping the previous one, a failed pass logged
 * and tried again at the next tick, the gap watch's hold written first, and
 * the pass's log lines. The server's own start and close are in
 * server-lifecycle.ts.
 */
import type { Config } from '../core/config.ts';
import type { MaintenancePassObserver, MaintenancePassReport } from '../maintenance/pass.ts';
import { storageFault } from '../db/storage-fault.ts';
import { gapWatch, type GapWatch } from './gap-watch.ts';
import { clockStepCause, clockStepHoldMs } from '../core/clock-step.ts';
import type { Logger } from '../core/log.ts';
import type { Engine } from '../engine/engine.ts';

/** One reaper pass (`source`: who asked: interval, cron), and the note of this server's start. */
export interface ReaperPass {
  (source?: string): Promise<void>;
  /**
   * The server just started: its gap watch's first tick, written to the
   * database as the reaper's hold before the server answers anyone (workers
   * could not reach it while it was down). A storage fault is logged, and
   * the note is tried again at the next tick.
   */
  noteStart(): Promise<{ holdUntil: number } | undefined>;
}

/**
 * One reaper pass as every long-running server runs it: skipped while the
 * previous one is still running, logged when it did something, and a failure
 * logged and left for the next pass. `source` names who asked (interval, cron).
 *
 * `watch`: the gap watch (src/runtime/gap-watch.ts); false for none (tests
 * that want every pass to act). Interval ticks feed it, and a gap it notices
 * (this server's start, or a pause of its own) is written to the database as
 * the reaper's hold (src/db/store/reaper-hold.ts), which every pass, every
 * server's, and every operator's requeue then obeys; a cron pass only obeys.
 */
export function makeReaperPass(engine: Engine, log: Logger, watch: GapWatch | false = gapWatch(engine.config)): ReaperPass {
  const { store, clock, config } = engine;
  let running = false;
  // A gap or step noticed whose hold is not in the database yet (its write failed): tried again at the next tick.
  let unwritten: { gapMs: number | null; holdMs: number; cause?: string } | undefined;
  // `quiet`: the start's hold is said in the start line instead (which comes first).
  const noteGap = async (source: string | undefined, quiet = false, noticed?: { gapMs: number; holdMs: number; cause: string; at: number }): Promise<{ holdUntil: number } | undefined> => {
    const gap: { gapMs: number | null; holdMs: number; cause?: string } | undefined = noticed ?? (watch ? watch.noticed() : undefined) ?? unwritten;
    if (!gap) return undefined;
    unwritten = gap;
    try {
      const cause = gap.cause ?? gapCause(gap.gapMs);
      const hold = await store.reaperHoldBegin({ now: noticed ? noticed.at : clock.now(), holdMs: gap.holdMs, gapMs: gap.gapMs, cause });
      unwritten = undefined;
      if (!quiet) {
        log.info(`reaper: expired leases are held until ${new Date(hold.holdUntil).toISOString()} (${cause}), so live workers can renew first`, {
          event: 'reaper_hold',
          holdUntil: new Date(hold.holdUntil).toISOString(),
          gapMs: gap.gapMs,
          ...(source ? { source } : {}),
        });
      }
      return hold;
    } catch (err) {
      const fault = storageFault(err);
      log.error(`reaper: could not write its hold to the database (will retry at the next tick): ${fault ? fault.message : String(err)}`, { event: 'reaper_hold_failed', ...(fault ? { sqliteCode: fault.sqliteCode } : { error: err }) });
      return undefined;
    }
  };
  /**
   * The clock the leases use, read for this pass and compared with the
   * monotonic clock: a forward step holds expired leases (written before the
   * pass decides, at the very time the pass decides at), a backward step is
   * said (the pass itself rebases the leases it finds renewed in the future:
   * src/maintenance/clock-step-back.ts). Undefined without a watch.
   */
  const readClock = async (source: string | undefined): Promise<{ at: number; holdWhy?: string } | undefined> => {
    if (!watch) return undefined;
    const now = clock.now();
    const { at, step } = await watch.readClock(typeof now === 'number' ? async () => now : () => store.readNow());
    if (!step) return { at };
    const by = source ? { source } : {};
    const fields = { event: 'clock_step', direction: step.direction, stepMs: Math.round(step.stepMs), ...by };
    const cause = clockStepCause(step);
    if (step.direction === 'backward') {
      log.warn(`reaper: ${cause} against this server's monotonic clock: leases renewed before the step are counted from now on (no dead owner's job waits the step out)`, fields);
      return { at };
    }
    const holdMs = clockStepHoldMs(config);
    const hold = await noteGap(source, true, { gapMs: Math.round(step.stepMs), holdMs, cause, at });
    log.warn(
      `reaper: ${cause} against this server's monotonic clock: every lease looks that much shorter, so expired leases are held${hold ? ` until ${new Date(hold.holdUntil).toISOString()}` : ''} while live workers renew on the new clock`,
      { ...fields, ...(hold ? { holdUntil: new Date(hold.holdUntil).toISOString() } : {}) },
    );
    // Not in the database (its write failed, tried again next tick): this pass holds all the same.
    return hold ? { at } : { at, holdWhy: cause };
  };
  const pass = async (source?: string) => {
    // Every interval tick counts as a sign of life, even one skipped behind a slow pass.
    if (watch && (source === undefined || source === 'interval')) watch.tick();
    const noting = noteGap(source);
    if (running) return void (await noting);
    running = true;
    const who = source ? `reaper (${source})` : 'reaper';
    try {
      // The hold first: this very pass obeys it.
      await noting;
      const read = await readClock(source);
      // Through the engine: the jobs the pass requeues and the occurrences it enqueues wake the claims waiting on their queues.
      const report = await engine.maintenancePass(clock.now(), {
        ...reapLogger(log, source),
        ...(read ? { readAt: read.at } : {}),
        ...(read?.holdWhy ? { holdLostLeases: { why: read.holdWhy } } : {}),
      });
      logReapSummary(log, report, source);
    } catch (err) {
      // A storage fault (disk full, locked, read-only) is one line per pass, not a stack.
      const fault = storageFault(err);
      const fields = { event: 'reaper_failed', ...(source ? { source } : {}) };
      if (fault) log.error(`${who} pass failed (will retry on the next one): ${fault.message}`, { ...fields, sqliteCode: fault.sqliteCode });
      else log.error(`${who} pass failed (will retry on the next one)`, { ...fields, error: err });
    } finally {
      running = false;
    }
  };
  return Object.assign(pass, {
    async noteStart() {
      if (!watch) return undefined;
      watch.tick();
      const hold = await noteGap('start', true);
      // The first reading of the clock, for the first pass's to be compared with (a fault here is the first pass's to report).
      await readClock('start').catch(() => undefined);
      return hold;
    },
  });
}

/**
 * What a reaper pass does, for operators, as it happens: one line per job
 * taken back or deferred (job id, queue, the worker that held it, why), one
 * per owner check answer refused, and one per alert that started firing or
 * cleared.
 */
export function reapLogger(log: Logger, source?: string): MaintenancePassObserver {
  const who = source ? `reaper (${source})` : 'reaper';
  const by = source ? { source } : {};
  return {
    job(e) {
      const fields = { event: 'reap', action: e.action, jobId: e.id, queue: e.queue, workerId: e.workerId, reason: e.reason, ...(e.overdueMs !== undefined ? { overdueMs: e.overdueMs } : {}), ...by };
      if (e.action === 'requeue') log.warn(`${who}: took job ${e.id} back from ${e.workerId} (${e.reason}); it will run again`, fields);
      else if (e.action === 'hold_for_operator') log.warn(`${who}: took job ${e.id} back from ${e.workerId} (${e.reason}) and held it for a person (onLost 'hold'): it runs again only when released`, fields);
      else if (e.action === 'fail') log.warn(`${who}: failed job ${e.id} (${e.reason})`, fields);
      else log.info(`${who}: left job ${e.id} with its live worker ${e.workerId} for now (${e.overdueMs} ms overdue)`, fields);
    },
    ownerCheckRefused(r) {
      log.warn(`${who}: refused the owner check's answer about ${r.workerId} (${r.reason}), treated as unknown: ${r.detail}`, { event: 'owner_check_refused', workerId: r.workerId, reason: r.reason, ...by });
    },
    alert(t) {
      const fields = { event: 'alert', alert: t.name, queue: t.queue, state: t.state, value: t.value };
      if (t.state === 'firing') log.warn(`alert ${t.name} firing on queue ${t.queue}: ${t.message}`, fields);
      else log.info(`alert ${t.name} cleared on queue ${t.queue}`, fields);
    },
  };
}

/** The pass's summary line, when it did anything (a quiet pass logs nothing). */
export function logReapSummary(log: Logger, report: MaintenancePassReport, source?: string, held?: string): void {
  const who = source ? `reaper (${source})` : 'reaper';
  const by = source ? { source } : {};
  if (report.alerts.error) log.error(`${who}: alert pass failed (reaping was not affected): ${report.alerts.error}`, { event: 'alert_pass_failed', ...by });
  if (!worthLogging(report)) return;
  // During a hold the line says why expired leases were left alone.
  const holdWhy = held ?? report.hold?.why;
  const why = holdWhy && report.held.length > 0 ? ` (${holdWhy})` : '';
  log.info(`${who}: ${summarize(report)}${why}`, {
    event: 'reaper_pass',
    requeued: report.requeued.length,
    failed: report.failed.length,
    deferred: report.deferred.length,
    held: report.held.length,
    raced: report.raced,
    pruned: report.pruned,
    ...by,
  });
}

/**
 * The in-process reaper of a server: its start noted in the database first
 * (the reaper's hold: resolved once written, so call it before the server
 * answers requests), then a pass every interval. Returns its stop function.
 */
export async function startReaper(engine: Engine, log: Logger): Promise<StartedReaper> {
  const pass = makeReaperPass(engine, log);
  const hold = await pass.noteStart();
  engine.startScheduleTimer();
  return { stop: everyInterval(pass, engine.config), ...(hold ? { heldUntil: hold.holdUntil } : {}) };
}

/** A server's running reaper: its stop, and until when its start holds expired leases (for the start line). */
export interface StartedReaper {
  stop: () => void;
  heldUntil?: number;
}

/** The same, for a caller that cannot wait (the embedded library's startReaper): the start is noted in the background. */
export function startReaperTimer(engine: Engine, log: Logger): () => void {
  const pass = makeReaperPass(engine, log);
  void pass.noteStart();
  engine.startScheduleTimer();
  return everyInterval(pass, engine.config);
}

function everyInterval(pass: ReaperPass, config: Config): () => void {
  const timer = setInterval(() => void pass(), config.reaperIntervalMs);
  // Deno's timers have no unref; Node's and Bun's do.
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

/** Why a gap holds expired leases (the hold's cause: its reap_held events, the refusals and the log say it). */
export function gapCause(gapMs: number | null): string {
  return gapMs === null ? 'the server just started' : `the reaper did not run for ${(gapMs / 1000).toFixed(1)} s (the server was paused or stalled)`;
}

export function summarize(r: MaintenancePassReport): string {
  return `${stepBackSummary(r)}requeued ${r.requeued.length}, failed ${r.failed.length}, deferred ${r.deferred.length}, ${r.held.length > 0 ? `held ${r.held.length}, ` : ''}raced ${r.raced}, pruned ${r.pruned}${alertsSummary(r)}`;
}

/** What the pass did after the clock stepped back, only when it found that (most passes do not). */
function stepBackSummary({ clockStepBack: b }: MaintenancePassReport): string {
  if (!b) return '';
  return `the clock had stepped back ${(b.stepMs / 1000).toFixed(1)} s: ${b.jobs} running lease${b.jobs === 1 ? '' : 's'} counted from now${b.more ? ' (more next pass)' : ''}; `;
}

/** The alert part, only when it did something (most passes do not). */
function alertsSummary({ alerts: a }: MaintenancePassReport): string {
  if (a.error) return `; alert pass failed (reaping was not affected): ${a.error}`;
  if (!a.started && !a.cleared && !a.delivered && !a.failed) return '';
  return `; alerts: ${a.started} started firing, ${a.cleared} cleared, webhook ${a.delivered} delivered, ${a.failed} failed`;
}

/** A pass that changed a job, or whose alert part did anything or failed, is logged; a quiet one is not. */
export function worthLogging(r: MaintenancePassReport): boolean {
  const a = r.alerts;
  return r.requeued.length + r.failed.length + r.deferred.length + r.held.length + a.started + a.cleared + a.delivered + a.failed > 0 || a.error !== undefined || r.clockStepBack !== undefined;
}
