/**
 * drizzle/0015 on a database that already has a clean job's routine event
 * rows (written by the 0001 triggers): it keeps them, each shows once in the
 * timeline, and from then on a clean job writes only its claim while the
 * durable counters go on counting enqueues and completions.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { manualClock } from '../../src/core/clock.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { MIGRATIONS, appOn } from '../support/helpers.ts';
import { lendTodaysShape } from '../support/todays-shape.ts';

const api = '/api/v1';

test('0015 keeps the stored enqueued/completed rows (each shown once) and counts on from the job row', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-0015-'));
  try {
    const before = join(dir, 'before');
    mkdirSync(join(before, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(join(MIGRATIONS, 'meta', '_journal.json'), 'utf8'));
    journal.entries = journal.entries.filter((e: { idx: number }) => e.idx < 15);
    writeFileSync(join(before, 'meta', '_journal.json'), JSON.stringify(journal));
    for (const e of journal.entries as { tag: string }[]) copyFileSync(join(MIGRATIONS, `${e.tag}.sql`), join(before, `${e.tag}.sql`));

    const o = await openLibsql(`file:${join(dir, 'old.db')}`);
    try {
      await migrateLibsql(o, before);
      const clock = manualClock();
      const config = defaultConfig({ databaseUrl: 'file:old' });
      const appNow = () => appOn({ db: o.db, config, clock, log: silentLogger });
      const call = async (app: ReturnType<typeof appNow>, path: string, body?: unknown) =>
        (await app.request(path, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
      const cleanJob = async (app: ReturnType<typeof appNow>, worker: string) => {
        const { job } = await call(app, `${api}/queues/q/jobs`, { payload: {} });
        clock.advance(10);
        const [c] = (await call(app, `${api}/queues/q/claim`, { workerId: worker })).jobs;
        clock.advance(10);
        await call(app, `${api}/jobs/${c.id}/complete`, { workerId: worker, lockToken: c.lockToken });
        return job.id as string;
      };
      const stored = async (id: string) => (await o.client.execute({ sql: 'SELECT type FROM events WHERE job_id = ? ORDER BY id', args: [Number(id)] })).rows.map((r) => r.type);
      const counters = async () => (await o.client.execute(`SELECT name, value FROM counters WHERE name IN ('enqueued', 'claimed', 'completed') ORDER BY name`)).rows.map((r) => `${r.name}:${r.value}`);

      // An old server's clean job (today's app writes the columns of 0015, 0017 and 0023 and reads 0021's: add them for the replay, drop them after).
      const later = ['enqueued_by text', 'claim_id text', 'finished_token text', 'finished_write text', 'schedule_name text', 'occurrence_at integer', 'trace_parent text', 'trace_state text', 'on_lost text', 'held_at integer', 'held_attempt text'];
      for (const column of later) await o.client.execute(`ALTER TABLE jobs ADD ${column}`);
      // And 0027's queue policy, read with the queue's other settings.
      await o.client.execute('ALTER TABLE queues ADD on_lost text');
      // Today's claim and completion add their tallies through 0026's views (the completion's with 0038's columns); this schema counts claims from their events.
      await o.client.execute(`CREATE VIEW claim_tallies AS SELECT '' AS queue_name, 0 AS jobs, 0 AS at WHERE 0`);
      await o.client.execute('CREATE TRIGGER later_claim_tallies INSTEAD OF INSERT ON claim_tallies BEGIN SELECT 1; END');
      await o.client.execute(`CREATE VIEW completion_tallies AS SELECT '' AS queue_name, 0 AS jobs, 0 AS runtime_le_ms, 0 AS runtime_sum_ms, 0 AS silence_ms, 0 AS minute_at WHERE 0`);
      await o.client.execute('CREATE TRIGGER later_completion_tallies INSTEAD OF INSERT ON completion_tallies BEGIN SELECT 1; END');
      // And whatever later migrations added besides (groups, dependencies, dead letters, schedule policies...).
      const giveBack = await lendTodaysShape(o.client);
      const old = await cleanJob(appNow(), 'A');
      await giveBack();
      for (const column of later) await o.client.execute(`ALTER TABLE jobs DROP COLUMN ${column.split(' ')[0]}`);
      await o.client.execute('ALTER TABLE queues DROP COLUMN on_lost');
      await o.client.execute('DROP VIEW claim_tallies');
      await o.client.execute('DROP VIEW completion_tallies');
      expect(await stored(old)).toEqual(['enqueued', 'claimed', 'completed']);
      expect(await counters()).toEqual(['claimed:1', 'completed:1', 'enqueued:1']);

      await migrateLibsql(o, MIGRATIONS);
      expect(await stored(old)).toEqual(['enqueued', 'claimed', 'completed']);
      const app = appNow();
      const trail = await call(app, `${api}/jobs/${old}`);
      expect(trail.events.map((e: any) => [e.type, e.derived])).toEqual([['enqueued', false], ['claimed', false], ['completed', false]]);

      const fresh = await cleanJob(app, 'B');
      expect(await stored(fresh)).toEqual(['claimed']);
      expect(await counters()).toEqual(['claimed:2', 'completed:2', 'enqueued:2']);
      const freshTrail = await call(app, `${api}/jobs/${fresh}`);
      expect(freshTrail.events.map((e: any) => [e.type, e.derived, e.workerId])).toEqual([['enqueued', true, null], ['claimed', false, 'B'], ['completed', true, 'B']]);
    } finally {
      o.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
