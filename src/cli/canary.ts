/**
 * Canary requeues from the command line, against a running server:
 *
 *   leasehold jobs requeue --queue Q --canary K [--growth N] [--window-ms MS]
 *     [--max-failures N] [--max-stale-writes N] [--max-duplicates N]
 *     [--max-heartbeat-lag-ms MS] [--limit N] [--force] --reason R [--dry-run] [--detach]
 *   leasehold jobs canary [ID] [--cancel --reason R] [--detach]
 *
 * A start prints the run and then follows it (one line per step and the
 * end) until it is done, stopped or cancelled, unless --detach. The steps
 * are taken by the server's maintenance pass, so following only reads.
 * Exit code: 0 when done, 1 when it stopped by itself or was cancelled.
 */
import { UsageError, type CommandFlag } from '../core/args.ts';
import type { ServerApi } from './server-api.ts';
import { facts, plural, table } from './table.ts';

type Flags = Map<string, string | true>;

export const CANARY_FLAGS: CommandFlag[] = [
  { flag: '--canary', help: 'requeue --queue: a canary requeue, its first step this many jobs; each next step follows when the one before stayed healthy' },
  { flag: '--growth', help: 'canary: each next step is N times the one before (default 2)' },
  { flag: '--window-ms', help: 'canary: how long each step is watched before the next (default 60000)' },
  { flag: '--max-failures', help: "canary: failed attempts allowed among a step's jobs (default 0)" },
  { flag: '--max-stale-writes', help: "canary: stale writes refused on a step's jobs allowed (default 0)" },
  { flag: '--max-duplicates', help: 'canary: duplicate executions reported allowed (default 0)' },
  { flag: '--max-heartbeat-lag-ms', help: 'canary: the oldest heartbeat a new attempt may have (default heartbeat interval + grace)' },
  { flag: '--detach', help: 'canary: start (or show) the run and return, instead of following it to its end', boolean: true },
  { flag: '--cancel', help: 'jobs canary ID: cancel the run (needs --reason): nothing more is requeued', boolean: true },
];

const NUMBERS: [flag: string, field: string][] = [
  ['--growth', 'growth'],
  ['--window-ms', 'windowMs'],
  ['--max-failures', 'maxFailures'],
  ['--max-stale-writes', 'maxStaleWrites'],
  ['--max-duplicates', 'maxDuplicates'],
  ['--max-heartbeat-lag-ms', 'maxHeartbeatLagMs'],
  ['--limit', 'limit'],
];

const print = (value: unknown) => console.log(typeof value === 'string' ? value : JSON.stringify(value, null, 2));

function whole(flags: Flags, name: string): number | undefined {
  const v = flags.get(name);
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[0-9]{1,9}$/.test(v)) throw new UsageError(`${name} must be a whole number`);
  return Number(v);
}

/** One line of progress: the step, what it did so far, and what it waits for. */
export function canaryLine(run: any): string {
  const took = `${run.requeued} of ${run.selected} requeued${run.failedForGood ? `, ${run.failedForGood} failed for good as the reaper would` : ''}${run.skipped ? `, ${run.skipped} skipped` : ''}, ${run.remaining} left`;
  if (run.state === 'watching') return `canary run ${run.id}: step ${run.step}: ${took}; watching until ${run.watchUntil}`;
  if (run.state === 'done') return `canary run ${run.id} done after step ${run.step}: ${took}`;
  if (run.state === 'cancelled') return `canary run ${run.id} cancelled after step ${run.step} (${run.stopWhy}): ${took}`;
  return `canary run ${run.id} stopped by itself after step ${run.step} (${run.stopReason}): ${run.stopWhy}; ${took}`;
}

const exitOf = (run: any) => (run.state === 'done' ? 0 : 1);

/** Reads the run until it ends, a line whenever it moved; the exit code. */
async function follow(api: ServerApi, first: any, json: boolean): Promise<number> {
  let run = first;
  let said = canaryLine(run);
  // Each step waits for the server's pass, so a poll a few times per window is enough.
  const pollMs = Math.min(5_000, Math.max(500, Math.floor(run.windowMs / 4)));
  while (run.state === 'watching') {
    await new Promise((r) => setTimeout(r, pollMs));
    run = (await api.get<{ run: any }>(`/canary/${encodeURIComponent(run.id)}`)).run;
    const line = canaryLine(run);
    if (line !== said && !json) print(line);
    said = line;
  }
  if (json) print({ run });
  return exitOf(run);
}

