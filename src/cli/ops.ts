/**
 * The operator's commands, against a running server (src/cli/server-api.ts):
 *
 *   leasehold jobs list [--queue Q] [--status S] [--limit N] [--after ID] [--order asc] [--where 'PATH OP VALUE' ...]
 *   leasehold jobs show ID
 *   leasehold jobs dependencies ID
 *   leasehold jobs retry|cancel|requeue ID [--reason R] [--force] [--dry-run: requeue only]
 *   leasehold jobs retry|cancel|requeue --queue Q [--status S] [--dry-run] [--limit N] --reason R [--force]
 *   leasehold jobs held [--queue Q] | release|complete|fail ID --reason R [--result JSON: complete only]
 *   leasehold jobs requeue --queue Q --canary K [--growth N] [--window-ms MS] ... --reason R [--force] [--detach]
 *   leasehold jobs canary [ID] [--cancel --reason R] [--detach]   (src/cli/canary.ts)
 *   leasehold jobs redrive --queue DEAD [--from Q] [--ids 1,2,3] [--limit N] [--dry-run] --reason R   (src/cli/redrive.ts)
 *   leasehold queues [list] | show Q | pause Q | resume Q | settings Q [key=value|key=null ...] | indexed-fields Q [PATH ...|none] | delete Q [--purge]
 *   leasehold workers [--queue Q] [--alive | --dead]
 *
 * Readable tables by default, the API's answer with --json. The server
 * decides every action (guards, cap, 409s); an error it gives is printed as
 * one line with its code and message, and the exit code is 1.
 */
import { userInfo } from 'node:os';
import type { Config } from '../core/config.ts';
import { lines, UsageError, type CommandFlag } from '../core/args.ts';
import { MAX_WHERE_CLAUSES, WHERE_SCAN_WINDOW } from '../core/job-filter.ts';
import { operatorServer, URL_FLAG, type ServerApi } from './server-api.ts';
import { facts, plural, relative, table } from './table.ts';
import { CANARY_FLAGS, canaryCommand, canaryStart } from './canary.ts';
import { REDRIVE_FLAGS, redriveCommand } from './redrive.ts';
import { forceRuleProblem, requeueText, type RequeueDoneText } from '../engine/operator-actions.ts';
import { HELD_ACTIONS, HELD_NEEDS_REASON, type HeldAction } from '../core/held.ts';
import type { DependencyLinkWire, JobDependenciesWire } from '../core/wire.ts';

type Flags = Map<string, string | true>;

const JSON_FLAG: CommandFlag = { flag: '--json', help: "print the API's answer as JSON", boolean: true };

export const JOBS_FLAGS: CommandFlag[] = [
  URL_FLAG,
  JSON_FLAG,
  { flag: '--queue', help: 'list: only this queue; retry/cancel/requeue without an id: the queue to act on in bulk; redrive: the dead-letter queue' },
  { flag: '--status', help: 'list: only this status; bulk: failed or cancelled (retry, default failed), pending (cancel), running (requeue)' },
  { flag: '--limit', help: 'list: jobs per page (1-500, default 50); bulk and redrive: act on at most N jobs (never more than the server cap)' },
  { flag: '--after', help: 'list: the next page, after this job id' },
  { flag: '--order', help: 'list: asc for oldest first (default newest first)' },
  {
    flag: '--where',
    help: `list: only jobs whose payload or result match, e.g. 'payload.customerId = 42', 'payload.name ^= "Ac"', 'result.total >= 10', 'payload.email exists'; give it up to ${MAX_WHERE_CLAUSES} times, all must hold (docs/http-api.md)`,
    repeatable: true,
  },
  { flag: '--reason', help: 'why, kept in the audit trail (a bulk action, a redrive and a forced requeue need one)' },
  { flag: '--dry-run', help: 'bulk and redrive: list the jobs it would touch and what it would do; requeue ID: say what it would do (requeue, fail for good, or nothing and why); change nothing', boolean: true },
  { flag: '--force', help: 'requeue: also take a live lease (the job may run twice; its worker\'s writes are refused)', boolean: true },
  { flag: '--result', help: 'complete (a held job): the result to record, as JSON' },
  ...CANARY_FLAGS,
  ...REDRIVE_FLAGS,
];

