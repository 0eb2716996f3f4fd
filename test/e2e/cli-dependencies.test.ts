/**
 * `leasehold jobs dependencies ID` against a real `leasehold serve` process:
 * a flow's parent lists what it waits for (a completed child with its
 * result, a failed one with its error, the edges' states) and a child lists
 * the parent waiting for it; --json prints the API's answer; an unknown id
 * is a 404 on one line, exit 1. A job held because its dependency failed
 * says so in `jobs show` and `jobs held`, not as a lost attempt.
 */
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-dependencies', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;
const worker = { authorization: `Bearer ${WORKER}` };

test('jobs dependencies ID: what a job waits for, with results and errors, and what waits for it', async () => {
  const flow = await postJson(
    served.api('/flows'),
    { jobs: [{ queue: 'parts', payload: 0 }, { queue: 'parts', payload: 1 }, { queue: 'assemble', payload: {}, dependsOn: ['#0', '#1'], dependencyPolicy: 'hold' }] },
    worker,
  );
  expect(flow.status).toBe(201);
  const [a, b, parent] = (flow.json.jobs as { id: string }[]).map((j) => j.id);
  const claimed = (await postJson(served.api('/queues/parts/claim'), { workerId: 'w1', limit: 2 }, worker)).json.jobs as { id: string; lockToken: string }[];
  const lease = (id: string) => claimed.find((j) => j.id === id)!.lockToken;
  expect((await postJson(served.api(`/jobs/${a}/complete`), { workerId: 'w1', lockToken: lease(a!), result: { url: 's3://a' } }, worker)).status).toBe(200);
  expect((await postJson(served.api(`/jobs/${b}/fail`), { workerId: 'w1', lockToken: lease(b!), error: 'out of stock', retryable: false }, worker)).status).toBe(200);

  const shown = await cli(['jobs', 'dependencies', parent!]);
  expect(shown.status, shown.stderr).toBe(0);
  const lines = shown.stdout.split('\n');
  expect(lines[0]).toBe(`job ${parent} waits for 2 jobs:`);
  expect(lines[1]).toMatch(/^id\s+queue\s+status\s+edge\s+updated\s+result or last error$/);
  expect(lines[2]).toMatch(new RegExp(`^${a}\\s+parts\\s+completed\\s+completed\\s+.+ago\\s+\\{"url":"s3://a"\\}$`));
  expect(lines[3]).toMatch(new RegExp(`^${b}\\s+parts\\s+failed\\s+failed\\s+.+ago\\s+out of stock$`));
  expect(shown.stdout).toContain(`job ${parent} is waited for by 0 jobs:\n(none)`);

  const child = await cli(['jobs', 'dependencies', a!]);
  expect(child.stdout).toContain(`job ${a} waits for 0 jobs:\n(none)`);
  // The dependent's own last error: why it is held.
  expect(child.stdout).toMatch(new RegExp(`^${parent}\\s+assemble\\s+pending\\s+completed\\s+.+ago\\s+dependency ${b} \\(parts\\) was failed: out of stock$`, 'm'));

  const json = await cli(['jobs', 'dependencies', parent!, '--json']);
  expect(JSON.parse(json.stdout)).toMatchObject({ dependencies: [{ id: a, result: { url: 's3://a' } }, { id: b, state: 'failed', lastError: 'out of stock' }], dependents: [] });

  // Held because b failed (policy 'hold'): no lost attempt to speak of.
  expect((await cli(['jobs', 'show', parent!])).stdout).toMatch(new RegExp(`held:\\s+since .+: a dependency failed \\(policy 'hold'\\); retry it to let the flow go on \\(jobs dependencies ${parent} names it\\)`));
  expect((await cli(['jobs', 'held', '--queue', 'assemble'])).stdout).toContain(`a dependency failed: jobs dependencies ${parent}`);

  const unknown = await cli(['jobs', 'dependencies', '987654']);
  expect(unknown.status).toBe(1);
  expect(unknown.stderr).toContain('404');
  const usage = await cli(['jobs', 'dependencies']);
  expect(usage.status).toBe(2);
  expect(usage.stderr).toContain('jobs dependencies needs a job id');
});
