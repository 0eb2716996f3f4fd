/**
 * `leasehold audit`: who changed what on a running server, newest first
 * (GET /api/v1/audit; the admin or the read-only token).
 *
 *   leasehold audit [--actor NAME] [--action A] [--queue Q] [--limit N] [--before ID] [--json]
 */
import type { Config } from '../core/config.ts';
import { UsageError, type CommandFlag } from '../core/args.ts';
import { operatorServer, URL_FLAG } from './server-api.ts';
import { cell, table } from './table.ts';

export const AUDIT_FLAGS: CommandFlag[] = [
  URL_FLAG,
  { flag: '--json', help: "print the API's answer as JSON", boolean: true },
  { flag: '--actor', help: 'only entries by this operator or token name' },
  { flag: '--action', help: 'only this action: login, login_failed, logout, queue.settings, queue.pause, queue.resume, queue.alert_thresholds, queue.indexed_fields, jobs.bulk, job.retry, job.cancel, job.requeue, job.force_requeue' },
  { flag: '--queue', help: 'only entries about this queue' },
  { flag: '--limit', help: 'entries per page (1-500, default 50)' },
  { flag: '--before', help: 'the next (older) page: entries before this id' },
];

interface Entry {
  id: string;
  at: string;
  actor: string;
  role: string;
  credential: string | null;
  source: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
  reason: string | null;
  client: string | null;
}

export async function auditCommand(config: Config, flags: Map<string, string | true>, args: string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`unexpected ${JSON.stringify(args[0])}: audit takes flags only`);
  const q = new URLSearchParams();
  for (const name of ['actor', 'action', 'queue', 'limit', 'before'] as const) {
    const v = flags.get(`--${name}`);
    if (typeof v === 'string') q.set(name, v);
  }
  const api = operatorServer('audit', config, flags);
  const page = await api.get<{ entries: Entry[]; next: string | null }>(`/audit${q.size ? `?${q}` : ''}`);
  if (flags.has('--json')) {
    console.log(JSON.stringify(page, null, 2));
    return 0;
  }
  const change = (e: Entry) => (e.before === null && e.after === null ? null : `${e.before === null ? '' : `${cell(e.before)} -> `}${cell(e.after)}`);
  console.log(
    page.entries.length === 0
      ? '(no entries match)'
      : table(
          ['id', 'at', 'who', 'role (token)', 'action', 'target', 'change', 'reason', 'from'],
          page.entries.map((e) => [e.id, e.at, e.actor, `${e.role}${e.credential ? ` (${e.credential})` : ''}`, e.action, e.target, change(e), e.reason, e.client]),
        ),
  );
  if (page.next !== null) console.error(`leasehold audit: older entries: --before ${page.next}`);
  return 0;
}