export const JOBS_DETAILS = `subcommands:
  list                       jobs newest first, filtered by --queue, --status and --where
                             (a page with --where reads at most ${WHERE_SCAN_WINDOW.toLocaleString('en-US')} jobs: it may
                             come back short, even empty; go on with --after)
  show ID                    one job: status, lease, owner, attempts, and its latest events
  dependencies ID            a flow's job (docs/flows.md): the jobs it waits for, each with
                             its status, where the edge stands and a completed one's
                             result, and the jobs that wait for it
  retry ID | cancel ID | requeue ID [--force] [--dry-run]
                             one job; requeue does what the reaper would do now
                             (requeue it, or fail it for good when its attempts
                             are spent; nothing during the hold after a server
                             restart) unless --force; --dry-run says which first
  retry | cancel | requeue --queue Q [--status S] [--dry-run] [--limit N] --reason R
                             in bulk: the queue's jobs of that status, lowest id first,
                             at most --limit and never more than the server's cap
                             (LEASEHOLD_BULK_ACTION_CAP); --dry-run lists them first
  held [--queue Q]           jobs held for a person after a lost attempt (onLost hold),
                             with the lost attempt's worker, last heartbeat and effects
  release ID | complete ID [--result JSON] | fail ID  --reason R
                             end a hold: release runs the job again; complete records
                             it done by hand; fail ends it for good (audited, reason required)
  requeue --queue Q --canary K [--growth N] [--window-ms MS] [--max-failures N] --reason R [--force]
                             a canary requeue: the first K running jobs now, then steps
                             N times larger, each after the one before stayed healthy for
                             its window (no failures, stale writes, duplicates or late
                             heartbeats past the limits); stops by itself naming why.
                             Follows the run to its end (exit 0 done, 1 stopped) unless --detach
  canary [ID] [--cancel --reason R]
                             the latest canary runs; one run (its decisions, followed
                             while it runs); --cancel: nothing more is requeued
  redrive --queue DEAD [--from Q] [--ids 1,2,3] [--limit N] [--dry-run] --reason R
                             send a dead-letter queue's jobs back to their own queues,
                             pending now with fresh attempts, lowest id first, at most
                             --limit and never more than the server's cap; --from or
                             --ids narrow it; --dry-run lists them and changes nothing;
                             audited with the reason (docs/operations.md)`;

export const QUEUES_FLAGS: CommandFlag[] = [
  URL_FLAG,
  JSON_FLAG,
  { flag: '--purge', help: "delete: also delete the queue's finished jobs (completed, failed, cancelled) with it", boolean: true },
];
export const QUEUES_DETAILS = `subcommands:
  list (default)             every queue: counts, ready, expired leases, paused
  show Q                     one queue: counts, oldest jobs, settings and overrides
  pause Q | resume Q         stop / restart claims from the queue (running jobs go on)
  settings Q [key=value ...] show, or override, leaseMs heartbeatMs graceMs maxAttempts
                             maxLostAttempts backoffBaseMs backoffMaxMs retentionMs
                             (key=null goes back to the server default);
                             maxRunning=N: at most N of the queue's jobs run at once
                             across all workers (maxRunning=null: no limit);
                             rateLimit=MAX/WINDOW_MS: at most MAX claims per window
                             (rateLimit=100/60000; rateLimit=null: no limit);
                             onLost=hold|retry: a lost attempt waits for a person, or
                             runs again (onLost=null: retry);
                             deadLetterQueue=QUEUE: jobs that fail for good are listed
                             there for jobs redrive (deadLetterQueue=null: none);
                             maxSnoozes=N: how often one job may snooze (null: 100)
  indexed-fields Q [PATH ...|none]
                             show, or replace, the payload or result paths with an index
                             of their own (at most 5, e.g. payload.customerId): an = on
                             one of them in jobs list --where reads only the matches;
                             none drops them all. Building one on a big queue holds the
                             database's write lock while it runs
  delete Q [--purge]         delete a queue that holds nothing (its settings go, audited):
                             refused while it holds pending or running jobs or a schedule
                             enqueues to it; its finished jobs go with it only with --purge`;

