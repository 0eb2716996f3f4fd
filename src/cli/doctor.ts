/**
 * `leasehold doctor`: one readable report on a database and the settings it
 * runs with: integrity, migration state, settings that break the lease rules
 * (server and per queue), leases that look stuck, and the database's size and
 * WAL size. Read-only: it applies no migration and changes nothing (an
 * embedded file is opened read-only, so its journal mode stays as it was).
 * Exit 1 when a check fails, 0 otherwise (warnings included); a database it
 * cannot open or reach is one line and exit 1.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, checkQueueSettings, type Config } from '../core/config.ts';
import { databaseClock } from '../core/clock.ts';
import { redactUrl } from '../core/redact.ts';
import type { CommandFlag } from '../core/args.ts';
import { existingDatabaseFile, fileSize, formatBytes } from './database-files.ts';

export const DOCTOR_FLAGS: CommandFlag[] = [
  { flag: '--json', help: 'print the report as JSON', boolean: true },
  { flag: '--full', help: 'run PRAGMA integrity_check (reads every page and index) instead of quick_check', boolean: true },
];

type Status = 'ok' | 'warn' | 'fail';

interface Check {
  name: string;
  status: Status;
  detail: string;
}

export async function doctorCommand(config: Config, flags: Map<string, string | true>): Promise<number> {
  const path = config.databaseUrl.startsWith('file:') ? existingDatabaseFile(config.databaseUrl, 'examine') : undefined;
  const [{ openDatabase, MIGRATIONS_DIR }, doctor, { createStore }, { storageFault }, { MIN_SQLITE_VERSION, readSqliteVersion, SqliteTooOld }] = await Promise.all([
    import('../runtime/node.ts'),
    import('../db/doctor.ts'),
    import('../db/store/create-store.ts'),
    import('../db/storage-fault.ts'),
    import('../db/sqlite-version.ts'),
  ]);
  const checks: Check[] = [];
  const report: Record<string, unknown> = { database: redactUrl(config.databaseUrl), checks };
  let opened: Awaited<ReturnType<typeof openDatabase>>;
  try {
    opened = await openDatabase(config, { readOnly: true });
  } catch (err) {
    // Too old a SQLite: the one finding, since nothing else can be read safely.
    const tooOld = err instanceof Error && err.cause instanceof SqliteTooOld ? err.cause : undefined;
    if (tooOld) {
      checks.push({ name: 'sqlite', status: 'fail', detail: tooOld.message });
      return finish(report, checks, flags);
    }
    // A file too damaged to open (its schema pages) is the integrity check's finding.
    const fault = storageFault(err);
    if (!fault) throw err;
    checks.push({ name: 'integrity', status: 'fail', detail: `cannot be opened: ${fault.message}` });
    return finish(report, checks, flags);
  }
  try {
    const version = await readSqliteVersion(opened.db);
    report.sqliteVersion = version;
    checks.push({ name: 'sqlite', status: 'ok', detail: `SQLite ${version} (leasehold needs ${MIN_SQLITE_VERSION} or later)` });
    const full = flags.has('--full');
    const problems = await doctor.integrityProblems(opened.db, { full, limit: 20 });
    report.integrity = { check: full ? 'integrity_check' : 'quick_check', problems };
    checks.push(
      problems.length === 0
        ? { name: 'integrity', status: 'ok', detail: `${full ? 'integrity_check' : 'quick_check'} found no problems${full ? '' : ' (--full reads every index too)'}` }
        : { name: 'integrity', status: 'fail', detail: `${problems.length} problem(s), first: ${problems[0]}; restore from a backup` },
    );

    if (problems.length > 0) {
      // Reading migrations, queues and jobs from a damaged file would only fail or mislead.
      checks.push({ name: 'data', status: 'fail', detail: 'not read: the database failed its integrity check' });
      return finish(report, checks, flags);
    }

    const known = (JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string; when: number }[] }).entries;
    const applied = await doctor.appliedMigrations(opened.db);
    // Applied means recorded by its `when`, as the migration runner counts it (src/runtime/migrate.ts), whatever its order.
    const pending = known.filter((m) => !applied.includes(m.when)).map((m) => m.tag);
    const unknown = applied.filter((when) => !known.some((m) => m.when === when)).length;
    report.migrations = { applied: applied.length, known: known.length, pending, unknownToThisVersion: unknown };
    checks.push(
      unknown > 0
        ? { name: 'migrations', status: 'fail', detail: `the database has ${unknown} migration(s) this leasehold does not know: it was used by a newer version` }
        : pending.length > 0
          ? { name: 'migrations', status: 'warn', detail: `${pending.length} not applied yet (${pending.join(', ')}): the server applies them when it starts, or run leasehold migrate` }
          : { name: 'migrations', status: 'ok', detail: `all ${known.length} applied` },
    );

    const server = checkConfig(config);
    // Per-queue overrides can only be read once the schema is current.
    const queues = pending.length === 0 ? await createStore(opened.db).queuesHealth({ now: databaseClock.now(), defaults: config }) : [];
    const queueProblems = queues.map((q) => ({ queue: q.name, ...checkQueueSettings(q.settings, (key) => `queue ${q.name} ${key}`) }));
    const errors = [...server.errors, ...queueProblems.flatMap((q) => q.errors)];
    const warnings = [...server.warnings, ...queueProblems.flatMap((q) => q.warnings)];
    report.settings = { errors, warnings };
    checks.push(
      errors.length > 0
        ? { name: 'settings', status: 'fail', detail: errors.map((e) => `${e.setting} ${e.rule}`).join('; ') }
        : warnings.length > 0
          ? { name: 'settings', status: 'warn', detail: warnings.map((w) => `${w.setting} ${w.rule}`).join('; ') }
          : { name: 'settings', status: 'ok', detail: `server settings and ${queues.length} queue(s) follow the lease rules` },
    );

    if (pending.length === 0) {
      const now = Date.now();
      const leases = await doctor.stuckLeases(opened.db, { now: databaseClock.now(), defaultGraceMs: config.graceMs });
      report.leases = leases;
      const stuck = leases.filter((l) => l.pastGrace + l.pastDeadline > 0);
      const running = leases.reduce((n, l) => n + l.running, 0);
      checks.push(
        stuck.length === 0
          ? { name: 'leases', status: 'ok', detail: `${running} running job(s), none past lease + grace or deadline` }
          : {
              name: 'leases',
              status: 'warn',
              detail: stuck
                .map((l) => `${l.queue}: ${l.pastGrace} past lease + grace${l.oldestExpiredAt !== null ? ` (oldest expired ${Math.round((now - l.oldestExpiredAt) / 1000)} s ago)` : ''}, ${l.pastDeadline} past deadline`)
                .join('; ') + ': a running reaper takes these back; none running? start the server or run leasehold reap',
            },
      );
    }

    const pages = await doctor.pageCounts(opened.db);
    const sizes = path ? { fileBytes: fileSize(path), walBytes: fileSize(`${path}-wal`) } : {};
    report.size = { ...pages, ...sizes };
    const freeShare = pages.pages > 0 ? pages.freePages / pages.pages : 0;
    const detail = `${formatBytes(pages.pages * pages.pageSize)} in ${pages.pages} pages (${Math.round(freeShare * 100)}% free)${path ? `, WAL ${formatBytes(sizes.walBytes ?? 0)}` : ''}`;
    // A WAL far larger than the database means checkpoints cannot finish: a reader that never ends.
    const walHuge = path !== undefined && (sizes.walBytes ?? 0) > Math.max(64 * 1024 * 1024, 2 * (sizes.fileBytes ?? 0));
    checks.push(walHuge ? { name: 'size', status: 'warn', detail: `${detail}: the WAL is not being checkpointed (a long-lived reader?)` } : { name: 'size', status: 'ok', detail });
  } finally {
    opened.close();
  }
  return finish(report, checks, flags);
}

function finish(report: Record<string, unknown>, checks: Check[], flags: Map<string, string | true>): number {
  if (flags.has('--json')) console.log(JSON.stringify(report, null, 2));
  else {
    console.log(`leasehold doctor: ${report.database}`);
    for (const c of checks) console.log(`${c.status.padEnd(5)} ${c.name.padEnd(11)} ${c.detail}`);
  }
  return checks.some((c) => c.status === 'fail') ? 1 : 0;
}
