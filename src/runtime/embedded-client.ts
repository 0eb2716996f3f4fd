/**
 * The embedded database client: one libSQL connection to a local file, shaped
 * like @libsql/client's `Client` so Drizzle's libSQL driver runs on it.
 *
 * Why not @libsql/client with a `file:` URL (measured on 0.18, see
 * docs/benchmarks.md): it prepares every statement on every call, builds each
 * result row with Object.defineProperty per column (a 1,000-row RETURNING
 * took ~8x the raw statement's time), and may open several connections, each
 * starting with its own PRAGMAs (busy timeout 0, default synchronous). Here:
 * - one connection, so PRAGMAs set once hold for every statement;
 * - prepared statements are cached and reused;
 * - rows are plain objects keyed by column name, with indexed access for
 *   Drizzle's array mode through a shared prototype.
 * libSQL's calls are synchronous, so a batch runs start to end without another
 * request interleaving on the connection.
 */
import Database from 'libsql';
import type { Client, InArgs, InStatement, ResultSet, TransactionMode } from '@libsql/client';
import { requireStorableText } from '../core/errors.ts';

export type Synchronous = 'normal' | 'full';

export interface EmbeddedOptions {
  /** File path (not a URL). */
  path: string;
  /**
   * `normal` (default): in WAL mode every commit is in the OS before the call
   * returns, so it survives a crash or kill -9 of the process; a power cut can
   * lose the last commits. `full`: fsync on every commit, which also survives
   * a power cut, at roughly 0.6 ms per commit on this machine's disk.
   */
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
  /**
   * Open the file read-only (SQLite's `mode=ro`): every write is refused, and
   * the journal mode is left as it is, for tools that only look (doctor,
   * backup). Without it the connection switches the file to WAL.
   */
  readOnly?: boolean;
}

type Row = Record<string, unknown>;
const VALUES = Symbol('values');

/** One row class per column list: named fields own and enumerable, indexes on the prototype. */
function rowFactory(columns: string[]): (values: unknown[]) => Row {
  const proto: object = {};
  columns.forEach((_, i) =>
    Object.defineProperty(proto, i, {
      get(this: { [VALUES]: unknown[] }) {
        return this[VALUES][i];
      },
    }),
  );
  Object.defineProperty(proto, 'length', { value: columns.length });
  const unique = columns.map((name, i) => columns.indexOf(name) === i);
  return (values) => {
    const row = Object.create(proto) as Row & { [VALUES]: unknown[] };
    row[VALUES] = values;
    for (let i = 0; i < columns.length; i++) if (unique[i]) row[columns[i]!] = values[i];
    return row;
  };
}

interface Statement {
  reader: boolean;
  raw(on?: boolean): Statement;
  columns(): { name: string }[];
  all(args: unknown): unknown[];
  run(args: unknown): { changes: number; lastInsertRowid: number | bigint };
}

interface Cached {
  stmt: Statement;
  reader: boolean;
  columns: string[];
  makeRow: ((values: unknown[]) => Row) | undefined;
}

const CACHE_LIMIT = 500;

export function createEmbeddedClient(options: EmbeddedOptions): Client {
  const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
  const db = new Database(options.readOnly ? readOnlyUri(options.path) : options.path, { timeout: busyTimeoutMs });
  if (!options.readOnly) {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec(`PRAGMA synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  }
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
  const cache = new Map<string, Cached>();
  let closed = false;

  function prepared(sql: string): Cached {
    let entry = cache.get(sql);
    if (entry) {
      // Map order is insertion order: re-insert to keep it most recent.
      cache.delete(sql);
      cache.set(sql, entry);
      return entry;
    }
    const stmt = db.prepare(sql) as unknown as Statement;
    const reader = stmt.reader;
    if (reader) stmt.raw(true);
    const columns = reader ? stmt.columns().map((c) => c.name) : [];
    entry = { stmt, reader, columns, makeRow: reader ? rowFactory(columns) : undefined };
    cache.set(sql, entry);
    if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    return entry;
  }

  function toArgs(args: InArgs | undefined): unknown[] | Record<string, unknown> {
    if (args === undefined) return [];
    // Bound text with a lone surrogate would be stored as U+FFFD, and with a
    // NUL read back cut short: refused, whatever path it came by (src/core/text.ts).
    const convert = (v: unknown) => (typeof v === 'boolean' ? (v ? 1 : 0) : v instanceof Date ? v.valueOf() : typeof v === 'string' ? requireStorableText(v, 'text value') : v);
    if (Array.isArray(args)) return args.map(convert);
    return Object.fromEntries(Object.entries(args).map(([k, v]) => [k.replace(/^[@$:]/, ''), convert(v)]));
  }

  function run(statement: InStatement): ResultSet {
    if (closed) throw new Error('the database client is closed');
    const { sql, args } = typeof statement === 'string' ? { sql: statement, args: undefined } : statement;
    const entry = prepared(sql);
    const bound = toArgs(args);
    if (entry.reader) {
      const values = entry.stmt.all(bound) as unknown[][];
      return result(entry.columns, values.map(entry.makeRow!), 0, undefined);
    }
    const info = entry.stmt.run(bound);
    return result([], [], info.changes, BigInt(info.lastInsertRowid));
  }

  function inTransaction<T>(begin: string, work: () => T): T {
    db.exec(begin);
    try {
      const value = work();
      db.exec('COMMIT');
      return value;
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
  }

  const client = {
    closed: false,
    protocol: 'file',
    async execute(stmtOrSql: InStatement, args?: InArgs) {
      return run(typeof stmtOrSql === 'string' ? { sql: stmtOrSql, args: args ?? [] } : stmtOrSql);
    },
    async batch(stmts: InStatement[], mode: TransactionMode = 'write') {
      // IMMEDIATE takes the write lock up front: another process's writer waits
      // on the busy timeout instead of failing a lock upgrade mid-batch.
      return inTransaction(mode === 'read' ? 'BEGIN DEFERRED' : 'BEGIN IMMEDIATE', () => stmts.map(run));
    },
    async migrate(stmts: InStatement[]) {
      db.exec('PRAGMA foreign_keys = OFF');
      try {
        return inTransaction('BEGIN IMMEDIATE', () => stmts.map(run));
      } finally {
        db.exec('PRAGMA foreign_keys = ON');
      }
    },
    async executeMultiple(sql: string) {
      db.exec(sql);
    },
    async transaction(): Promise<never> {
      throw new Error('interactive transactions are not used by leasehold: every transition is one statement or one batch');
    },
    async sync() {
      return undefined;
    },
    reconnect() {},
    close() {
      if (closed) return;
      closed = true;
      client.closed = true;
      cache.clear();
      db.close();
    },
  };
  return client as unknown as Client;
}

/** A path as a SQLite URI opened read-only (`?` and `#` in the path escaped, so they stay part of it). */
function readOnlyUri(path: string): string {
  return `file:${encodeURIComponent(path).replace(/%2F/g, '/')}?mode=ro`;
}

function result(columns: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return {
    columns,
    columnTypes: columns.map(() => ''),
    rows: rows as ResultSet['rows'],
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({ columns, rows, rowsAffected, lastInsertRowid: lastInsertRowid?.toString() }),
  };
}