/** `jobs requeue --queue Q --canary K ...`: start (or --dry-run), then follow unless --detach. */
export async function canaryStart(api: ServerApi, flags: Flags, p: { queue: string; reason: string | undefined; force: boolean; actor: string; json: boolean }): Promise<number> {
  const first = whole(flags, '--canary');
  if (first === undefined) throw new UsageError('--canary needs the size of the first step');
  if (flags.has('--status')) throw new UsageError('--status is not for a canary requeue: it takes running jobs');
  const body: Record<string, unknown> = { first, actor: p.actor, ...(p.reason ? { reason: p.reason } : {}), ...(p.force ? { force: true } : {}), ...(flags.has('--dry-run') ? { dryRun: true } : {}) };
  for (const [flag, field] of NUMBERS) {
    const v = whole(flags, flag);
    if (v !== undefined) body[field] = v;
  }
  const answer = await api.post<any>(`/queues/${encodeURIComponent(p.queue)}/canary`, body);
  if (answer.dryRun) {
    if (p.json) return print(answer), 0;
    if (answer.hold) print(`expired leases are left alone for now: ${answer.hold.why}`);
    print(`dry run: a canary requeue would take ${plural(answer.selected, 'running job')} of queue ${answer.queue}${answer.force ? ' (by force)' : ' the reaper would take back now'} in steps of ${answer.steps.join(', ') || 'nothing'}. Nothing started.`);
    return 0;
  }
  if (!p.json || flags.has('--detach')) print(p.json ? answer : canaryLine(answer.run));
  if (flags.has('--detach')) return 0;
  return follow(api, answer.run, p.json);
}

/** `jobs canary [ID] [--cancel --reason R]`: the latest runs, one run (followed unless --detach or ended), or its cancel. */
export async function canaryCommand(api: ServerApi, flags: Flags, id: string | undefined, p: { reason: string | undefined; actor: string; json: boolean }): Promise<number> {
  if (id === undefined) {
    if (flags.has('--cancel')) throw new UsageError('--cancel needs the run id: jobs canary ID --cancel --reason R');
    const answer = await api.get<{ runs: any[] }>('/canary');
    if (p.json) return print(answer), 0;
    print(
      answer.runs.length === 0
        ? '(no canary runs)'
        : table(
            ['id', 'queue', 'state', 'step', 'requeued', 'skipped', 'left', 'reason', 'why it ended'],
            answer.runs.map((r) => [r.id, r.queue, r.state, r.step, `${r.requeued}/${r.selected}`, r.skipped, r.remaining, r.reason, r.stopWhy]),
          ),
    );
    return 0;
  }
  if (flags.has('--cancel')) {
    if (!p.reason) throw new UsageError('--cancel needs --reason (kept in the audit trail)');
    const answer = await api.post<{ run: any }>(`/canary/${encodeURIComponent(id)}/cancel`, { reason: p.reason, actor: p.actor });
    print(p.json ? answer : canaryLine(answer.run));
    return 0;
  }
  const answer = await api.get<{ run: any }>(`/canary/${encodeURIComponent(id)}`);
  if (p.json && (flags.has('--detach') || answer.run.state !== 'watching')) return print(answer), exitOf(answer.run);
  const r = answer.run;
  if (!p.json) {
    print(
      facts([
        ['run', r.id],
        ['queue', r.queue],
        ['state', r.state],
        ['force', r.force ? 'yes' : 'no'],
        ['steps', `first ${r.first}, each next ${r.growth}x, watched ${r.windowMs} ms`],
        ['stops at', `failures > ${r.maxFailures}, stale writes > ${r.maxStaleWrites}, duplicates > ${r.maxDuplicates}, heartbeat lag > ${r.maxHeartbeatLagMs} ms`],
        ['started by', `${r.actor}: ${r.reason}`],
      ]),
    );
    print(table(['at', 'decision', 'step', 'reason', 'message'], r.events.map((e: any) => [e.at, e.type, e.step, e.reason, e.message])));
    print(canaryLine(r));
  }
  if (flags.has('--detach') || r.state !== 'watching') return exitOf(r);
  return follow(api, r, p.json);
}
