/**
 * `leasehold tuning what-if` against a real `leasehold serve` process: a job
 * its owner kept silent for at least 300 ms and then completed is healthy
 * under today's lease (30 s) and a false reap under a 200 ms candidate; the
 * table says so today vs candidate, --json prints the API's answer, a flag
 * that is not a number is a usage error (exit 2, nothing sent), and a
 * candidate the server refuses (heartbeat not under the lease) or an unknown
 * queue exits 1 with the server's message.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-tuning', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };

/** Candidate flags that make the one silent attempt a false reap: lease + grace 200 ms, the same heartbeat as today. */
const TIGHT = ['--lease-ms', '200', '--grace-ms', '0', '--heartbeat-ms', '100'];

beforeAll(async () => {
  const set = await fetch(served.api('/queues/mail/settings'), { method: 'PATCH', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ leaseMs: 30_000, heartbeatMs: 100, graceMs: 100 }) });
  expect(set.status, await set.text()).toBe(200);
  await postJson(served.api('/queues/mail/jobs'), { payload: {} }, worker);
  const { json } = await postJson(served.api('/queues/mail/claim'), { workerId: 'w1' }, worker);
  const [job] = json.jobs;
  // Silent for at least this long (no heartbeat), then done by its owner: a healthy attempt with that silence.
  await sleep(300);
  const done = await postJson(served.api(`/jobs/${job.id}/complete`), { workerId: 'w1', lockToken: job.lockToken }, worker);
  expect(done.status).toBe(200);
});

test('the table: today vs candidate, false reaps and the evidence counted', async () => {
  const r = await cli(['tuning', 'what-if', '--queue', 'mail', ...TIGHT]);
  expect(r.status, r.stderr).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines[0]).toMatch(/^\s+today\s+candidate$/);
  expect(lines).toContainEqual(expect.stringMatching(/^lease\s+30000 ms\s+200 ms$/));
  expect(lines).toContainEqual(expect.stringMatching(/^false reaps\s+0\s+1$/));
  // A false reap replayed from a silence names no job: the evidence keeps counts only.
  expect(lines).toContainEqual(expect.stringMatching(/^jobs taken back\s+-\s+\+1 unnamed$/));
  expect(r.stdout).toMatch(/^owner-ended attempts:\s+1, longest silence/m);
  expect(r.stdout).toMatch(/^worker blocks:\s+0$/m);

  // Without a candidate, the candidate is today's settings.
  const same = await cli(['tuning', 'what-if', '--queue', 'mail']);
  expect(same.status, same.stderr).toBe(0);
  expect(same.stdout).toMatch(/^false reaps\s+0\s+0$/m);
});

test("--json prints the API's answer", async () => {
  const r = await cli(['tuning', 'what-if', '--queue', 'mail', ...TIGHT, '--window-ms', '600000', '--json']);
  expect(r.status, r.stderr).toBe(0);
  const answer = JSON.parse(r.stdout);
  expect(answer.queue).toBe('mail');
  expect(answer.window.untilMs - answer.window.sinceMs).toBe(600_001);
  expect(answer.evidence.healthyAttempts).toBe(1);
  expect(answer.evidence.longestHealthySilenceMs).toBeGreaterThanOrEqual(300);
  expect(answer.current).toMatchObject({ falseReaps: 0, settings: { leaseMs: 30_000, graceMs: 100, heartbeatMs: 100 } });
  expect(answer.candidate).toMatchObject({ falseReaps: 1, falseReapJobs: [], settings: { leaseMs: 200, graceMs: 0, heartbeatMs: 100 } });
});

test('a bad flag is a usage error (exit 2); what the server refuses exits 1 with its message', async () => {
  for (const args of [['--lease-ms', 'abc'], ['--window-ms', '1.5'], []] as string[][]) {
    const r = await cli(['tuning', 'what-if', ...(args.length ? ['--queue', 'mail'] : []), ...args]);
    expect(r.status, args.join(' ')).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(args[0] ?? '--queue');
  }
  const noSub = await cli(['tuning', '--queue', 'mail']);
  expect(noSub.status).toBe(2);
  expect(noSub.stderr).toContain('what-if');

  const refused = await cli(['tuning', 'what-if', '--queue', 'mail', '--lease-ms', '1000', '--heartbeat-ms', '1000']);
  expect(refused.status).toBe(1);
  expect(refused.stderr).toContain('400 invalid_request: heartbeatMs (1000) must be under leaseMs (1000)');
  const window = await cli(['tuning', 'what-if', '--queue', 'mail', '--window-ms', '1000']);
  expect(window.status).toBe(1);
  expect(window.stderr).toContain('windowMs must be a whole number from 60000');
  const unknown = await cli(['tuning', 'what-if', '--queue', 'nope']);
  expect(unknown.status).toBe(1);
  expect(unknown.stderr).toContain('404 not_found: no queue is named nope');
});
