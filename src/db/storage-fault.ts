/**
 * Faults of the storage under the database, told apart from bugs: a full
 * disk, another process holding the write lock, a read-only or damaged file.
 * They are the operator's to fix, not the client's, so the API answers 503
 * with a message that names the cause (and logs one line, no stack), and the
 * reaper says the same. Every write is one statement or one transaction, so a
 * refused write left nothing half-written; reads keep working where SQLite
 * can still read.
 */
export interface StorageFault {
  /** What went wrong and what still works, for the client and the log. */
  message: string;
  /** The SQLite code that told us (SQLITE_FULL...). */
  sqliteCode: string;
  /** Seconds a client should wait before it tries again. */
  retryAfterSeconds: number;
}

/** The storage fault behind `err` (following wrapped causes), or undefined for anything else. */
export function storageFault(err: unknown): StorageFault | undefined {
  for (let e = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('SQLITE_')) continue;
    const text = e instanceof Error ? e.message : '';
    const fault = describe(code, text);
    if (fault) return fault;
  }
  return undefined;
}

function describe(code: string, text: string): StorageFault | undefined {
  const make = (message: string, retryAfterSeconds: number) => ({ message, sqliteCode: code, retryAfterSeconds });
  // Extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE...) share their primary code's meaning.
  const primary = code.match(/^SQLITE_[A-Z]+/)![0];
  if (primary === 'SQLITE_FULL' || (primary === 'SQLITE_IOERR' && /no space|ENOSPC|disk is full/i.test(text))) {
    return make("the database's disk is full: writes are refused until space is freed (reads still work)", 30);
  }
  if (primary === 'SQLITE_BUSY' || primary === 'SQLITE_LOCKED') {
    return make('the database is locked by another writer and stayed locked past the busy timeout: retry shortly', 1);
  }
  if (primary === 'SQLITE_READONLY') return make('the database is read-only (file mode, owner or a read-only mount): writes are refused', 30);
  if (primary === 'SQLITE_NOTADB') return make('the file is not a SQLite database, or its header is damaged: restore it from a backup', 30);
  if (primary === 'SQLITE_CORRUPT') return make('the database file is damaged: restore it from a backup', 30);
  if (primary === 'SQLITE_IOERR' || primary === 'SQLITE_CANTOPEN') return make(`the database's storage failed to read or write (${code})`, 5);
  return undefined;
}
