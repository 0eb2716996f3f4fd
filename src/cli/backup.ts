/**
 * `leasehold backup FILE`: a consistent copy of the embedded database while
 * the server keeps serving (src/db/backup.ts), written beside FILE and renamed
 * into place only when complete and checked, so FILE is never half a backup.
 *
 * The copy holds everything the database does, so it is no easier to read:
 * it is created with the database file's own mode (a 0600 database gives a
 * 0600 backup; the umask may narrow it, nothing widens it), and created
 * exclusively under a random name, so nothing already at that name (a file,
 * a symlink planted to point elsewhere) is written through.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../core/config.ts';
import { redactUrl } from '../core/redact.ts';
import { UsageError, type CommandFlag } from '../core/args.ts';
import { existingDatabaseFile, formatBytes } from './database-files.ts';

export const BACKUP_FLAGS: CommandFlag[] = [{ flag: '--force', help: 'replace FILE if it exists', boolean: true }];

export const BACKUP_DETAILS = `Copies the database named by LEASEHOLD_DATABASE_URL (or --database-url) into FILE as one
consistent snapshot, safe while the server runs. Restore: stop the server, move the
database file away (with its -wal and -shm files), copy FILE in its place, start.`;

export async function backupCommand(config: Config, flags: Map<string, string | true>, target: string | undefined): Promise<number> {
  if (!target) throw new UsageError('name the backup file: leasehold backup FILE');
  const source = existingDatabaseFile(config.databaseUrl, 'back up');
  const file = resolve(target);
  if (file === resolve(source)) throw new UsageError('the backup file must not be the database itself');
  if (existsSync(file) && !flags.has('--force')) throw new UsageError(`${file} exists: choose another name or pass --force`);
  const partial = `${file}.partial-${randomBytes(8).toString('hex')}`;

  const [{ openDatabase }, { backupInto }, { integrityProblems }, { openLibsql }] = await Promise.all([
    import('../runtime/node.ts'),
    import('../db/backup.ts'),
    import('../db/doctor.ts'),
    import('../runtime/libsql.ts'),
  ]);
  const opened = await openDatabase(config, { readOnly: true });
  try {
    // VACUUM INTO fills an empty file it finds, keeping its mode; 'wx' (O_CREAT | O_EXCL) refuses a name already taken, a dangling symlink too.
    closeSync(openSync(partial, 'wx', statSync(source).mode & 0o777));
    try {
      await backupInto(opened.db, partial);
    } catch (err) {
      rmSync(partial, { force: true });
      throw err;
    }
  } finally {
    opened.close();
  }
  // Check the copy before it takes FILE's name.
  const copy = await openLibsql(`file:${partial}`, undefined, { readOnly: true });
  let problems: string[];
  try {
    problems = await integrityProblems(copy.db, { full: false, limit: 5 });
  } finally {
    copy.close();
  }
  for (const leftover of [`${partial}-wal`, `${partial}-shm`]) rmSync(leftover, { force: true });
  if (problems.length > 0) {
    rmSync(partial, { force: true });
    console.error(`leasehold backup: the copy failed its check (${problems[0]}); nothing was written to ${file}`);
    return 1;
  }
  renameSync(partial, file);
  console.log(`leasehold: backed up ${redactUrl(config.databaseUrl)} to ${file} (${formatBytes(statSync(file).size)})`);
  return 0;
}
