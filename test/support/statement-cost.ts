/**
 * What the database executes for a piece of work, counted rather than timed:
 * a count is the same on a quiet machine and a loaded one, so a test can pin
 * it. The recorder wraps the real client's `execute` and `batch` (the store
 * reaches the database only through them) and forwards every call.
 *
 * - statements: every statement sent, inside a batch or alone;
 * - rowsWritten: `total_changes()` before and after, which counts the rows
 *   written by triggers too (`changes()` does not);
 * - triggerPrograms: for each write statement, the trigger programs SQLite
 *   enters per row it writes (the `Program` opcodes of its main program in
 *   EXPLAIN; each one evaluates that trigger's WHEN for the row), times the
 *   rows it wrote;
 * - indexEntries: the index entries added or removed, in every index of
 *   every table (triggers' writes included), read as each index's entries
 *   before and after `work`: an entry whose key changed counts twice (out,
 *   in), one that kept its key not at all, and one added and removed again
 *   within `work` not at all, so measure one transition at a time.
 */
import Database from 'libsql';
import type { Client, InStatement, ResultSet } from '@libsql/client';

/** A connection of its own for looking (EXPLAIN, index entries), so the store's client and its statement cache stay as the work left them. */
interface Looker {
  all(sql: string, args?: unknown): Record<string, unknown>[];
}
function openLooker(path: string): Looker & { close(): void } {
  const db = new Database(path, { readonly: true });
  return {
    all: (sql, args) => db.prepare(sql).all((args ?? []) as never) as Record<string, unknown>[],
    close: () => db.close(),
  };
}

export interface StatementCost {
  statements: number;
  rowsWritten: number;
  triggerPrograms: number;
  indexEntries: number;
}

interface Sent {
  sql: string;
  args: unknown;
  rows: number;
}

const asStatement = (s: InStatement) => (typeof s === 'string' ? { sql: s, args: [] } : { sql: s.sql, args: s.args ?? [] });
const rowsOf = (r: ResultSet) => Math.max(r.rows.length, r.rowsAffected);
const isWrite = (sql: string) => /^\s*(WITH\b[\s\S]*?)?\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql) && !/^\s*SELECT\b/i.test(sql);

async function totalChanges(client: Client): Promise<number> {
  return Number((await client.execute('SELECT total_changes() AS n')).rows[0]?.n ?? 0);
}

/** The trigger programs a write statement's main program enters per row it writes (EXPLAIN numbers each sub-program from 0 again). */
function triggerProgramsPerRow(look: Looker, s: Sent) {
  let programs = 0;
  let started = false;
  for (const op of look.all(`EXPLAIN ${s.sql}`, s.args)) {
    if (Number(op.addr) === 0 && started) break;
    started = true;
    if (op.opcode === 'Program') programs++;
  }
  return programs;
}

/**
 * Every index's entries, each as its key columns and rowid. An index made by
 * CREATE INDEX is read with its own column list and WHERE (so expression and
 * partial indexes read as stored); a constraint's automatic index, with its
 * columns from PRAGMA index_info.
 */
function indexEntries(look: Looker): Map<string, Set<string>> {
  const entries = new Map<string, Set<string>>();
  for (const ix of look.all(`SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index'`)) {
    const name = String(ix.name);
    const table = String(ix.tbl_name);
    let columns: string;
    let where = '';
    if (ix.sql) {
      const text = String(ix.sql);
      const open = text.indexOf('(', text.search(/\bON\b/i));
      let depth = 0;
      let close = open;
      for (; close < text.length; close++) {
        if (text[close] === '(') depth++;
        if (text[close] === ')' && --depth === 0) break;
      }
      columns = text.slice(open + 1, close).replace(/\b(ASC|DESC)\b/gi, '');
      const rest = text.slice(close + 1).match(/\bWHERE\b([\s\S]*)$/i);
      if (rest) where = `WHERE ${rest[1]}`;
    } else {
      columns = look.all(`PRAGMA index_info("${name}")`).map((c) => `"${String(c.name)}"`).join(', ');
    }
    entries.set(name, new Set(look.all(`SELECT json_array(${columns}, ${rowKey(look, table)}) AS k FROM "${table}" ${where}`).map((r) => String(r.k))));
  }
  return entries;
}

/** What an index entry points at: the rowid, or a WITHOUT ROWID table's primary key. */
function rowKey(look: Looker, table: string): string {
  const listed = look.all(`SELECT wr FROM pragma_table_list WHERE name = '${table}'`);
  if (Number(listed[0]?.wr ?? 0) === 0) return 'rowid';
  return look.all(`SELECT name FROM pragma_table_info('${table}') WHERE pk > 0 ORDER BY pk`).map((c) => `"${String(c.name)}"`).join(', ');
}

function entriesChanged(before: Map<string, Set<string>>, after: Map<string, Set<string>>): number {
  let n = 0;
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name) ?? new Set<string>();
    const b = after.get(name) ?? new Set<string>();
    for (const k of a) if (!b.has(k)) n++;
    for (const k of b) if (!a.has(k)) n++;
  }
  return n;
}

/** Runs `work` against the client of the database file at `path`, recording what it sends, and counts it (see the top of this file). */
export async function measureStatements(client: Client, path: string, work: () => Promise<unknown>): Promise<StatementCost & { sent: Sent[] }> {
  const look = openLooker(path);
  const indexesBefore = indexEntries(look);
  const before = await totalChanges(client);
  const sent: Sent[] = [];
  const execute = client.execute.bind(client);
  const batch = client.batch.bind(client);
  const c = client as { execute: unknown; batch: unknown };
  c.execute = async (stmt: InStatement, args?: unknown) => {
    const s = asStatement(stmt);
    const result = await (args === undefined ? execute(stmt) : execute(stmt as string, args as never));
    sent.push({ sql: s.sql, args: args ?? s.args, rows: rowsOf(result) });
    return result;
  };
  c.batch = async (stmts: InStatement[], mode?: never) => {
    const results = await batch(stmts, mode);
    stmts.forEach((stmt, i) => sent.push({ ...asStatement(stmt), rows: rowsOf(results[i]!) }));
    return results;
  };
  try {
    await work();
  } finally {
    c.execute = execute;
    c.batch = batch;
  }
  const rowsWritten = (await totalChanges(client)) - before;
  const indexesChanged = entriesChanged(indexesBefore, indexEntries(look));
  let triggerPrograms = 0;
  for (const s of sent) if (isWrite(s.sql) && s.rows > 0) triggerPrograms += triggerProgramsPerRow(look, s) * s.rows;
  look.close();
  return { statements: sent.length, rowsWritten, triggerPrograms, indexEntries: indexesChanged, sent };
}
