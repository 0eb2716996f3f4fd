/**
 * What the dashboard's counters (drizzle/0004 triggers: finished_counts,
 * queue_minutes) cost the hot path: the 8-slot claim+complete loop of
 * bench/inprocess.ts on fresh databases with and without those triggers,
 * alternating which goes first, 6 rounds each. Prints both medians and their
 * ratio. `npx tsx bench/counters-ab.ts` (about 2 minutes).
 */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import type { Db } from '../src/db/db.ts';
import { jobsClaimPending } from '../src/db/store/claim.ts';
import { jobsCompleteIfOwned } from '../src/db/store/finish.ts';
import { median, openTempDb, seedPending } from './lib.ts';
import { runSlots, type Driver } from './worker-loop.ts';
const config = defaultConfig();
function driver(db: Db): Driver {
  return {
    async claim(limit) {
      const c = await jobsClaimPending(db, { queue: 'bench', workerId: 'w', limit, now: DB_CLOCK, defaults: config });
      return c.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
    },
    async complete(leases) {
      const o = await jobsCompleteIfOwned(db, { workerId: 'w', results: leases.map((l) => ({ id: Number(l.id), lockToken: l.lockToken, data: null })), now: DB_CLOCK });
      return o.filter((x) => x.ok).length;
    },
  };
}
/** Every trigger drizzle/0004 adds. */
const TRIGGERS = ['jobs_finished_insert', 'jobs_finished_enter', 'jobs_finished_leave', 'jobs_finished_delete', 'jobs_minute_reaped'];
const res: Record<string, number[]> = { with: [], without: [] };
for (let round = 0; round < 6; round++) {
  for (const v of round % 2 ? ['with', 'without'] : ['without', 'with']) {
    const db = await openTempDb('ab');
    if (v === 'without') for (const t of TRIGGERS) await db.client.execute(`DROP TRIGGER ${t}`);
    await seedPending(db.client, 'bench', 20_000);
    const r = await runSlots(driver(db.db), { total: 20_000, slots: 8, maxClaim: 50, maxSeconds: 6 });
    res[v]!.push(r.jobs / r.seconds);
    db.done();
  }
}
console.log('with   ', res.with!.map((x) => x.toFixed(0)).join(' '), 'median', median(res.with!).toFixed(0));
console.log('without', res.without!.map((x) => x.toFixed(0)).join(' '), 'median', median(res.without!).toFixed(0));
console.log('ratio', (median(res.with!) / median(res.without!)).toFixed(3));