export const WORKERS_FLAGS: CommandFlag[] = [
  URL_FLAG,
  JSON_FLAG,
  { flag: '--queue', help: 'only workers that serve this queue' },
  { flag: '--alive', help: 'only workers seen within LEASEHOLD_WORKER_ALIVE_MS', boolean: true },
  { flag: '--dead', help: 'only workers not seen within LEASEHOLD_WORKER_ALIVE_MS', boolean: true },
];

const ACTIONS = ['retry', 'cancel', 'requeue'] as const;
type Action = (typeof ACTIONS)[number];
const DONE: Record<Action, string> = { retry: 'retried', cancel: 'cancelled', requeue: 'requeued' };
const HELD_DONE: Record<HeldAction, string> = { release: 'released (it runs again)', complete: 'completed by hand', fail: 'failed for good' };

/** Who did it, for the audit trail: cli and the local user name. */
function actor(): string {
  try {
    return `cli:${userInfo().username}`.slice(0, 200);
  } catch {
    return 'cli';
  }
}

const str = (flags: Flags, name: string): string | undefined => {
  const v = flags.get(name);
  return typeof v === 'string' ? v : undefined;
};

function wholeNumber(flags: Flags, name: string): number | undefined {
  const v = str(flags, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]{1,9}$/.test(v)) throw new UsageError(`${name} must be a whole number`);
  return Number(v);
}

function onlyPositionals(args: string[], n: number, usage: string) {
  if (args.length > n) throw new UsageError(`unexpected ${JSON.stringify(args[n])}: ${usage}`);
}

const print = (value: unknown) => console.log(typeof value === 'string' ? value : JSON.stringify(value, null, 2));

