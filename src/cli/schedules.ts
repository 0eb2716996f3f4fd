/**
 * `leasehold schedules`: recurring jobs on a running server (admin API
 * /schedules). The server checks everything (cron, time zone, names); its
 * refusal is printed as one line and the exit code is 1.
 *
 *   leasehold schedules [list] | show N | pause N | resume N | delete N
 *   leasehold schedules add N --queue Q (--cron EXPR [--tz ZONE] | --every MS) [--payload JSON] [--paused]
 *     [--catch-up latest|all|none] [--catch-up-window-ms MS] [--overlap allow|skip]
 */
import type { Config } from '../core/config.ts';
import { UsageError, type CommandFlag } from '../core/args.ts';
import { operatorServer, URL_FLAG } from './server-api.ts';
import { table } from './table.ts';

type Flags = Map<string, string | true>;

export const SCHEDULES_FLAGS: CommandFlag[] = [
  URL_FLAG,
  { flag: '--json', help: "print the API's answer as JSON", boolean: true },
  { flag: '--queue', help: 'add: the queue its jobs go to' },
  { flag: '--cron', help: 'add: a cron expression, such as "0 9 * * MON-FRI"' },
  { flag: '--tz', help: 'add: the IANA time zone the cron expression is read in (default UTC)' },
  { flag: '--every', help: 'add: run every this many ms instead of a cron expression' },
  { flag: '--payload', help: 'add: the JSON payload of each job (default null)' },
  { flag: '--paused', help: 'add: create it paused', boolean: true },
  { flag: '--catch-up', help: "add: missed runs: latest (default), all (within --catch-up-window-ms), none" },
  { flag: '--catch-up-window-ms', help: "add: with --catch-up all, how far back (default 1 hour, at most 7 days)" },
  { flag: '--overlap', help: "add: allow (default), or skip a run while the previous run's job is pending or running" },
];

export const SCHEDULES_DETAILS = `subcommands:
  list (default)             every schedule: queue, timing, next run, last run
  show N                     one schedule and its next runs
  add N --queue Q (--cron EXPR [--tz ZONE] | --every MS) [--payload JSON] [--paused]
      [--catch-up latest|all|none] [--catch-up-window-ms MS] [--overlap allow|skip]
  pause N | resume N         stop / restart it (resuming runs from now, skipping what was missed)
  delete N                   delete it (the jobs it enqueued stay)
The reaper pass enqueues each due occurrence once; after a gap, only the latest missed one.`;

const str = (flags: Flags, name: string) => (typeof flags.get(name) === 'string' ? (flags.get(name) as string) : undefined);
const timing = (s: any) => (s.cron ? `${s.cron} (${s.timeZone ?? 'UTC'})` : `every ${s.intervalMs} ms`);

export async function schedulesCommand(config: Config, flags: Flags, args: string[]): Promise<number> {
  const [sub = 'list', name, ...rest] = args;
  if (rest.length > 0) throw new UsageError(`schedules ${sub}: unexpected ${JSON.stringify(rest[0])}`);
  const api = operatorServer('schedules', config, flags);
  const json = flags.has('--json');
  const print = (value: unknown) => console.log(typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  if (sub === 'list') {
    if (name) throw new UsageError('schedules list takes no name');
    const { schedules } = await api.get<{ schedules: any[] }>('/schedules');
    if (json) return print({ schedules }), 0;
    print(
      schedules.length === 0
        ? '(no schedules)'
        : table(['name', 'queue', 'timing', 'paused', 'next run', 'last run'], schedules.map((s) => [s.name, s.queue, timing(s), s.paused ? 'yes' : 'no', s.paused ? '—' : s.nextRunAt, s.lastRunAt ?? '—'])),
    );
    return 0;
  }
  if (!['show', 'add', 'pause', 'resume', 'delete'].includes(sub)) throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}: list, show, add, pause, resume or delete`);
  if (!name) throw new UsageError(`schedules ${sub} needs a schedule name`);
  const path = `/schedules/${encodeURIComponent(name)}`;
  let schedule: any;
  if (sub === 'show') schedule = (await api.get<{ schedule: any }>(path)).schedule;
  else if (sub === 'pause' || sub === 'resume') schedule = (await api.patch<{ schedule: any }>(path, { paused: sub === 'pause' })).schedule;
  else if (sub === 'delete') {
    const answer = await api.delete<{ deleted: string }>(path);
    return print(json ? answer : `schedule ${answer.deleted} deleted (the jobs it enqueued stay)`), 0;
  } else {
    const every = str(flags, '--every');
    if (every !== undefined && !/^[0-9]{1,15}$/.test(every)) throw new UsageError('--every takes a number of milliseconds');
    let payload: unknown = null;
    const raw = str(flags, '--payload');
    if (raw !== undefined) {
      try {
        payload = JSON.parse(raw);
      } catch {
        throw new UsageError('--payload must be JSON, such as \'{"report": "daily"}\'');
      }
    }
    const body = {
      name,
      queue: str(flags, '--queue') ?? '',
      ...(str(flags, '--cron') !== undefined ? { cron: str(flags, '--cron') } : {}),
      ...(str(flags, '--tz') !== undefined ? { timeZone: str(flags, '--tz') } : {}),
      ...(every !== undefined ? { intervalMs: Number(every) } : {}),
      payload,
      ...(flags.has('--paused') ? { paused: true } : {}),
      // The server checks the values and names a bad one.
      ...(str(flags, '--catch-up') !== undefined ? { catchUp: str(flags, '--catch-up') } : {}),
      ...(str(flags, '--catch-up-window-ms') !== undefined ? { catchUpWindowMs: Number(str(flags, '--catch-up-window-ms')) } : {}),
      ...(str(flags, '--overlap') !== undefined ? { overlap: str(flags, '--overlap') } : {}),
    };
    schedule = (await api.post<{ schedule: any }>('/schedules', body)).schedule;
  }
  if (json) return print({ schedule }), 0;
  print(
    table(
      ['field', 'value'],
      [
        ['name', schedule.name],
        ['queue', schedule.queue],
        ['timing', timing(schedule)],
        ['paused', schedule.paused ? 'yes' : 'no'],
        ['policies', `catch-up ${schedule.catchUp}, overlap ${schedule.overlap}`],
        ['skipped', `${schedule.skipped.missed} missed, ${schedule.skipped.overlap} overlapping`],
        ['next runs', schedule.nextRuns.slice(0, 3).join(', ') || '—'],
        ['last run', schedule.lastRunAt ?? '—'],
        ['last job', schedule.lastJobId ?? '—'],
      ],
    ),
  );
  return 0;
}
