/** The embedded database's files on disk, for the commands that look at them (backup, doctor). */
import { existsSync, statSync } from 'node:fs';
import { filePath } from '../runtime/file-url.ts';
import { UsageError } from '../core/args.ts';

/**
 * The path of an embedded database that already exists. These commands must
 * not create an empty database where the operator mistyped the path.
 */
export function existingDatabaseFile(url: string, verb: string): string {
  if (!url.startsWith('file:')) {
    throw new UsageError(`can only ${verb} an embedded database (file:); for ${url.split(':')[0]}:// use the provider's own backups and checks`);
  }
  const path = filePath(url);
  if (!existsSync(path)) throw new UsageError(`no database file at ${path} (set LEASEHOLD_DATABASE_URL or --database-url)`);
  return path;
}

/** Size of a file in bytes, 0 when it does not exist (a WAL after a clean close). */
export function fileSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}
