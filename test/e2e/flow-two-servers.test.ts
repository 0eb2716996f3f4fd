/**
 * Two servers on one database: a parent whose last two children complete at
 * the same moment, one through each server, is released once (one
 * dependencies_met event, claimable by exactly one claim), because each
 * completion's trigger runs inside its own statement on SQLite's one writer.
 */
import { afterEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/core/log.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { appOn, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => t?.close());

test('the last two dependencies completed at once on two servers release the parent exactly once', async () => {
  t = await setup();
  const second = await openLibsql(t.url);
  try {
    const other = appOn({ db: second.db, config: t.config, clock: t.clock, log: silentLogger });
    const post = async (app: typeof t.app, path: string, body: unknown) => {
      const res = await app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as any };
    };
    for (let round = 0; round < 5; round++) {
      const flow = await post(t.app, `${api}/flows`, { jobs: [{ queue: 'kids', payload: 0 }, { queue: 'kids', payload: 1 }, { queue: 'parent', payload: round, dependsOn: ['#0', '#1'] }] });
      expect(flow.status).toBe(201);
      const parent = flow.json.jobs[2].id as string;
      const [a, b] = (await post(t.app, `${api}/queues/kids/claim`, { workerId: 'w', limit: 2 })).json.jobs;
      const done = await Promise.all([
        post(t.app, `${api}/jobs/${a.id}/complete`, { workerId: 'w', lockToken: a.lockToken }),
        post(other, `${api}/jobs/${b.id}/complete`, { workerId: 'w', lockToken: b.lockToken }),
      ]);
      expect(done.map((d) => d.status)).toEqual([200, 200]);
      const claims = await Promise.all([
        post(t.app, `${api}/queues/parent/claim`, { workerId: 'p1', limit: 5 }),
        post(other, `${api}/queues/parent/claim`, { workerId: 'p2', limit: 5 }),
      ]);
      expect(claims.flatMap((c) => c.json.jobs.map((j: { id: string }) => j.id))).toEqual([parent]);
      const events = (await t.events(parent)).map((e) => e.type);
      expect(events.filter((e) => e === 'dependencies_met')).toHaveLength(1);
      expect(events.filter((e) => e === 'dependency_completed')).toHaveLength(1);
      const winner = claims.findIndex((c) => c.json.jobs.length === 1);
      const taken = claims[winner]!.json.jobs[0];
      expect((await post(t.app, `${api}/jobs/${parent}/complete`, { workerId: winner === 0 ? 'p1' : 'p2', lockToken: taken.lockToken })).status).toBe(200);
    }
  } finally {
    second.close();
  }
  expect(t.errors).toEqual([]);
});
