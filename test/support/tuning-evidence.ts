/**
 * What-if tuning's evidence made through the API with the manual clock: a
 * 4.5 s event-loop block that loses a 2 s lease (queue `q`: lease 2 s,
 * heartbeat 500 ms, grace 1 s). The owner reports the block and beats on,
 * so the reaper's take, one pass past its wait for a live owner, is a
 * false reap whose pause ended with the block.
 */
import { expect } from 'vitest';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import type { TestBed } from './helpers.ts';

const api = '/api/v1';

/** The lost job's id. */
export async function blockLosesTheLease(t: TestBed): Promise<string> {
  expect((await t.call('PATCH', `${api}/queues/q/settings`, { leaseMs: 2_000, heartbeatMs: 500, graceMs: 1_000 })).status).toBe(200);
  await t.enqueue('q');
  await t.post(`${api}/workers/beat`, { workerId: 'w', instanceId: 'p1', queues: ['q'] });
  const [job] = await t.claim('q', 'w', { instanceId: 'p1' });
  t.clock.advance(500);
  expect((await t.post(`${api}/heartbeats`, { workerId: 'w', leases: [{ id: job!.id, lockToken: job!.lockToken }] })).status).toBe(200);
  // The process blocks 4.5 s; afterwards it says so and (its lease gone by its own clock) stops the job.
  t.clock.advance(4_500);
  await t.post(`${api}/workers/beat`, { workerId: 'w', instanceId: 'p1', queues: ['q'], eventLoopBlocks: 1, longestEventLoopBlockMs: 4_500 });
  // One pass past the wait for a live owner takes it.
  t.clock.advance(35_000);
  await t.post(`${api}/workers/beat`, { workerId: 'w', instanceId: 'p1', queues: ['q'], eventLoopBlocks: 1, longestEventLoopBlockMs: 4_500 });
  const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
  expect(report.requeued.map((r) => String(r.id))).toEqual([String(job!.id)]);
  return String(job!.id);
}
