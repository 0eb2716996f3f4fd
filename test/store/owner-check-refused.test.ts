/**
 * Owner check answers the reaper refuses (src/maintenance/owner-check.ts),
 * against a real HTTP server on 127.0.0.1: an answer that never ends is read
 * only up to its cap, and a redirect is not followed, even to a URL that
 * answers "gone". Each is `unknown` for the decision (the job is left inside
 * its grace, as without a check), counted in /metrics
 * (leasehold_owner_check_refused_total) and logged.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import type { LogRecord } from '../../src/core/log.ts';
import { OWNER_CHECK_MAX_BYTES } from '../../src/maintenance/owner-check.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { reapLogger } from '../../src/runtime/reaper-timer.ts';
import { recordingLogger, setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

let t: TestBed | undefined;
let check: Server | undefined;
afterEach(async () => {
  t?.close();
  check?.closeAllConnections();
  await new Promise((r) => (check ? check.close(r) : r(undefined)));
  t = check = undefined;
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  check = createServer(handler);
  await new Promise<void>((r) => check!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(check.address() as AddressInfo).port}`;
}

/** A job claimed by w1 (process w1-p1 on host-a), its lease expired a moment ago: inside its grace, so only "gone" would take it now. */
async function expiredInGrace(): Promise<string> {
  const job = await t!.enqueue('q');
  expect((await t!.post('/api/v1/workers/beat', { workerId: 'w1', instanceId: 'w1-p1', host: 'host-a', pid: 101 })).status).toBe(200);
  await t!.claim('q', 'w1', { instanceId: 'w1-p1' });
  t!.clock.advance(30_001);
  return job.id as string;
}

async function pass() {
  const logs: LogRecord[] = [];
  const report = await runMaintenancePass(t!.db, t!.clock.now(), t!.config, reapLogger(recordingLogger(logs)));
  return { report, logs: logs.filter((l) => l.event === 'owner_check_refused') };
}

const eventMessage = async (id: string) =>
  String((await t!.client.execute({ sql: "SELECT message FROM events WHERE job_id = ? AND type IN ('reaped', 'reap_deferred', 'reap_skipped') ORDER BY id DESC LIMIT 1", args: [id] })).rows[0]?.message ?? '');

const refusedMetric = async (reason: string) => Number(new RegExp(`^leasehold_owner_check_refused_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec((await t!.get('/metrics')).text)?.[1]);

test('an answer that never ends is read up to the cap, then dropped: unknown (the job keeps its grace), counted and logged', async () => {
  let written = 0;
  let closedEarly = false;
  const url = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) written += chunk.length;
      if (!res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => (closedEarly = true));
    res.write('{"state": "gone"');
    pump();
  });
  // A long timeout: only the cap can end the read before it.
  t = await setup({ ownerCheckUrl: `${url}/owner`, ownerCheckTimeoutMs: 10_000 });
  const id = await expiredInGrace();
  const { report, logs } = await pass();
  expect(report.requeued).toEqual([]);
  expect((await t.get(`/api/v1/jobs/${id}`)).json.job.status).toBe('running');
  // The reaper hung up: the endless answer stops being sent.
  await until('the check to see its connection closed', () => closedEarly);
  expect(await refusedMetric('too_large')).toBe(1);
  expect(await refusedMetric('redirect')).toBe(0);
  expect(logs).toHaveLength(1);
  expect(logs[0]!.msg).toMatch(new RegExp(`refused the owner check's answer about w1 \\(too_large\\), treated as unknown: .*longer than ${OWNER_CHECK_MAX_BYTES} bytes`));
  // What the server managed to send before the reaper hung up: socket buffers, not the endless answer.
  expect(written).toBeLessThan(64 * 1024 * 1024);
});

test('a redirect is not followed, even to a URL that answers "gone": unknown, counted and logged, and the target is never asked', async () => {
  const asked: string[] = [];
  const url = await listen((req, res) => {
    asked.push(new URL(req.url!, 'http://x').pathname);
    if (req.url!.startsWith('/owner')) res.writeHead(302, { location: '/gone' }).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"state":"gone"}');
  });
  t = await setup({ ownerCheckUrl: `${url}/owner` });
  const id = await expiredInGrace();
  const { report, logs } = await pass();
  expect(report.requeued).toEqual([]);
  expect(asked).toEqual(['/owner']);
  expect((await t.get(`/api/v1/jobs/${id}`)).json.job.status).toBe('running');
  expect(await refusedMetric('redirect')).toBe(1);
  expect(logs.map((l) => l.msg)).toEqual([expect.stringMatching(/refused the owner check's answer about w1 \(redirect\), treated as unknown: .*redirect \(HTTP 302\), which is not followed/)]);

  // Past lease + grace, taken by the usual rule, the event naming what the check did.
  t.clock.advance(10_000);
  const later = await pass();
  expect(later.report.requeued).toEqual([{ id, reason: 'reaped_due_to_expired_lease' }]);
  expect(await eventMessage(id)).toMatch(/owner check: unknown \(asked about worker w1 on host-a, pid 101: the check answered a redirect \(HTTP 302\), which is not followed\)/);
  expect(await refusedMetric('redirect')).toBe(2);
});
