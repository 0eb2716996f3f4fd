/**
 * Checks an embedded database file before SQLite opens it, so a start that
 * cannot work fails with one line that says why, not a driver's error code
 * or a server that starts and then fails every write: a missing folder, a
 * file (or its WAL) this user cannot read or write, a read-only mount.
 * A missing file in an existing folder is a first start: SQLite creates it.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function checkDatabaseFile(path: string): void {
  if (path === ':memory:' || path === '') return;
  const file = resolve(path);
  const folder = dirname(file);
  if (!existsSync(folder)) throw new Error(`the folder ${folder} does not exist (create it, or point LEASEHOLD_DATABASE_URL elsewhere)`);
  if (!existsSync(file)) {
    need(folder, constants.W_OK, `cannot create ${file}: the folder is not writable by this user`);
    return;
  }
  if (statSync(file).isDirectory()) throw new Error(`${file} is a folder, not a database file`);
  need(file, constants.R_OK, `cannot read ${file}: check its owner and mode`);
  // The WAL and shared-memory files sit beside it and are written on every commit.
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    if (existsSync(f)) need(f, constants.W_OK, `${f} is read-only (file mode, owner or a read-only mount): leasehold must write to its database`);
  }
  need(folder, constants.W_OK, `the folder ${folder} is not writable: SQLite keeps its WAL file beside the database`);
}

function need(path: string, mode: number, message: string): void {
  try {
    accessSync(path, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'EROFS' ? `${path} is on a read-only file system: leasehold must write to its database` : message);
  }
}