export async function jobsCommand(config: Config, flags: Flags, args: string[]): Promise<number> {
  const [sub = 'list', id] = args;
  const api = operatorServer('jobs', config, flags);
  const json = flags.has('--json');
  if (sub === 'list') {
    onlyPositionals(args, 1, 'jobs list takes flags only');
    const q = new URLSearchParams();
    for (const f of ['queue', 'status', 'after', 'order'] as const) if (str(flags, `--${f}`) !== undefined) q.set(f, str(flags, `--${f}`)!);
    if (str(flags, '--limit') !== undefined) q.set('limit', str(flags, '--limit')!);
    for (const clause of lines(flags.get('--where'))) q.append('where', clause);
    const page = await api.get<{ jobs: any[]; next: string | null }>(`/jobs${q.size ? `?${q}` : ''}`);
    if (json) return print(page), 0;
    const now = Date.now();
    print(
      page.jobs.length === 0
        ? page.next
          ? '(no jobs match on this page: a page with --where reads a bounded number of jobs; later ones may match)'
          : '(no jobs match)'
        : table(
            ['id', 'queue', 'status', 'attempt', 'owner', 'lease', 'heartbeat', 'updated', 'last error'],
            page.jobs.map((j) => [j.id, j.queue, j.status, `${j.attempt}/${j.maxAttempts}`, j.lockedBy, leaseText(j, now), relative(j.lastHeartbeatAt, now), relative(j.updatedAt, now), j.lastError]),
          ),
    );
    if (page.next) console.error(`leasehold jobs: more: --after ${page.next}`);
    return 0;
  }
  if (sub === 'show') {
    if (!id) throw new UsageError('jobs show needs a job id');
    onlyPositionals(args, 2, 'jobs show ID');
    const answer = await api.get<{ job: any; events: any[]; olderEventsNotShown: number }>(`/jobs/${encodeURIComponent(id)}`);
    if (json) return print(answer), 0;
    const j = answer.job;
    const now = Date.now();
    print(
      facts([
        ['job', j.id],
        ['queue', j.queue],
        ['status', j.status],
        ['attempt', `${j.attempt} of ${j.maxAttempts} (errored ${j.erroredAttempts}, lost ${j.lostAttempts})`],
        ['owner', j.lockedBy],
        ['lease', leaseText(j, now)],
        ['lease length', j.leaseMs === null ? null : `${j.leaseMs} ms`],
        ['last heartbeat', relative(j.lastHeartbeatAt, now)],
        ['deadline', j.deadlineAt],
        ['fencing token', j.fencingToken],
        ['idempotency key', j.idempotencyKey],
        ['available', j.availableAt],
        ['created', j.createdAt],
        ['started', j.startedAt],
        ['held', j.heldAt === null ? null : heldText(j)],
        ['last error', j.lastError],
        ['payload', JSON.stringify(j.payload)],
        ['result', j.result === null ? null : JSON.stringify(j.result)],
      ]),
    );
    const latest = answer.events.slice(-15);
    print(`\nevents (latest ${latest.length} of ${answer.events.length + answer.olderEventsNotShown}):`);
    print(table(['at', 'event', 'from -> to', 'attempt', 'actor', 'worker', 'reason'], latest.map((e) => [e.at, e.derived ? `${e.type} (from the job row)` : e.type, `${e.from ?? '-'} -> ${e.to ?? '-'}`, e.attempt, e.actor, e.workerId, e.reason ?? e.message])));
    return 0;
  }
  if (sub === 'dependencies') {
    if (!id) throw new UsageError('jobs dependencies needs a job id');
    onlyPositionals(args, 2, 'jobs dependencies ID');
    const graph = await api.get<JobDependenciesWire>(`/jobs/${encodeURIComponent(id)}/dependencies`);
    if (json) return print(graph), 0;
    const now = Date.now();
    const links = (list: DependencyLinkWire[], none: string) =>
      list.length === 0
        ? none
        : table(
            ['id', 'queue', 'status', 'edge', 'updated', 'result or last error'],
            list.map((l) => [l.id, l.queue, l.status, l.state, relative(l.updatedAt, now), l.status === 'completed' ? l.result : l.lastError]),
          );
    print(`job ${id} waits for ${plural(graph.dependencies.length, 'job')}:`);
    print(links(graph.dependencies, '(none)'));
    print(`
job ${id} is waited for by ${plural(graph.dependents.length, 'job')}:`);
    print(links(graph.dependents, '(none)'));
    return 0;
  }
  if (sub === 'held') {
    onlyPositionals(args, 1, 'jobs held takes flags only');
    const queue = str(flags, '--queue');
    const answer = await api.get<{ jobs: any[] }>(`/held-jobs${queue ? `?queue=${encodeURIComponent(queue)}` : ''}`);
    if (json) return print(answer), 0;
    const now = Date.now();
    print(
      answer.jobs.length === 0
        ? '(no job is held)'
        : table(
            ['id', 'queue', 'held', 'lost attempt', 'worker', 'last heartbeat', 'effects started / done', 'why'],
            answer.jobs.map((j) => [
              j.id,
              j.queue,
              relative(j.heldAt, now),
              j.lostAttempt?.attempt,
              j.lostAttempt?.worker,
              relative(j.lostAttempt?.lastHeartbeatAt ?? null, now),
              `${j.effects.filter((e: any) => e.state === 'started').length} / ${j.effects.filter((e: any) => e.state === 'done').length}`,
              // No lost attempt: a dependency failed (policy 'hold').
              j.lostAttempt?.why ?? `a dependency failed: jobs dependencies ${j.id}`,
            ]),
          ),
    );
    return 0;
  }
  if ((HELD_ACTIONS as readonly string[]).includes(sub)) {
    if (!id) throw new UsageError(`jobs ${sub} needs a job id`);
    onlyPositionals(args, 2, `jobs ${sub} ID --reason R`);
    const reason = str(flags, '--reason');
    if (!reason) throw new UsageError(`jobs ${sub} needs --reason: ${HELD_NEEDS_REASON}`);
    const resultText = str(flags, '--result');
    if (resultText !== undefined && sub !== 'complete') throw new UsageError('--result is for jobs complete');
    let result: unknown;
    if (resultText !== undefined) {
      try {
        result = JSON.parse(resultText);
      } catch {
        throw new UsageError('--result must be JSON (for example \'{"charged":true}\')');
      }
    }
    const body = { reason, actor: actor(), ...(resultText !== undefined ? { result } : {}) };
    const answer = await api.post<{ job: any }>(`/jobs/${encodeURIComponent(id)}/held/${sub}`, body);
    if (json) return print(answer), 0;
    print(`job ${answer.job.id} ${HELD_DONE[sub as HeldAction]}: now ${answer.job.status}`);
    return 0;
  }
  if (sub === 'redrive') {
    onlyPositionals(args, 1, 'jobs redrive takes flags only: --queue DEAD [--from Q] [--ids 1,2,3] [--limit N] [--dry-run] --reason R');
    return redriveCommand(api, flags, { actor: actor(), json });
  }
  if (sub === 'canary') {
    onlyPositionals(args, 2, 'jobs canary [ID]');
    return canaryCommand(api, flags, id, { reason: str(flags, '--reason'), actor: actor(), json });
  }
  if (!(ACTIONS as readonly string[]).includes(sub)) throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}: list, show, dependencies, retry, cancel, requeue, canary, redrive, held, release, complete or fail`);
  const action = sub as Action;
  const reason = str(flags, '--reason');
  const force = flags.has('--force');
  // The shared rule (src/engine/operator-actions.ts); its reason half the server answers, in the same words.
  const problem = forceRuleProblem({ action, force, reason });
  if (problem?.field === 'force') throw new UsageError(`--${problem.message}`);
  if (id === undefined) return bulk(api, flags, action, reason, force, json);
  onlyPositionals(args, 2, `jobs ${action} ID`);
  const bulkOnly = action === 'requeue' ? ['--limit', '--status', '--queue', '--canary'] : ['--dry-run', '--limit', '--status', '--queue', '--canary'];
  for (const f of bulkOnly) if (flags.has(f)) throw new UsageError(`${f} is for the bulk form (without a job id)`);
  const dryRun = flags.has('--dry-run');
  const body = { ...(reason ? { reason } : {}), actor: actor(), ...(force ? { force: true } : {}), ...(dryRun ? { dryRun: true } : {}) };
  const answer = await api.post<{ job?: any; requeue?: RequeueDoneText }>(`/jobs/${encodeURIComponent(id)}/${action}`, body);
  if (json) return print(answer), 0;
  // Said before acting (--dry-run) and after, in the words the dashboard uses (src/engine/operator-actions.ts).
  if (dryRun) return print(`job ${id}: a requeue now would ${requeueText(answer.requeue!)}. Nothing changed.`), 0;
  print(`job ${answer.job.id} ${doneText(action, answer.requeue)}: now ${answer.job.status}`);
  return 0;
}

/**
 * A held job's hold, for `jobs show`: the lost attempt and the commands that
 * end the hold; or, with no lost attempt, that a dependency failed (policy
 * 'hold'), and that retrying it is what lets the flow go on.
 */
function heldText(j: { id: string; heldAt: string; lostAttempt: { worker: string | null; attempt: number; lastHeartbeatAt: string | null } | null }): string {
  const a = j.lostAttempt;
  if (a === null) return `since ${j.heldAt}: a dependency failed (policy 'hold'); retry it to let the flow go on (jobs dependencies ${j.id} names it)`;
  return `since ${j.heldAt}: the lost attempt of ${a.worker ?? '?'} (attempt ${a.attempt}, last heartbeat ${a.lastHeartbeatAt ?? 'none'}) waits for a person: jobs release|complete|fail ${j.id} --reason R`;
}

/** What a single action did, for its line: a requeue says which the reaper's rule made it, and what force went past. */
function doneText(action: Action, r: RequeueDoneText | undefined): string {
  if (action !== 'requeue' || !r) return DONE[action];
  if (r.forced) {
    const past = [r.overrodeHold ? `overrode the reaper's hold: ${r.overrodeHold.why}` : null, r.beyondBudget ? `past its budget: ${r.beyondBudget}` : null].filter(Boolean);
    return `force-requeued${past.length ? ` (${past.join('; ')})` : ''}`;
  }
  return r.action === 'fail' ? `failed for good, as the reaper would (${r.reason}): ${r.why}` : DONE.requeue;
}

