/**
 * leasehold/fencing's pieces on their own: the SQL it writes for SQLite
 * (run on a real SQLite database) and Postgres (its text), the header
 * convention and the checker's verdicts. End to end, with a real server and
 * reaper: test/e2e/fencing-downstream.test.ts.
 */
import Database from 'libsql';
import { describe, expect, test } from 'vitest';
import {
  FENCING_JOB_HEADER,
  FENCING_TOKEN_HEADER,
  STALE_WRITE_MESSAGE,
  checkFencingToken,
  fencingColumnSql,
  fencingHeaders,
  fencingTriggerSql,
  guardedUpdate,
  guardedUpsert,
} from '../../src/fencing/index.ts';

function table() {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE "my outputs" (job TEXT PRIMARY KEY, body TEXT)');
  db.exec(fencingColumnSql('sqlite', 'my outputs'));
  return db;
}

describe('SQLite', () => {
  test('guarded upsert: creates the row, takes a newer or equal token, changes nothing for an older one', () => {
    const db = table();
    const w = guardedUpsert('sqlite', { table: 'my outputs', key: ['job'], set: ['body'] });
    const write = (token: number, body: string) => db.prepare(w.sql).run(...w.params({ key: { job: '7' }, set: { body }, token })).changes;
    expect(write(2, 'two')).toBe(1);
    expect(write(2, 'two again')).toBe(1);
    expect(write(1, 'one')).toBe(0);
    expect(write(3, 'three')).toBe(1);
    expect(db.prepare('SELECT body, fencing_token FROM "my outputs"').all()).toMatchObject([{ body: 'three', fencing_token: 3 }]);
  });

  test('guarded update: an older token changes no row', () => {
    const db = table();
    db.exec(`INSERT INTO "my outputs" (job, body, fencing_token) VALUES ('7', 'five', 5)`);
    const w = guardedUpdate('sqlite', { table: 'my outputs', key: ['job'], set: ['body'] });
    expect(db.prepare(w.sql).run(...w.params({ key: { job: '7' }, set: { body: 'four' }, token: 4 })).changes).toBe(0);
    expect(db.prepare(w.sql).run(...w.params({ key: { job: '7' }, set: { body: 'six' }, token: 6 })).changes).toBe(1);
    expect(db.prepare('SELECT body, fencing_token FROM "my outputs"').get()).toMatchObject({ body: 'six', fencing_token: 6 });
  });

  test('trigger: any update that lowers the token fails with the stale-write message; twice installed is harmless', () => {
    const db = table();
    db.exec(fencingTriggerSql('sqlite', 'my outputs'));
    db.exec(fencingTriggerSql('sqlite', 'my outputs'));
    db.exec(`INSERT INTO "my outputs" (job, body, fencing_token) VALUES ('7', 'five', 5)`);
    expect(() => db.exec(`UPDATE "my outputs" SET body = 'four', fencing_token = 4`)).toThrow(STALE_WRITE_MESSAGE);
    db.exec(`UPDATE "my outputs" SET body = 'five again', fencing_token = 5`);
    expect(db.prepare('SELECT body FROM "my outputs"').get()).toMatchObject({ body: 'five again' });
  });

  test('a value is never spliced into the SQL, and a bad name, shape or token is refused by name', () => {
    const w = guardedUpsert('sqlite', { table: 't', key: ['id'], set: ['v'] });
    expect(w.params({ key: { id: "x'); DROP TABLE t; --" }, set: { v: 1 }, token: 1 })).toEqual(["x'); DROP TABLE t; --", 1, 1]);
    expect(() => w.params({ key: { id: 1 }, set: {}, token: 1 })).toThrow('no value for set column "v" of t');
    expect(() => w.params({ key: { id: 1 }, set: { v: 1 }, token: 0 })).toThrow('the token 0 is not a fencing token');
    expect(() => guardedUpdate('sqlite', { table: 't', key: [], set: ['v'] })).toThrow('`key` names at least one column');
    expect(() => fencingColumnSql('sqlite', '')).toThrow('"" is not a table or column name');
    expect(fencingColumnSql('sqlite', 'a"b')).toBe('ALTER TABLE "a""b" ADD COLUMN "fencing_token" INTEGER NOT NULL DEFAULT 0');
  });
});

describe('Postgres', () => {
  test('numbered placeholders in the order params gives; BIGINT column; a PL/pgSQL trigger', () => {
    const u = guardedUpdate('postgres', { table: 'public.invoices', key: ['job_id'], set: ['total'] });
    expect(u.sql).toBe('UPDATE "public"."invoices" SET "total" = $1, "fencing_token" = $2 WHERE "job_id" = $3 AND "fencing_token" <= $4');
    expect(u.params({ key: { job_id: '9' }, set: { total: 5 }, token: 3 })).toEqual([5, 3, '9', 3]);
    const i = guardedUpsert('postgres', { table: 'invoices', key: ['job_id'], set: ['total'] });
    expect(i.sql).toBe(
      'INSERT INTO "invoices" AS fenced_row ("job_id", "total", "fencing_token") VALUES ($1, $2, $3) ' +
        'ON CONFLICT ("job_id") DO UPDATE SET "total" = excluded."total", "fencing_token" = excluded."fencing_token" ' +
        'WHERE fenced_row."fencing_token" <= excluded."fencing_token"',
    );
    expect(fencingColumnSql('postgres', 'invoices')).toBe('ALTER TABLE "invoices" ADD COLUMN "fencing_token" BIGINT NOT NULL DEFAULT 0');
    const trigger = fencingTriggerSql('postgres', 'invoices');
    expect(trigger).toContain('IF NEW."fencing_token" < OLD."fencing_token" THEN');
    expect(trigger).toContain(`RAISE EXCEPTION '${STALE_WRITE_MESSAGE}'`);
    expect(trigger).toContain('CREATE TRIGGER "invoices_fencing_token_guard" BEFORE UPDATE ON "invoices" FOR EACH ROW EXECUTE FUNCTION "invoices_fencing_token_guard"()');
  });
});

describe('HTTP header convention', () => {
  test('fencingHeaders sends the token and the job', () => {
    expect(fencingHeaders({ fencingToken: 3, job: { id: '42' } })).toEqual({ [FENCING_TOKEN_HEADER]: '3', [FENCING_JOB_HEADER]: '42' });
    expect(FENCING_TOKEN_HEADER).toBe('Leasehold-Fencing-Token');
  });

  test('the checker accepts a newer or equal token, refuses an older one (409) and a missing or malformed header (400)', () => {
    expect(checkFencingToken('3', undefined)).toEqual({ ok: true, token: 3 });
    expect(checkFencingToken('3', 3)).toEqual({ ok: true, token: 3 });
    expect(checkFencingToken(' 4 ', 3)).toEqual({ ok: true, token: 4 });
    expect(checkFencingToken('2', 3)).toMatchObject({ ok: false, status: 409, reason: expect.stringContaining('Leasehold-Fencing-Token 2 is older than 3') });
    expect(checkFencingToken(null, 3)).toMatchObject({ ok: false, status: 400, reason: 'the Leasehold-Fencing-Token header is missing' });
    for (const bad of ['', '0', '-1', '1.5', 'abc', '01', '99999999999999999']) expect(checkFencingToken(bad, null)).toMatchObject({ ok: false, status: 400 });
  });
});
