/**
 * Redriving dead letters from the command line, against a running server
 * (POST /api/v1/queues/:queue/redrive, whose plan and redrive are the
 * engine's, src/engine/redrive.ts, as the dashboard's):
 *
 *   leasehold jobs redrive --queue DEAD [--from Q] [--ids 1,2,3] [--limit N] [--dry-run] --reason R
 *
 * --dry-run prints the dead letters it would send back (and how many match)
 * and changes nothing; the real run prints how many went back, to which
 * queues. A reason is required unless --dry-run (a usage error naming it,
 * exit 2, before anything is sent); the server audits the run with it.
 */
import { UsageError, type CommandFlag } from '../core/args.ts';
import { REDRIVE_NEEDS_REASON } from '../engine/redrive.ts';
import type { ServerApi } from './server-api.ts';
import { plural, relative, table } from './table.ts';

type Flags = Map<string, string | true>;

export const REDRIVE_FLAGS: CommandFlag[] = [
  { flag: '--from', help: 'redrive: only the dead letters that came from this queue' },
  { flag: '--ids', help: 'redrive: only these dead letters, by job id (comma-separated: 1,2,3)' },
];

const print = (value: unknown) => console.log(typeof value === 'string' ? value : JSON.stringify(value, null, 2));

const text = (flags: Flags, name: string): string | undefined => {
  const v = flags.get(name);
  if (v === true) throw new UsageError(`${name} needs a value`);
  return v;
};

/** --ids 1,2,3: job ids as the API takes them (strings of digits). */
function idsOf(flags: Flags): string[] | undefined {
  const v = text(flags, '--ids');
  if (v === undefined) return undefined;
  const ids = v.split(',').map((s) => s.trim());
  if (ids.length === 0 || ids.some((id) => !/^[1-9][0-9]{0,15}$/.test(id))) throw new UsageError(`--ids must be job ids separated by commas (1,2,3), got ${JSON.stringify(v)}`);
  return ids;
}

export async function redriveCommand(api: ServerApi, flags: Flags, p: { actor: string; json: boolean }): Promise<number> {
  const deadLetterQueue = text(flags, '--queue');
  if (!deadLetterQueue) throw new UsageError('jobs redrive needs --queue: the dead-letter queue whose jobs to send back');
  for (const f of ['--status', '--force', '--canary', '--after', '--order'] as const) if (flags.has(f)) throw new UsageError(`${f} is not for jobs redrive`);
  const dryRun = flags.has('--dry-run');
  const reason = text(flags, '--reason');
  if (!dryRun && !reason) throw new UsageError(`jobs redrive needs --reason: ${REDRIVE_NEEDS_REASON}; or --dry-run to see what it would send back`);
  const limitText = text(flags, '--limit');
  if (limitText !== undefined && !/^[0-9]{1,9}$/.test(limitText)) throw new UsageError('--limit must be a whole number');
  const fromQueue = text(flags, '--from');
  const ids = idsOf(flags);
  const body = {
    ...(dryRun ? { dryRun: true } : {}),
    ...(limitText !== undefined ? { limit: Number(limitText) } : {}),
    ...(fromQueue ? { fromQueue } : {}),
    ...(ids ? { ids } : {}),
    ...(reason ? { reason } : {}),
    actor: p.actor,
  };
  const answer = await api.post<any>(`/queues/${encodeURIComponent(deadLetterQueue)}/redrive`, body);
  if (p.json) return print(answer), 0;
  const matching = `${answer.matching >= 100_000 ? 'at least ' : ''}${answer.matching} matching dead ${answer.matching === 1 ? 'letter' : 'letters'} in ${answer.deadLetterQueue}${fromQueue ? ` from queue ${fromQueue}` : ''}`;
  if (answer.dryRun) {
    const now = Date.now();
    if (answer.jobs.length > 0) {
      print(
        table(
          ['id', 'back to queue', 'attempt', 'died', 'dead-lettered', 'last error'],
          answer.jobs.map((j: any) => [j.id, j.queue, `${j.attempt}/${j.maxAttempts}`, j.died, relative(j.deadLetteredAt, now), j.lastError]),
        ),
      );
    }
    print(`dry run: ${matching}; ${answer.jobs.length} would be sent back to their queues, pending now with fresh attempts (limit ${answer.limit}). Nothing changed.`);
    return 0;
  }
  const where = answer.movedTo.map((m: { queue: string; jobs: number }) => `${m.jobs} to ${m.queue}`).join(', ');
  print(`${plural(answer.changed, 'job')} sent back${where ? ` (${where})` : ''}, pending now with fresh attempts, of ${matching} (limit ${answer.limit})${answer.ids.length ? `: ${answer.ids.join(' ')}` : ''}`);
  return 0;
}
