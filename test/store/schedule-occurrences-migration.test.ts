/**
 * drizzle/0021 on a database an earlier version wrote: its occurrence jobs
 * (keyed schedule:<name>:<time>, enqueued by the schedule) become marked
 * occurrences, so a pass that finds the same occurrence due again gets that
 * job back; a job a client planted under such a key stays the client's.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { schedulesOnce } from '../../src/maintenance/schedules.ts';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { MIGRATIONS } from '../support/helpers.ts';

const T = Date.parse('2030-01-01T10:00:00.000Z');

test("0021 marks the old occurrence jobs (a pass finds them again) and leaves a client's look-alike alone", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-0021-'));
  try {
    const before = join(dir, 'before');
    mkdirSync(join(before, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(join(MIGRATIONS, 'meta', '_journal.json'), 'utf8'));
    // The migrations before 0021 (the migrator would skip 0021 after any later one).
    journal.entries = journal.entries.filter((e: { idx: number }) => e.idx < 21);
    writeFileSync(join(before, 'meta', '_journal.json'), JSON.stringify(journal));
    for (const e of journal.entries as { tag: string }[]) copyFileSync(join(MIGRATIONS, `${e.tag}.sql`), join(before, `${e.tag}.sql`));

    const o = await openLibsql(`file:${join(dir, 'old.db')}`);
    try {
      await migrateLibsql(o, before);
      const run = (sql: string, args: (string | number | null)[] = []) => o.client.execute({ sql, args });
      const key = (name: string, at: number) => `schedule:${name}:${new Date(at).toISOString()}`;
      await run(`INSERT INTO queues (name, created_at, updated_at) VALUES ('q', 0, 0)`);
      // The schedule enqueued its 10:00 occurrence, and the server stopped before next_run_at moved on.
      await run(`INSERT INTO schedules (name, queue_name, interval_ms, payload, next_run_at, created_at, updated_at) VALUES ('tick', 'q', 60000, '{"honest":true}', ?, 0, 0)`, [T]);
      const insert = (payload: string, k: string, by: string, availableAt: number) =>
        run(`INSERT INTO jobs (queue_name, payload, max_attempts, available_at, idempotency_key, enqueued_by, last_event_actor, created_at, updated_at) VALUES ('q', ?, 3, ?, ?, ?, ?, ?, ?) RETURNING id`, [payload, availableAt, k, by, by, T, T]);
      const old = Number((await insert('{"honest":true}', key('tick', T), 'schedule:tick', T)).rows[0]!.id);
      // A client planted the next one under its old key.
      const planted = Number((await insert('{"attacker":true}', key('tick', T + 60_000), 'api', T + 1e11)).rows[0]!.id);

      await migrateLibsql(o, MIGRATIONS);
      const rows = (await run(`SELECT id, schedule_name, occurrence_at, idempotency_key FROM jobs ORDER BY id`)).rows.map((r) => JSON.parse(JSON.stringify(r)));
      expect(rows).toEqual([
        { id: old, schedule_name: 'tick', occurrence_at: T, idempotency_key: null },
        { id: planted, schedule_name: null, occurrence_at: null, idempotency_key: key('tick', T + 60_000) },
      ]);

      const store = createStore(o.db);
      const config = defaultConfig({ databaseUrl: 'file:old' });
      // The 10:00 occurrence again: the old job, not a second one.
      expect(await schedulesOnce(store, T + 5_000, config)).toMatchObject({ enqueued: 0, alreadyEnqueued: 1, errors: [] });
      // 10:01: a job of the schedule's own, whatever the client planted.
      expect(await schedulesOnce(store, T + 65_000, config)).toMatchObject({ enqueued: 1, alreadyEnqueued: 0, errors: [] });
      const last = (await store.scheduleGet({ name: 'tick' }))!.last_job_id;
      expect(last).not.toBe(planted);
      expect((await run(`SELECT payload, occurrence_at FROM jobs WHERE id = ?`, [last])).rows.map((r) => JSON.parse(JSON.stringify(r)))).toEqual([{ payload: '{"honest":true}', occurrence_at: T + 60_000 }]);
    } finally {
      o.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
