/**
 * `leasehold jobs redrive` against a real `leasehold serve` process: the dry
 * run lists the dead letters and changes nothing; the real run sends them
 * back to their queues (saying how many went where), audited with the
 * reason; --from and --ids narrow it; --json prints the API's answer; a
 * missing reason is a usage error (exit 2) naming it, and sends nothing.
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-redrive', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;
const api = served.api;
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };

const job = async (id: string) => ((await (await fetch(api(`/jobs/${id}`), { headers: admin })).json()) as { job: Record<string, any> }).job;

/** `n` jobs of `queue` (whose dead-letter queue is `dead`) that failed for good: dead letters. */
async function deadLetters(queue: string, dead: string, n: number): Promise<string[]> {
  const set = await fetch(api(`/queues/${queue}/settings`), { method: 'PATCH', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ deadLetterQueue: dead }) });
  expect(set.status).toBe(200);
  await postJson(api(`/queues/${queue}/jobs`), { jobs: Array.from({ length: n }, (_, i) => ({ payload: { i }, maxAttempts: 1 })) }, worker);
  const { json } = await postJson(api(`/queues/${queue}/claim`), { workerId: 'w1', limit: n }, worker);
  for (const j of json.jobs) await postJson(api(`/jobs/${j.id}/fail`), { workerId: 'w1', lockToken: j.lockToken, error: 'smtp refused' }, worker);
  return json.jobs.map((j: { id: string }) => j.id);
}

test('dry run lists and changes nothing; the redrive sends them back and says where; audited with the reason', async () => {
  const mail = await deadLetters('mail', 'dead', 2);
  const sms = await deadLetters('sms', 'dead', 1);

  const dry = await cli(['jobs', 'redrive', '--queue', 'dead', '--dry-run']);
  expect(dry.status, dry.stderr).toBe(0);
  expect(dry.stdout).toMatch(/^id\s+back to queue\s+attempt\s+died\s+dead-lettered\s+last error/);
  expect(dry.stdout).toMatch(new RegExp(`${mail[0]}\\s+mail\\s+1/1\\s+failed \\(attempts_exhausted\\)`));
  expect(dry.stdout).toContain('dry run: 3 matching dead letters in dead; 3 would be sent back to their queues, pending now with fresh attempts (limit 100). Nothing changed.');
  for (const id of [...mail, ...sms]) expect(await job(id)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });

  // --from narrows to one queue's dead letters.
  const fromSms = await cli(['jobs', 'redrive', '--queue', 'dead', '--from', 'sms', '--dry-run']);
  expect(fromSms.stdout).toContain('dry run: 1 matching dead letter in dead from queue sms; 1 would be sent back');

  const done = await cli(['jobs', 'redrive', '--queue', 'dead', '--ids', `${mail[0]},${sms[0]}`, '--reason', 'smtp fixed']);
  expect(done.status, done.stderr).toBe(0);
  expect(done.stdout).toContain(`2 jobs sent back (1 to mail, 1 to sms), pending now with fresh attempts, of 2 matching dead letters in dead (limit 100): ${mail[0]} ${sms[0]}`);
  expect(await job(mail[0]!)).toMatchObject({ status: 'pending', queue: 'mail', attempt: 0, deadLetterQueue: null });
  expect(await job(sms[0]!)).toMatchObject({ status: 'pending', queue: 'sms', deadLetterQueue: null });
  expect(await job(mail[1]!)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });

  const audit = (await (await fetch(api('/audit?action=jobs.bulk'), { headers: admin })).json()) as { entries: Record<string, any>[] };
  expect(audit.entries[0]).toMatchObject({ queue: 'dead', reason: 'smtp fixed', actor: expect.stringMatching(/^cli/), after: { redrive: 'dead', ids: [mail[0], sms[0]], changed: 2 } });
});

test('--json prints the answer; a missing reason is a usage error naming it and sends nothing back', async () => {
  const [id] = await deadLetters('push', 'push-dead', 1);

  const noReason = await cli(['jobs', 'redrive', '--queue', 'push-dead']);
  expect(noReason.status).toBe(2);
  expect(noReason.stderr).toContain('jobs redrive needs --reason: a redrive needs a reason (kept in the audit trail)');
  expect(await job(id!)).toMatchObject({ status: 'failed', deadLetterQueue: 'push-dead' });
  const badIds = await cli(['jobs', 'redrive', '--queue', 'push-dead', '--ids', '1,x', '--dry-run']);
  expect(badIds.status).toBe(2);
  expect(badIds.stderr).toContain('--ids must be job ids');

  const dry = await cli(['jobs', 'redrive', '--queue', 'push-dead', '--dry-run', '--json']);
  expect(dry.status, dry.stderr).toBe(0);
  expect(JSON.parse(dry.stdout)).toMatchObject({ deadLetterQueue: 'push-dead', dryRun: true, matching: 1, ids: [id], jobs: [{ id, queue: 'push', lastError: 'smtp refused' }] });
  const done = await cli(['jobs', 'redrive', '--queue', 'push-dead', '--limit', '5', '--reason', 'fixed', '--json']);
  expect(done.status, done.stderr).toBe(0);
  expect(JSON.parse(done.stdout)).toMatchObject({ dryRun: false, changed: 1, limit: 5, ids: [id], movedTo: [{ queue: 'push', jobs: 1 }] });
  expect(await job(id!)).toMatchObject({ status: 'pending', queue: 'push' });

  const help = await cli(['jobs', '--help']);
  expect(help.stdout).toContain('redrive --queue DEAD [--from Q] [--ids 1,2,3] [--limit N] [--dry-run] --reason R');
  expect(help.stdout).toContain('--ids');
});
