/**
 * leasehold/fencing: make a stale attempt's write fail downstream, in the
 * user's own store, not only in leasehold's database. A job's fencing token
 * (`ctx.fencingToken`) grows by one with every claim of that job; a
 * downstream store that keeps the last token it accepted for the job's
 * resource can refuse an older one. No dependencies; runs anywhere.
 *
 * - SQL for SQLite and Postgres: the column, a guarded UPDATE / upsert, and
 *   a trigger variant (sql.ts).
 * - HTTP: the `Leasehold-Fencing-Token` header a worker sends and the check a
 *   service makes (http.ts).
 *
 * @example
 *   import { fencingHeaders, guardedUpdate } from 'leasehold/fencing';
 */
export {
  FENCING_COLUMN,
  STALE_WRITE_MESSAGE,
  fencingColumnSql,
  fencingTriggerSql,
  guardedUpdate,
  guardedUpsert,
  type Dialect,
  type GuardedWrite,
  type GuardedWriteShape,
  type GuardedWriteValues,
} from './sql.ts';
export { FENCING_JOB_HEADER, FENCING_TOKEN_HEADER, checkFencingToken, fencingHeaders, parseFencingToken, type FencedAttempt, type FencingVerdict } from './http.ts';
