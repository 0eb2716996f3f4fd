/**
 * The operator CLI for held jobs (onLost 'hold') against a real `leasehold
 * serve` process: `queues settings Q onLost=hold`, `jobs held`, `jobs show`,
 * and `jobs release|complete|fail ID --reason R`, with a reason required and
 * a job that is not held refused with its status.
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-held', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;

const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };
const api = served.api;
const job = async (id: string) => ((await (await fetch(api(`/jobs/${id}`), { headers: admin })).json()) as { job: Record<string, any> }).job;

/** A job of a hold queue, claimed by w1 and then taken from it by a forced requeue: held. */
async function heldJob(queue: string): Promise<string> {
  const { json } = await postJson(api(`/queues/${queue}/jobs`), { payload: {} }, worker);
  await postJson(api(`/queues/${queue}/claim`), { workerId: 'w1' }, worker);
  const r = await postJson(api(`/jobs/${json.job.id}/requeue`), { force: true, reason: 'w1 host replaced' }, admin);
  expect(r.json.job.heldAt).not.toBeNull();
  return json.job.id;
}

test('queues settings onLost=hold, jobs held and show, then release, complete and fail with a reason', async () => {
  const set = await cli(['queues', 'settings', 'pay', 'onLost=hold']);
  expect(set.status).toBe(0);
  expect(set.stdout).toMatch(/onLost\s+hold\s+this queue/);
  const [a, b, c] = [await heldJob('pay'), await heldJob('pay'), await heldJob('pay')];
  const list = await cli(['jobs', 'held', '--queue', 'pay']);
  expect(list.status).toBe(0);
  expect(list.stdout).toMatch(/^id\s+queue\s+held\s+lost attempt\s+worker/);
  expect(list.stdout).toContain('w1');
  expect((await cli(['jobs', 'show', a])).stdout).toContain(`jobs release|complete|fail ${a} --reason R`);
  const noReason = await cli(['jobs', 'release', a]);
  expect(noReason.status).not.toBe(0);
  expect(noReason.stderr).toContain('--reason');
  const released = await cli(['jobs', 'release', a, '--reason', 'nothing was sent']);
  expect(released.status).toBe(0);
  expect(released.stdout).toContain(`job ${a} released (it runs again): now pending`);
  expect((await job(a)).heldAt).toBeNull();
  expect((await cli(['jobs', 'complete', b, '--reason', 'sent, per the ledger', '--result', '{"sent":true}'])).stdout).toContain('completed by hand: now completed');
  expect(await job(b)).toMatchObject({ status: 'completed', result: { sent: true } });
  expect((await cli(['jobs', 'fail', c, '--reason', 'refunded'])).stdout).toContain('failed for good: now failed');
  const again = await cli(['jobs', 'fail', c, '--reason', 'twice']);
  expect(again.status).toBe(1);
  expect(again.stderr).toContain('is failed');
});