async function bulk(api: ServerApi, flags: Flags, action: Action, reason: string | undefined, force: boolean, json: boolean): Promise<number> {
  const queue = str(flags, '--queue');
  if (!queue) throw new UsageError(`jobs ${action} needs a job id, or --queue for a bulk ${action}`);
  if (flags.has('--canary')) {
    if (action !== 'requeue') throw new UsageError('--canary is for requeue only');
    return canaryStart(api, flags, { queue, reason, force, actor: actor(), json });
  }
  const dryRun = flags.has('--dry-run');
  const limit = wholeNumber(flags, '--limit');
  const status = str(flags, '--status');
  const body = {
    action,
    ...(status ? { status } : {}),
    ...(dryRun ? { dryRun: true } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(reason ? { reason } : {}),
    ...(force ? { force: true } : {}),
    actor: actor(),
  };
  const answer = await api.post<any>(`/queues/${encodeURIComponent(queue)}/bulk`, body);
  if (json) return print(answer), 0;
  const what = `${answer.status} ${answer.matching === 1 ? 'job' : 'jobs'}${answer.action === 'requeue' && !answer.force ? ' the reaper would take back now' : ''}`;
  const matching = `${answer.matchingCapped ? 'at least ' : ''}${answer.matching} matching ${what} in queue ${answer.queue}`;
  // The hold after a server's restart or pause leaves expired leases alone: say until when.
  if (answer.hold) print(`expired leases are left alone for now: ${answer.hold.why}`);
  if (answer.dryRun) {
    const now = Date.now();
    const planned = answer.jobs.some((j: any) => j.requeue);
    if (answer.jobs.length > 0) {
      print(
        table(
          ['id', 'status', 'attempt', 'owner', 'lease', 'updated', ...(planned ? ['would'] : []), 'last error'],
          answer.jobs.map((j: any) => [
            j.id,
            j.status,
            `${j.attempt}/${j.maxAttempts}`,
            j.lockedBy,
            j.leaseExpiresAt ? relative(j.leaseExpiresAt, now) : null,
            relative(j.updatedAt, now),
            ...(planned ? [j.requeue ? (j.requeue.action === 'fail' ? `fail for good (${j.requeue.reason})` : 'requeue') : null] : []),
            j.lastError,
          ]),
        ),
      );
    }
    const failing = answer.jobs.filter((j: any) => j.requeue?.action === 'fail').length;
    const verb = force ? 'force-requeued' : failing > 0 ? `taken back as the reaper would (${answer.wouldChange - failing} requeued, ${failing} failed for good: their attempts are spent)` : DONE[action];
    print(`dry run: ${matching}; ${answer.wouldChange} would be ${verb} (limit ${answer.limit}, server cap ${answer.cap}). Nothing changed.`);
    return 0;
  }
  print(`${plural(answer.changed, 'job')} ${force ? 'force-requeued' : DONE[action]} of ${matching} (limit ${answer.limit}, server cap ${answer.cap})${answer.ids.length ? `: ${answer.ids.join(' ')}` : ''}`);
  return 0;
}

function leaseText(j: { status: string; leaseExpiresAt: string | null }, now: number): string | null {
  if (j.status !== 'running' || !j.leaseExpiresAt) return null;
  const at = Date.parse(j.leaseExpiresAt);
  return at >= now ? `${relative(j.leaseExpiresAt, now).replace(/^in /, '')} left` : `expired ${relative(j.leaseExpiresAt, now)}`;
}

const SETTING_KEYS = ['leaseMs', 'heartbeatMs', 'graceMs', 'maxAttempts', 'maxLostAttempts', 'backoffBaseMs', 'backoffMaxMs', 'retentionMs', 'maxRunning', 'maxSnoozes'] as const;
/** Settings without a server default: null means off, shown as "none". */
const LIMIT_KEYS: readonly string[] = ['maxRunning'];

export async function queuesCommand(config: Config, flags: Flags, args: string[]): Promise<number> {
  const [sub = 'list', name, ...rest] = args;
  const api = operatorServer('queues', config, flags);
  const json = flags.has('--json');
  if (sub === 'list') {
    onlyPositionals(args, 1, 'queues list');
    const { queues } = await api.get<{ queues: any[] }>('/queues');
    if (json) return print({ queues }), 0;
    print(queues.length === 0 ? '(no queues yet)' : queueTable(queues));
    return 0;
  }
  if (!['show', 'pause', 'resume', 'settings', 'indexed-fields', 'delete'].includes(sub)) throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}: list, show, pause, resume, settings, indexed-fields or delete`);
  if (!name) throw new UsageError(`queues ${sub} needs a queue name`);
  const path = `/queues/${encodeURIComponent(name)}`;
  if (sub === 'delete') {
    onlyPositionals(args, 2, 'queues delete Q');
    const answer = await api.delete<{ deleted: string; purgedFinishedJobs: number }>(`${path}${flags.has('--purge') ? '?purge=true' : ''}`);
    if (json) return print(answer), 0;
    print(`queue ${answer.deleted} deleted${answer.purgedFinishedJobs > 0 ? ` with ${plural(answer.purgedFinishedJobs, 'finished job')}` : ''}`);
    return 0;
  }
  if (sub === 'pause' || sub === 'resume') {
    onlyPositionals(args, 2, `queues ${sub} Q`);
    const answer = await api.post<{ queue: string; paused: boolean }>(`${path}/${sub}`);
    if (json) return print(answer), 0;
    print(`queue ${answer.queue} ${answer.paused ? 'paused: no new claims (running jobs go on)' : 'resumed: claims take its jobs again'}`);
    return 0;
  }
  if (sub === 'indexed-fields' && rest.length > 0) {
    if (rest.includes('none') && rest.length > 1) throw new UsageError('indexed-fields Q none drops them all: give none alone, or the paths to keep');
    const fields = rest[0] === 'none' ? [] : rest;
    const { queue } = await api.put<{ queue: any }>(`${path}/indexed-fields`, { fields });
    if (json) return print({ queue }), 0;
    print(indexedFieldsText(queue));
    return 0;
  }
  if (sub === 'settings' && rest.length > 0) {
    const patch: Record<string, number | string | null | { max: number; windowMs: number }> = {};
    for (const assignment of rest) {
      const onLost = /^onLost=(hold|retry|null)$/.exec(assignment);
      if (onLost) {
        patch.onLost = onLost[1] === 'null' ? null : onLost[1]!;
        continue;
      }
      const dead = /^deadLetterQueue=(.+)$/.exec(assignment);
      if (dead) {
        patch.deadLetterQueue = dead[1] === 'null' ? null : dead[1]!;
        continue;
      }
      const rate = /^rateLimit=(?:(null)|([0-9]{1,15})\/([0-9]{1,15}))$/.exec(assignment);
      if (rate) {
        patch.rateLimit = rate[1] ? null : { max: Number(rate[2]), windowMs: Number(rate[3]) };
        continue;
      }
      const m = /^([A-Za-z]+)=(null|[0-9]{1,15})$/.exec(assignment);
      if (!m || !(SETTING_KEYS as readonly string[]).includes(m[1]!)) {
        throw new UsageError(
          `${JSON.stringify(assignment)}: give key=milliseconds or key=null (maxRunning, maxSnoozes: a count), key one of ${SETTING_KEYS.join(', ')}; or rateLimit=MAX/WINDOW_MS, onLost=hold|retry, deadLetterQueue=QUEUE, each =null for none`,
        );
      }
      patch[m[1]!] = m[2] === 'null' ? null : Number(m[2]);
    }
    const { queue } = await api.patch<{ queue: any }>(`${path}/settings`, patch);
    if (json) return print({ queue }), 0;
    print(settingsText(queue));
    return 0;
  }
  onlyPositionals(args, 2, `queues ${sub} Q`);
  const { queue } = await api.get<{ queue: any }>(path);
  if (json) return print({ queue }), 0;
  if (sub === 'settings') return print(settingsText(queue)), 0;
  if (sub === 'indexed-fields') return print(indexedFieldsText(queue)), 0;
  print(queueTable([queue]));
  print(
    '\n' +
      facts([
        ['oldest running started', queue.oldestRunningStartedAt],
        ['oldest ready since', queue.oldestReadyAvailableAt],
      ]),
  );
  print('\n' + settingsText(queue));
  print('\n' + indexedFieldsText(queue));
  return 0;
}

function indexedFieldsText(queue: any): string {
  const fields: string[] = queue.indexedFields ?? [];
  return fields.length === 0 ? `queue ${queue.name}: no indexed fields` : `queue ${queue.name}: indexed fields ${fields.join(', ')}`;
}

export function queueTable(queues: any[]): string {
  return table(
    ['queue', 'pending', 'ready', 'running', 'expired', 'completed', 'failed', 'cancelled', 'paused'],
    queues.map((q) => [q.name, q.counts.pending, q.ready, q.counts.running, q.expiredLeases, q.counts.completed, q.counts.failed, q.counts.cancelled, q.paused ? 'yes' : 'no']),
  );
}

function settingsText(queue: any): string {
  const rate = queue.settings.rateLimit;
  const rateRow = [
    'rateLimit',
    rate ? `${rate.max}/${rate.windowMs}` : 'none',
    rate ? `this queue (${queue.rateUsed} used this window${queue.rateLimitedUntil ? `, claims wait until ${queue.rateLimitedUntil}` : ''})` : 'off',
  ];
  return table(
    ['setting', 'value', 'source'],
    SETTING_KEYS.map((k) => {
      const own = queue.overrides?.[k] !== undefined && queue.overrides?.[k] !== null;
      if (LIMIT_KEYS.includes(k)) return [k, queue.settings[k] ?? 'none', own ? 'this queue' : 'off'];
      return [k, queue.settings[k], own ? 'this queue' : 'server default'];
    }).concat([
      rateRow,
      ['onLost', queue.settings.onLost ?? 'retry', queue.overrides?.onLost ? 'this queue' : 'server default'],
      ['deadLetterQueue', queue.settings.deadLetterQueue ?? 'none', queue.settings.deadLetterQueue ? 'this queue' : 'off'],
    ]),
  );
}

export async function workersCommand(config: Config, flags: Flags, args: string[]): Promise<number> {
  onlyPositionals(args, 0, 'workers takes flags only');
  if (flags.has('--alive') && flags.has('--dead')) throw new UsageError('give --alive or --dead, not both');
  const api = operatorServer('workers', config, flags);
  const q = new URLSearchParams();
  if (str(flags, '--queue')) q.set('queue', str(flags, '--queue')!);
  if (flags.has('--alive')) q.set('alive', 'true');
  if (flags.has('--dead')) q.set('alive', 'false');
  const answer = await api.get<{ alive: number; workerAliveMs: number; workers: any[] }>(`/workers${q.size ? `?${q}` : ''}`);
  if (flags.has('--json')) return print(answer), 0;
  const now = Date.now();
  print(
    answer.workers.length === 0
      ? '(no worker seen in the last 24 hours)'
      : table(
          ['id', 'alive', 'last seen', 'running (reported)', 'held (expired)', 'loop blocks (longest)', 'hb failures', 'leases lost', 'queues', 'host', 'pid', 'version', 'restarts', 'started'],
          answer.workers.map((w) => [
            w.id,
            w.alive ? 'alive' : 'NOT SEEN',
            relative(w.lastSeenAt, now),
            w.runningCount,
            `${w.heldJobs} (${w.expiredLeases})`,
            // null: an SDK that does not report its counters.
            w.counters ? `${w.counters.eventLoopBlocks ?? '-'} (${w.counters.longestEventLoopBlockMs ?? '-'} ms)` : '-',
            w.counters?.heartbeatFailures ?? '-',
            w.counters?.leasesLost ?? '-',
            w.queues?.join(','),
            w.host,
            w.pid,
            w.version,
            w.restarts,
            w.startedAt,
          ]),
        ),
  );
  console.error(`leasehold workers: ${answer.alive} alive (seen within ${answer.workerAliveMs} ms)`);
  return 0;
}

