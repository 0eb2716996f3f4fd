/**
 * SQL a user adds to their own table so a stale attempt's write is refused
 * there, not only in leasehold's database: a column that holds the fencing
 * token of the attempt that last wrote the row, and either a guarded write
 * (the statement itself refuses an older token: it changes no row) or a
 * trigger (any UPDATE with an older token fails, whoever wrote the statement).
 *
 * A fencing token orders the attempts of ONE job (it grows by one per claim
 * of that job), not jobs: guard a row the job owns (keyed by the job id or
 * its idempotency key), never a row that several jobs write.
 *
 * Equal tokens are accepted: one attempt may write its row more than once.
 *
 * Identifiers are quoted here (tables and columns the caller names, never
 * values): values are always bound parameters, in the order `params` gives.
 *
 * @example
 *   import { guardedUpsert } from 'leasehold/fencing';
 *   const up = guardedUpsert('sqlite', { table: 'invoices', key: ['job_id'], set: ['total'] });
 *   const res = db.prepare(up.sql).run(...up.params({ key: { job_id: ctx.job.id }, set: { total: 42 }, token: ctx.fencingToken }));
 *   if (res.changes === 0) throw new Error('a newer attempt of this job already wrote its invoice');
 */

export type Dialect = 'sqlite' | 'postgres';

/** The column's default name: what every helper here uses unless told otherwise. */
export const FENCING_COLUMN = 'fencing_token';

/** Quotes an identifier (a table or column name, optionally `schema.table`) for both dialects. */
function ident(name: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 128 || /[\u0000-\u001f]/.test(name)) {
    throw new TypeError(`fencing SQL: ${JSON.stringify(name)} is not a table or column name (1 to 128 printable characters)`);
  }
  return name
    .split('.')
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join('.');
}

const placeholder = (dialect: Dialect) => {
  let n = 0;
  return () => (dialect === 'postgres' ? `$${++n}` : '?');
};

/** `ALTER TABLE ... ADD COLUMN fencing_token`: 0 for rows written before (any real token is larger). */
export function fencingColumnSql(dialect: Dialect, table: string, column = FENCING_COLUMN): string {
  const type = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return `ALTER TABLE ${ident(table)} ADD COLUMN ${ident(column)} ${type} NOT NULL DEFAULT 0`;
}

/** What a refused trigger says (in the error the database raises): match on it to tell a stale write from other failures. */
export const STALE_WRITE_MESSAGE = 'leasehold fencing: refused a write with an older fencing token';

/**
 * A trigger that makes every UPDATE of the table carrying an older token than
 * the row's fail (the statement aborts with STALE_WRITE_MESSAGE). It refuses
 * an update that leaves the token out too (it would keep the row's token, so
 * it passes): write the token with every update. Postgres: a function and a
 * trigger (PL/pgSQL), as several statements in one string.
 */
export function fencingTriggerSql(dialect: Dialect, table: string, column = FENCING_COLUMN): string {
  const name = `${table.replaceAll('.', '_')}_${column}_guard`;
  const col = ident(column);
  if (dialect === 'sqlite') {
    return `CREATE TRIGGER IF NOT EXISTS ${ident(name)} BEFORE UPDATE ON ${ident(table)}
FOR EACH ROW WHEN NEW.${col} < OLD.${col}
BEGIN SELECT RAISE(ABORT, '${STALE_WRITE_MESSAGE}'); END`;
  }
  return `CREATE OR REPLACE FUNCTION ${ident(name)}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.${col} < OLD.${col} THEN
    RAISE EXCEPTION '${STALE_WRITE_MESSAGE}' USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS ${ident(name)} ON ${ident(table)};
CREATE TRIGGER ${ident(name)} BEFORE UPDATE ON ${ident(table)} FOR EACH ROW EXECUTE FUNCTION ${ident(name)}()`;
}

export interface GuardedWriteShape {
  table: string;
  /** The columns that name the row (its key): matched with `=`. */
  key: string[];
  /** The columns the write sets (the token column is set too, always). */
  set: string[];
  column?: string | undefined;
}

export interface GuardedWriteValues {
  key: Record<string, unknown>;
  set: Record<string, unknown>;
  /** The attempt's `ctx.fencingToken`. */
  token: number;
}

/** A statement and how to bind it: `params` answers the values in placeholder order. */
export interface GuardedWrite {
  sql: string;
  params(values: GuardedWriteValues): unknown[];
}

function checkShape(s: GuardedWriteShape): void {
  if (!Array.isArray(s.key) || s.key.length === 0) throw new TypeError('fencing SQL: `key` names at least one column (the row the job owns)');
  if (!Array.isArray(s.set)) throw new TypeError('fencing SQL: `set` is a list of columns');
}

function bind(s: GuardedWriteShape, order: ({ from: 'key' | 'set'; name: string } | { from: 'token' })[]) {
  return (v: GuardedWriteValues): unknown[] => {
    if (!Number.isSafeInteger(v.token) || v.token < 1) throw new TypeError(`fencing SQL: the token ${JSON.stringify(v.token)} is not a fencing token (ctx.fencingToken: a positive integer)`);
    return order.map((o) => {
      if (o.from === 'token') return v.token;
      const values = v[o.from];
      if (!values || !(o.name in values)) throw new TypeError(`fencing SQL: no value for ${o.from} column ${JSON.stringify(o.name)} of ${s.table}`);
      return values[o.name];
    });
  };
}

/**
 * `UPDATE t SET a = ?, fencing_token = ? WHERE k = ? AND fencing_token <= ?`:
 * a stale attempt's update changes no row (check the changed-row count: 0
 * means refused, or no such row).
 */
export function guardedUpdate(dialect: Dialect, s: GuardedWriteShape): GuardedWrite {
  checkShape(s);
  const p = placeholder(dialect);
  const col = s.column ?? FENCING_COLUMN;
  const sets = [...s.set.map((c) => `${ident(c)} = ${p()}`), `${ident(col)} = ${p()}`];
  const where = [...s.key.map((c) => `${ident(c)} = ${p()}`), `${ident(col)} <= ${p()}`];
  return {
    sql: `UPDATE ${ident(s.table)} SET ${sets.join(', ')} WHERE ${where.join(' AND ')}`,
    params: bind(s, [...s.set.map((name) => ({ from: 'set' as const, name })), { from: 'token' }, ...s.key.map((name) => ({ from: 'key' as const, name })), { from: 'token' }]),
  };
}

/**
 * `INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE row.fencing_token <= excluded.fencing_token`:
 * creates the row on the first write, and a stale attempt's write changes
 * nothing (0 rows changed). Needs a unique index or primary key on `key`.
 */
export function guardedUpsert(dialect: Dialect, s: GuardedWriteShape): GuardedWrite {
  checkShape(s);
  const p = placeholder(dialect);
  const col = s.column ?? FENCING_COLUMN;
  const columns = [...s.key, ...s.set, col];
  const values = columns.map(() => p());
  const updates = [...s.set, col].map((c) => `${ident(c)} = excluded.${ident(c)}`);
  return {
    sql:
      `INSERT INTO ${ident(s.table)} AS fenced_row (${columns.map(ident).join(', ')}) VALUES (${values.join(', ')}) ` +
      `ON CONFLICT (${s.key.map(ident).join(', ')}) DO UPDATE SET ${updates.join(', ')} ` +
      `WHERE fenced_row.${ident(col)} <= excluded.${ident(col)}`,
    params: bind(s, [...s.key.map((name) => ({ from: 'key' as const, name })), ...s.set.map((name) => ({ from: 'set' as const, name })), { from: 'token' }]),
  };
}
