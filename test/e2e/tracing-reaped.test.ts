/**
 * A reaped attempt and its rerun, as traces show them: a real server (with
 * its in-process reaper) on a loopback port, worker A through the fault
 * proxy, worker B direct, the SDK's default settings, the OpenTelemetry SDK
 * with an in-memory exporter. A's connection stalls both ways while its
 * handler runs; A fences itself (`lease_expired_locally`), its handler stops
 * and its failure cannot be delivered, so its attempt span ends as
 * `abandoned` with status ERROR and a `lease_lost` event. The reaper takes
 * the job back and B runs it: a new span, attempt 2, in the same trace,
 * parented to the same producer span.
 *
 * The server's lease, heartbeat and grace are shortened together, as the
 * SDK derives its timings from them (as in stalled-connection.test.ts).
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, expect, test } from 'vitest';
import { startProxy } from '../../tools/chaos/proxy.ts';
import { createClient } from '../../src/client/index.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { setup } from '../support/helpers.ts';
import { enableTracing, parentOf } from '../support/tracing.ts';
import { until } from '../support/until.ts';

const SERVER: Partial<Config> = { leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000, reaperIntervalMs: 500, workerAliveMs: 4_000, maxReapDeferMs: 2_000 };
const quiet = { info() {}, warn() {}, error() {} };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

test('a reaped attempt ends its span (abandoned, ERROR, lease_lost event); the rerun is a new span in the same trace', async () => {
  const tracing = enableTracing();
  cleanups.push(() => tracing.disable());
  const t = await setup(SERVER);
  cleanups.push(() => t.close());
  const server = await startServer(defaultConfig({ ...SERVER, databaseUrl: t.url, host: '127.0.0.1', port: 0 }), { log: silentLogger });
  cleanups.push(() => server.close());
  const proxy = await startProxy(() => Number(new URL(server.url).port));

  let aStarted = false;
  const a = createWorker({
    transport: httpTransport({ url: `http://127.0.0.1:${proxy.port}` }),
    queue: 'q',
    workerId: 'worker-a',
    handleSignals: false,
    logger: quiet,
    // Stops when told to, as a handler should.
    handler: (ctx) =>
      new Promise((_, reject) => {
        aStarted = true;
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      }),
  });
  cleanups.push(() => a.close({ drainTimeoutMs: 0 }));
  a.start();
  const { id } = await createClient({ url: server.url }).enqueue('q', { n: 1 });
  await until('A runs the job', () => aStarted);
  // Longer than the test: the link heals only when the proxy closes.
  void proxy.partition('stall', 60_000);
  cleanups.push(() => proxy.close());

  const b = createWorker({ transport: httpTransport({ url: server.url }), queue: 'q', workerId: 'worker-b', handleSignals: false, logger: quiet, handler: () => 'done by B' });
  cleanups.push(() => b.close({ drainTimeoutMs: 0 }));
  b.start();
  await until('both attempts ended', () => tracing.named('process q').length === 2, 25_000, () => JSON.stringify({ a: a.stats, b: b.stats }));

  const [send] = tracing.named('send q');
  const attempts = tracing.named('process q');
  const byA = attempts.find((s) => s.attributes['messaging.client.id'] === 'worker-a')!;
  const byB = attempts.find((s) => s.attributes['messaging.client.id'] === 'worker-b')!;
  expect(byA.attributes).toMatchObject({ 'messaging.message.id': id, 'leasehold.job.attempt': 1, 'leasehold.job.outcome': 'abandoned', 'error.type': 'abandoned' });
  expect(byA.status.code).toBe(SpanStatusCode.ERROR);
  expect(byA.status.message).toMatch(/could not be delivered/);
  const lost = byA.events.find((e) => e.name === 'lease_lost');
  expect(lost?.attributes).toMatchObject({ 'leasehold.abort.reason': 'lease_expired_locally' });
  expect(byB.attributes).toMatchObject({ 'messaging.message.id': id, 'leasehold.job.attempt': 2, 'leasehold.job.outcome': 'completed' });
  // Same trace, same producer parent, two spans; the rerun started after A fenced itself.
  for (const attempt of [byA, byB]) {
    expect(attempt.spanContext().traceId).toBe(send!.spanContext().traceId);
    expect(parentOf(attempt)).toBe(send!.spanContext().spanId);
  }
  expect(byA.spanContext().spanId).not.toBe(byB.spanContext().spanId);
  const nanos = ([s, ns]: [number, number]) => s * 1e9 + ns;
  expect(nanos(lost!.time)).toBeLessThan(nanos(byB.startTime));
});
