/**
 * POST /api/v1/jobs/wait on Workers (D1 in workerd): a request there cannot
 * be woken by another's I/O, so each wait re-reads its own jobs inside its
 * own request, a bounded number of times. It still sees a completion made by
 * another request, answers `until: all`, an id no job has at once, and answers
 * when its waitMs passes with nothing counted.
 */
import { expect, test } from 'vitest';
import { claim, enqueue, post } from './helpers.ts';

const api = '/api/v1';

test('a wait sees a completion made by another request, and answers the job whole', async () => {
  const job = await enqueue('wait', { payload: { n: 1 } });
  const waiting = post(`${api}/jobs/wait`, { jobs: [{ id: job.id }], waitMs: 10_000 });
  const [claimed] = await claim('wait', 'w1');
  const done = await post(`${api}/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: claimed!.lockToken, result: { n: 2 } });
  expect(done.status).toBe(200);
  const res = await waiting;
  expect(res.status, JSON.stringify(res.json).slice(0, 300)).toBe(200);
  expect(res.json.jobs.map((j: any) => [j.job.id, j.job.status, j.job.result])).toEqual([[job.id, 'completed', { n: 2 }]]);
  expect(res.json.more).toBe(false);
});

test('until: all with a version seen; an id no job has answers at once; a wait whose time passes answers what counts', async () => {
  const a = await enqueue('wait-all', { payload: 1 });
  const b = await enqueue('wait-all', { payload: 2 });
  const seen = await post(`${api}/jobs/wait`, { jobs: [{ id: b.id, seen: '' }] });
  expect(seen.json.jobs[0].job.status).toBe('pending');
  const gone = await post(`${api}/jobs/wait`, { jobs: [{ id: a.id }, { id: '987654' }], waitMs: 10_000, until: 'all' });
  expect(gone.json).toEqual({ jobs: [], missing: ['987654'], more: false });
  const waiting = post(`${api}/jobs/wait`, { jobs: [{ id: a.id }, { id: b.id, seen: seen.json.jobs[0].version }], waitMs: 10_000, until: 'all' });
  const claimed = await claim('wait-all', 'w1', { limit: 2 });
  for (const j of claimed.filter((j) => j.id === a.id)) await post(`${api}/jobs/${j.id}/complete`, { workerId: 'w1', lockToken: j.lockToken });
  const res = await waiting;
  expect(res.status).toBe(200);
  // a finished; b changed (claimed) from the version seen.
  expect(res.json.jobs.map((j: any) => [j.job.id, j.job.status])).toEqual([[a.id, 'completed'], [b.id, 'running']]);

  const quiet = await post(`${api}/jobs/wait`, { jobs: [{ id: b.id }], waitMs: 600 });
  expect(quiet.status).toBe(200);
  expect(quiet.json).toEqual({ jobs: [], missing: [], more: false });
});
