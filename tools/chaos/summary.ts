/** The end-of-run summary, as a table a person can read. */
import type { LatencyStats, Report } from './check.ts';
import type { OperatorReport } from './operator.ts';

type Full = Report & { seed: number; durationMs: number; serverStarts: number[]; workerProcesses: number; plan: { faultsHash: string; jobsHash: string }; operator: OperatorReport };

export function printSummary(r: Full, out: (line: string) => void) {
  const rows: [string, string][] = [];
  const section = (title: string) => rows.push([`— ${title}`, '']);
  const row = (k: string, v: unknown) => rows.push([`  ${k}`, String(v)]);
  const kv = (m: Record<string, number>) => Object.entries(m).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ') || '-';
  const ms = (x: number | null) => (x === null ? '-' : `${x} ms`);
  const lat = (s: LatencyStats, bound: number) => `n=${s.count}  p50 ${ms(s.p50)}  p90 ${ms(s.p90)}  max ${ms(s.max)}  over bound ${s.overBound}${s.affectedByOutage ? ` (+${s.affectedByOutage} during a server outage)` : ''}  (bound ${bound} ms)`;

  section('run');
  row('seed / fault schedule hash / job plan hash', `${r.seed} / ${r.plan.faultsHash} / ${r.plan.jobsHash}`);
  row('duration', `${(r.durationMs / 1000).toFixed(1)} s`);
  row('worker processes started', r.workerProcesses);
  row('server starts', r.serverStarts.join(' + '));
  section('jobs');
  row('acknowledged enqueues / in database', `${r.jobs.acked} / ${r.jobs.total}`);
  row('completed', r.jobs.completed);
  row('failed (by stated reason)', `${r.jobs.failed}${r.jobs.failed ? `: ${kv(r.jobs.failedBy)}` : ''}`);
  row('left running / pending / other', kv(r.jobs.other));
  row('claims', r.claims);
  row('events', kv(r.events));
  row('reaped (by reason)', kv(r.reapedBy));
  row('stale writes rejected', r.staleWritesRejected);
  section('faults');
  row('planned / skipped', `${r.faults.planned} / ${r.faults.skipped}`);
  row('injected', kv(r.faults.injected));
  row('worker kills with a job in flight', r.faults.killsMidJob);
  row('handler behaviours run', kv(r.behavioursRun));
  row('worker events', kv(r.workerEvents));
  section('operator (admin API)');
  row("onLost 'hold' jobs held / holds / released / failed by hand", `${r.held.jobsHeld} / ${r.held.holds} / ${r.held.releasedByOperator} / ${r.held.failedByOperator}`);
  row("holds by reason (the lost-attempt path)", Object.entries(r.held.byReason).map(([k, n]) => `${k} ${n}`).join(', ') || 'none');
  const c = r.operator.canary;
  row('canary runs started / dry runs with nothing to take', `${c.started} / ${c.nothingToTake}`);
  row('canary requeued / failed for good / skipped', `${c.requeued} / ${c.failedForGood} / ${c.skipped}`);
  row('canary runs ended', `${kv(c.states)}${Object.keys(c.stopReasons).length ? ` (stopped: ${kv(c.stopReasons)})` : ''}`);
  if (c.errors.length) row('canary calls refused', c.errors.slice(0, 3).join('; '));
  section('side effects (workers\' files)');
  row('plain handler runs', `${r.plainRuns.total} (${r.plainRuns.jobsRunMoreThanOnce} jobs ran more than once, ${r.plainRuns.extraRuns} extra runs, ${r.plainRuns.overlapping} overlapping another run)`);
  for (const [cause, n] of Object.entries(r.plainRuns.extraRunsByCause).sort((a, b) => b[1] - a[1])) row(`  extra run: ${cause}`, n);
  row('overlaps excused (handler could not be stopped)', kv(r.plainRuns.overlapsExcused));
  row('answers dropped after the server acted', kv(r.lostAnswers.dropped));
  row('claims they concerned / left for the reaper (violation)', `${r.lostAnswers.claimsConcerned} / ${r.lostAnswers.waitedForReaper}`);
  row('once() applications / jobs', `${r.once.applications} / ${r.once.jobsApplied}`);
  row('once() re-run in the documented window', r.once.reRunsDocumented);
  row('once() re-run after recorded (violation)', r.once.reRunsAfterRecorded);
  section('recovery: fault -> job reaped / claimed again');
  for (const [k, s] of Object.entries(r.recovery.reap)) row(`reaped after ${k}`, lat(s, r.recovery.boundMs));
  for (const [k, s] of Object.entries(r.recovery.reclaim)) row(`claimed again after ${k}`, lat(s, r.recovery.boundMs));
  section('clock steps (servers\' lease clock)');
  row('forward steps / reap_held right after / live leases taken (violation)', `${r.clockSteps.forward} / ${r.clockSteps.heldEvents} / ${r.clockSteps.takenFromLiveOwners}`);
  section('leasehold defects observed');
  row('unhandled rejections in workers', `${r.defects.unhandledRejections}${r.defects.unhandledRejectionSamples.length ? `: ${r.defects.unhandledRejectionSamples[0]!.slice(0, 140)}` : ''}`);
  row('processes that exited unexpectedly', r.defects.unexpectedExits.length);
  section('verdict');
  row('violations', r.violations.length);
  for (const v of r.violations.slice(0, 30)) row('  !', v);
  const width = Math.min(60, Math.max(...rows.map(([k]) => k.length)));
  for (const [k, v] of rows) out(v === '' ? k : `${k.padEnd(width)}  ${v}`);
}
