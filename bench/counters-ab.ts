/**
 * What the dashboard's counters (drizzle/0004 triggers: finished_counts,
 * queue_minutes) cost the hot path: the 8-slot claim+complete loop of
 * bench/inprocess.ts on fresh databases with and without those triggers,
 * alternating which goes first, 6 rounds each. Prints both medians and their
 * ratio. `npx tsx bench/counters-ab.ts` (about 2 minutes).
 */
import { median, openTempDb, seedPending } from './lib.ts';
import { inProcessDriver } from './inprocess.ts';
import { runSlots } from './worker-loop.ts';

/** Every trigger drizzle/0004 adds. */
const TRIGGERS = ['jobs_finished_insert', 'jobs_finished_enter', 'jobs_finished_leave', 'jobs_finished_delete', 'jobs_minute_reaped'];
const res: Record<string, number[]> = { with: [], without: [] };
for (let round = 0; round < 6; round++) {
  for (const v of round % 2 ? ['with', 'without'] : ['without', 'with']) {
    const db = await openTempDb('ab');
    if (v === 'without') for (const t of TRIGGERS) await db.client.execute(`DROP TRIGGER ${t}`);
    await seedPending(db.client, 'bench', 20_000);
    const r = await runSlots(inProcessDriver(db.db), { total: 20_000, slots: 8, maxClaim: 50, maxSeconds: 6 });
    res[v]!.push(r.jobs / r.seconds);
    db.done();
  }
}
console.log('with   ', res.with!.map((x) => x.toFixed(0)).join(' '), 'median', median(res.with!).toFixed(0));
console.log('without', res.without!.map((x) => x.toFixed(0)).join(' '), 'median', median(res.without!).toFixed(0));
console.log('ratio', (median(res.with!) / median(res.without!)).toFixed(3));
