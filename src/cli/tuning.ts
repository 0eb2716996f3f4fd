/**
 * What-if tuning from the command line, against a running server (GET
 * /api/v1/queues/:queue/tuning/what-if, the engine's replay, as the
 * dashboard's tuning page shows it):
 *
 *   leasehold tuning what-if --queue Q [--lease-ms N] [--grace-ms N] [--heartbeat-ms N] [--window-ms N] [--json]
 *
 * Prints today's settings beside the candidate's: how many healthy jobs
 * each would have taken back (false reaps, with the jobs the evidence
 * names), and how long after its last renewal a real zombie would have been
 * recovered. A candidate flag left out keeps the queue's value today. Here
 * --lease-ms, --grace-ms and --heartbeat-ms are the candidate's, not the
 * server settings of the same name. A flag that is not a whole number is a
 * usage error (exit 2, nothing sent); the range and the heartbeat-under-
 * lease rule are the server's (exit 1 with its message).
 */
import { UsageError, type CommandFlag } from '../core/args.ts';
import type { Config } from '../core/config.ts';
import type { Spread, WhatIfOutcome, WhatIfReport } from '../core/what-if.ts';
import { operatorServer, URL_FLAG } from './server-api.ts';
import { facts, fmtDuration, plural, table } from './table.ts';

type Flags = Map<string, string | true>;

export const TUNING_FLAGS: CommandFlag[] = [
  URL_FLAG,
  { flag: '--json', help: "print the API's answer as JSON", boolean: true },
  { flag: '--queue', help: 'what-if: the queue whose evidence to replay (required)' },
  { flag: '--lease-ms', help: "what-if: the candidate lease, ms (default: the queue's today)" },
  { flag: '--grace-ms', help: "what-if: the candidate grace, ms (default: the queue's today)" },
  { flag: '--heartbeat-ms', help: "what-if: the candidate heartbeat interval, ms, under the lease (default: the queue's today)" },
  { flag: '--window-ms', help: 'what-if: how far back to replay, ms (default 1 h; the evidence is kept a day)' },
];

export const TUNING_DETAILS = `subcommands:
  what-if --queue Q          the window's heartbeat silences, reaper takes and workers' blocks
                             replayed against the queue's lease, grace and heartbeat today and a
                             candidate (--lease-ms, --grace-ms, --heartbeat-ms: here the candidate's,
                             not server settings): false reaps (healthy jobs taken back) and how
                             late real zombies are recovered, for each`;

const CANDIDATE: [flag: string, field: string][] = [
  ['--lease-ms', 'leaseMs'],
  ['--grace-ms', 'graceMs'],
  ['--heartbeat-ms', 'heartbeatMs'],
  ['--window-ms', 'windowMs'],
];

const print = (value: unknown) => console.log(typeof value === 'string' ? value : JSON.stringify(value, null, 2));

const spreadText = (s: Spread | null, signed = false) =>
  s === null ? '-' : [s.medianMs, s.maxMs].map((ms) => (signed && ms > 0 ? '+' : signed && ms < 0 ? '-' : '') + fmtDuration(ms)).join(' median, ') + ' most';

/** The jobs behind the false reaps; those replayed from silences (or past the first 100) are counted, not named. */
function jobsText(o: WhatIfOutcome): string {
  const more = o.falseReaps - o.falseReapJobs.length;
  return [...o.falseReapJobs.map((j) => j.id), ...(more > 0 ? [`+${more} unnamed`] : [])].join(' ') || '-';
}

/** Today beside the candidate, then the evidence counted and the replay's notes. */
export function whatIfText(r: WhatIfReport): string {
  const rows: [string, (o: WhatIfOutcome) => unknown][] = [
    ['lease', (o) => `${o.settings.leaseMs} ms`],
    ['grace', (o) => `${o.settings.graceMs} ms`],
    ['heartbeat', (o) => `${o.settings.heartbeatMs} ms`],
    ['false reaps', (o) => o.falseReaps],
    ['jobs taken back', jobsText],
    ['false reaps avoided', (o) => o.falseReapsAvoided],
    ['zombies', (o) => o.zombies],
    ['zombie recovery', (o) => spreadText(o.recovery)],
    ['later than it was', (o) => spreadText(o.extraRecovery, true)],
  ];
  const e = r.evidence;
  return [
    table(
      ['', 'today', 'candidate'],
      rows.map(([label, show]) => [label, show(r.current), show(r.candidate)]),
    ),
    '',
    facts([
      ['queue', r.queue],
      ['window', `${fmtDuration(r.window.untilMs - 1 - r.window.sinceMs)} to ${new Date(r.window.untilMs - 1).toISOString()}`],
      ['owner-ended attempts', `${e.healthyAttempts}${e.longestHealthySilenceMs === null ? '' : `, longest silence ${fmtDuration(e.longestHealthySilenceMs)}`}`],
      ['reaper takes', `${e.reaped}: ${e.falseReapsSeen} with their owner alive (${e.falseReapsUnknownPause} of unknown pause), ${plural(e.zombiesSeen, 'zombie')}; ${e.deadlineTakes} at their deadline left out`],
      ['worker blocks', `${e.blocks}${e.longestBlockMs === null ? '' : `, longest ${fmtDuration(e.longestBlockMs)}`}`],
    ]),
    ...r.notes.map((n) => `note: ${n}`),
  ].join('\n');
}

export async function tuningCommand(config: Config, flags: Flags, words: string[]): Promise<number> {
  const [sub, extra] = words;
  if (sub !== 'what-if') throw new UsageError(sub === undefined ? 'tuning needs a subcommand: what-if --queue Q' : `unknown tuning subcommand ${JSON.stringify(sub)}: what-if --queue Q`);
  if (extra !== undefined) throw new UsageError(`unexpected ${JSON.stringify(extra)}: tuning what-if takes flags only`);
  const queue = flags.get('--queue');
  if (typeof queue !== 'string' || queue === '') throw new UsageError('tuning what-if needs --queue: the queue whose evidence to replay');
  const q = new URLSearchParams();
  for (const [flag, field] of CANDIDATE) {
    const v = flags.get(flag);
    if (v === undefined) continue;
    if (typeof v !== 'string' || !/^[0-9]{1,12}$/.test(v)) throw new UsageError(`${flag} must be a whole number of milliseconds, got ${JSON.stringify(v)}`);
    q.set(field, v);
  }
  const api = operatorServer('tuning', config, flags);
  const report = await api.get<WhatIfReport & { at: string }>(`/queues/${encodeURIComponent(queue)}/tuning/what-if${q.size ? `?${q}` : ''}`);
  print(flags.has('--json') ? report : whatIfText(report));
  return 0;
}
