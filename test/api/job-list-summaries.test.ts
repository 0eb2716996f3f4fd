/** GET /jobs lists summaries: a page of large jobs stays small; GET /jobs/:id still has the whole job. */
import { afterEach, expect, test } from 'vitest';
import { JOB_PREVIEW_CHARS } from '../../src/core/wire.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

const MiB = 1024 * 1024;

test('60 jobs with 1 MiB payloads list in a small answer; each job read alone is whole', async () => {
  t = await setup();
  const big = 'x'.repeat(MiB);
  const bulk = await t.post('/api/v1/queues/big/jobs', { jobs: Array.from({ length: 60 }, (_, i) => ({ payload: { i } })) });
  const ids: string[] = bulk.json.jobs.map((j: { id: string }) => j.id);
  // 60 MiB through the API takes 20 s here; the payloads are made in place instead.
  await t.client.execute(`UPDATE jobs SET payload = json_object('i', json_extract(payload, '$.i'), 'big', replace(hex(zeroblob(${MiB / 2})), '0', 'x')) WHERE queue_name = 'big'`);

  const res = await t.get('/api/v1/jobs?queue=big&limit=500');
  expect(res.status).toBe(200);
  expect(res.json.jobs).toHaveLength(60);
  // 60 MB of payloads; the page is a few hundred bytes per job.
  expect(res.text.length).toBeLessThan(60 * 2000);
  const first = res.json.jobs.find((j: any) => j.id === ids[0]);
  expect(first).not.toHaveProperty('payload');
  expect(first).not.toHaveProperty('result');
  const text = JSON.stringify({ i: 0, big });
  expect(first.payloadBytes).toBe(Buffer.byteLength(text));
  expect(first.payloadPreview).toBe(text.slice(0, JOB_PREVIEW_CHARS));
  expect(first.resultBytes).toBeNull();
  expect(first.resultPreview).toBeNull();
  expect(first.status).toBe('pending');
  expect(first.queue).toBe('big');

  const one = await t.get(`/api/v1/jobs/${ids[0]}`);
  expect(one.json.job.payload).toEqual({ i: 0, big });
});

test('a summary gives the size of a result, progress and checkpoint, in bytes of UTF-8, and a short payload whole', async () => {
  t = await setup();
  const job = await t.enqueue('q', { payload: 'é' });
  const [claimed] = await t.claim('q', 'w1');
  const auth = { lockToken: claimed!.lockToken, workerId: 'w1' };
  expect((await t.post(`/api/v1/jobs/${job.id}/heartbeat`, { ...auth, progress: { pct: 50 } })).status).toBe(200);
  expect((await t.post(`/api/v1/jobs/${job.id}/checkpoint`, { ...auth, checkpoint: 'ab' })).status).toBe(200);
  expect((await t.post(`/api/v1/jobs/${job.id}/complete`, { ...auth, result: { done: 'ü' } })).status).toBe(200);

  const [summary] = (await t.get('/api/v1/jobs?queue=q')).json.jobs;
  expect(summary.payloadPreview).toBe('"é"');
  expect(summary.payloadBytes).toBe(4);
  expect(summary.resultPreview).toBe('{"done":"ü"}');
  expect(summary.resultBytes).toBe(Buffer.byteLength('{"done":"ü"}'));
  expect(summary.progressBytes).toBe(Buffer.byteLength('{"pct":50}'));
  expect(summary.checkpointBytes).toBe(4);
  expect(summary.status).toBe('completed');
});
