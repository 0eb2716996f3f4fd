/**
 * How long one 10,000-job bulk enqueue blocks the event loop: the longest gap
 * between ticks of a 1 ms interval timer on the same loop while
 * POST /api/v1/queues/:queue/jobs runs through the real app, and the answer's
 * total time. Five rounds after a warm-up; prints the longest block per round.
 * `npx tsx bench/bulk-enqueue-block.ts [jobs]`.
 *
 * (perf_hooks' monitorEventLoopDelay reported 2-31 ms here for blocks the
 * interval saw as 500-900 ms, so the interval is the measure.)
 */
import { createEngine } from '../src/engine/engine.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { createApp } from '../src/app.ts';
import { manualClock } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/log.ts';
import { openTempDb } from './lib.ts';

const count = Number(process.argv[2] ?? 10_000);
const db = await openTempDb('bulk-block');
const app = createApp({ engine: createEngine({ store: createStore(db.db), config: defaultConfig({ databaseUrl: db.tmp.url }), clock: manualClock(), log: silentLogger }) });
const body = JSON.stringify({ jobs: Array.from({ length: count }, (_, i) => ({ payload: { i, to: `user${i}@example.com` }, idempotencyKey: `k-${i}` })) });

const rounds: { blockMs: number; totalMs: number }[] = [];
for (let round = 0; round < 6; round++) {
  let last = performance.now();
  let longest = 0;
  const tick = setInterval(() => {
    const t = performance.now();
    longest = Math.max(longest, t - last);
    last = t;
  }, 1);
  const started = performance.now();
  const res = await app.request(`/api/v1/queues/bench${round}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.text();
  const totalMs = performance.now() - started;
  // Let the monitor's timer run once more so the last stall is recorded.
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(tick);
  if (res.status !== 201) throw new Error(`enqueue answered ${res.status}`);
  if (round > 0) rounds.push({ blockMs: longest, totalMs });
}
console.log(`${count} jobs per bulk; longest event-loop block per round (ms): ${rounds.map((r) => r.blockMs.toFixed(0)).join(', ')}; answer time (ms): ${rounds.map((r) => r.totalMs.toFixed(0)).join(', ')}`);
db.done();
