/**
 * The operator audit (drizzle/0009): who changed what, when, from where, and
 * the values before and after.
 *
 * An entry is a statement for the caller's batch, so it commits (or not)
 * with the change it describes: `auditInsert` for a change that always
 * happens, `auditInsertIfChanged` right after a guarded UPDATE (it is written
 * only when that statement changed a row: SQLite's changes() counts the last
 * statement's own rows, not its triggers'). `before` and `after` may be SQL,
 * so a value is read inside the same transaction that replaces it.
 */
import { and, asc, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { AuditAction } from '../../core/audit-actions.ts';
import type { Now } from '../../core/clock.ts';
import type { BatchItem } from 'drizzle-orm/batch';
import type { Db } from '../db.ts';
import { rowColumns } from '../row-columns.ts';
import { operatorAudit, usedFormNonces } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { formNonceClaim } from './form-nonces.ts';

// The vocabulary lives in core (routes check filters against it); re-exported for the store's callers.
import type { Alongside, AuditActor, AuditEntry, AuditFilter, AuditRecord } from './port-types.ts';
export { AUDIT_ACTIONS, type AuditAction } from '../../core/audit-actions.ts';

/** A value or SQL yielding it. */
const json = (v: string | SQL | null | undefined) => (v === undefined || v === null ? sql`NULL` : typeof v === 'string' ? sql`${v}` : v);

function selectEntry(e: AuditEntry): SQL {
  return sql`SELECT ${nowSql(e.now)}, ${e.by.actor}, ${e.by.role}, ${e.by.credential}, ${e.by.source}, ${e.action}, ${json(e.queue)}, ${e.jobId ?? null},
    ${e.target}, ${json(e.before)}, ${json(e.after)}, ${e.reason ?? null}, ${e.by.client}`;
}

const COLUMNS = sql`(at, actor, role, credential, source, action, queue_name, job_id, target, before, after, reason, client)`;

/** A statement for the caller's batch: the entry, unconditionally. */
export function auditInsert(db: Db, e: AuditEntry) {
  return db.insert(operatorAudit).values({
    at: nowSql(e.now),
    actor: e.by.actor,
    role: e.by.role,
    credential: e.by.credential,
    source: e.by.source,
    action: e.action,
    queueName: json(e.queue),
    jobId: e.jobId ?? null,
    target: e.target,
    before: json(e.before),
    after: json(e.after),
    reason: e.reason ?? null,
    client: e.by.client,
  });
}

/** A statement for the batch, before the write it describes: the entry only where `when` (that write's own guard) holds. */
export function auditInsertWhere(db: Db, e: AuditEntry, when: SQL) {
  return db.run(sql`INSERT INTO operator_audit ${COLUMNS} ${selectEntry(e)} WHERE ${when}`);
}

/** A statement for the batch, right after a guarded UPDATE: the entry only if that UPDATE changed a row. */
export function auditInsertIfChanged(db: Db, e: AuditEntry) {
  return db.run(sql`INSERT INTO operator_audit ${COLUMNS} ${selectEntry(e)} WHERE changes() > 0`);
}

/**
 * A failed dashboard login, folded per client: the first failure from a
 * client address opens an entry (`after`: `{"attempts": 1, "lastAt": ...}`),
 * and each further failure from that address within `windowMs` of the
 * entry's own time adds one to its count instead of a row, so a flood of
 * guesses (from loopback, which the login back-off exempts, or anywhere)
 * costs at most one row per client per window, however many names it types
 * (the entry keeps the first). One batch: the UPDATE, then the INSERT only
 * when the UPDATE found no open entry (changes() is 0).
 *
 * The open entry is looked up by time first (operator_audit_at_idx): only
 * the last window's entries are read, never the whole history of one action.
 */
export async function auditLoginFailed(db: Db, p: { by: AuditActor; reason: string; windowMs: number; now: Now }): Promise<void> {
  const now = nowSql(p.now);
  // ISO time with milliseconds, by integer arithmetic (a float of epoch seconds can round the last digit).
  const ms = sql`CAST(${now} AS INTEGER)`;
  const lastAt = sql`strftime('%Y-%m-%dT%H:%M:%S', ${ms} / 1000, 'unixepoch') || printf('.%03dZ', ${ms} % 1000)`;
  await db.batch([
    db.run(sql`UPDATE operator_audit
      SET after = json_set(coalesce(after, '{}'), '$.attempts', coalesce(json_extract(after, '$.attempts'), 1) + 1, '$.lastAt', ${lastAt})
      WHERE id = (SELECT id FROM operator_audit INDEXED BY operator_audit_at_idx
        WHERE at > ${now} - ${p.windowMs} AND action = 'login_failed' AND client IS ${p.by.client}
        ORDER BY id DESC LIMIT 1)`),
    db.run(sql`INSERT INTO operator_audit ${COLUMNS}
      SELECT ${now}, ${p.by.actor}, ${p.by.role}, ${p.by.credential}, ${p.by.source}, 'login_failed', NULL, NULL, 'dashboard', NULL,
        json_object('attempts', 1, 'lastAt', ${lastAt}), ${p.reason}, ${p.by.client}
      WHERE changes() = 0`),
  ]);
}

/**
 * Newest first, at most `limit`, and the id to pass as `before` for the next
 * page (null on the last). Each filter is an equality on an indexed column
 * walked by id, so a page costs `limit` index steps on a large table.
 */
export async function auditList(db: Db, f: AuditFilter): Promise<{ entries: AuditRecord[]; next: number | null }> {
  const t = operatorAudit;
  const rows = await db
    .select(rowColumns(t))
    .from(t)
    .where(
      and(
        f.actor === undefined ? undefined : eq(t.actor, f.actor),
        f.action === undefined ? undefined : eq(t.action, f.action),
        f.queue === undefined ? undefined : eq(t.queueName, f.queue),
        f.before === undefined ? undefined : lt(t.id, f.before),
      ),
    )
    .orderBy(desc(t.id))
    .limit(f.limit + 1);
  // `action` is stored as text; only the vocabulary is ever written.
  const entries = rows.slice(0, f.limit).map((r) => ({ ...r, action: r.action as AuditAction }));
  return { entries, next: rows.length > f.limit ? entries[entries.length - 1]!.id : null };
}

/** Housekeeping for the reaper's batch: audit entries past retention (oldest first, at most `limit`) and used form tokens past expiry. */
export function auditPruneStatements(db: Db, p: { now: number; retentionMs: number; limit: number }) {
  const oldest = db
    .select({ id: operatorAudit.id })
    .from(operatorAudit)
    .where(lt(operatorAudit.at, p.now - p.retentionMs))
    .orderBy(asc(operatorAudit.at))
    .limit(p.limit);
  return [db.delete(operatorAudit).where(inArray(operatorAudit.id, oldest)), db.delete(usedFormNonces).where(lt(usedFormNonces.expiresAt, p.now))] as const;
}

/** The statements that lead an operator's batch: the form token's claim, when there is one. */
export function alongsideFirst(db: Db, also: Alongside | undefined): BatchItem<'sqlite'>[] {
  return also?.formNonce ? [formNonceClaim(db, also.formNonce)] : [];
}
