/**
 * OpenTelemetry through `@opentelemetry/api` only, recorded by the SDK's
 * in-memory exporter (test/support/tracing.ts): the producer client and the
 * embedded API enqueue inside a `send <queue>` PRODUCER span whose context
 * the job carries; the server checks and stores it and answers it with the
 * claim; the worker runs each attempt in a `process <queue>` CONSUMER span
 * parented and linked to it, active inside the handler; the app's requests
 * get SERVER spans. Real server on 127.0.0.1 (or app.request for the HTTP
 * checks), a fresh database file per test.
 */
import { propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { DB_CLOCK } from '../../src/core/clock.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { silentLogger } from '../../src/core/log.ts';
import { openLeasehold } from '../../src/embedded/leasehold.ts';
import { startServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { enableTracing, parentOf, type Tracing } from '../support/tracing.ts';
import { until } from '../support/until.ts';

const quiet = { info() {}, warn() {}, error() {} };
const cleanups: (() => Promise<void> | void)[] = [];
let tracing: Tracing | undefined;
beforeEach(() => {
  tracing = enableTracing();
  cleanups.push(() => tracing?.disable());
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  tracing = undefined;
});

async function bed(overrides: Partial<Config> = {}): Promise<TestBed> {
  const t = await setup(overrides);
  cleanups.push(() => {
    expect(t.errors).toEqual([]);
    t.close();
  });
  return t;
}

async function server(t: TestBed) {
  const s = await startServer(defaultConfig({ ...t.config, host: '127.0.0.1', port: 0 }), { log: silentLogger });
  cleanups.push(() => s.close());
  return s;
}

const traceparentOf = (sc: { traceId: string; spanId: string }) => `00-${sc.traceId}-${sc.spanId}-01`;

test('one trace from enqueue to handler: the client sends in a producer span, the worker processes in a consumer span parented and linked to it, active in the handler', async () => {
  const t = await bed();
  const s = await server(t);
  const client = createClient({ url: s.url });
  const tracer = trace.getTracer('the application');
  let inHandler: { traceId: string; spanId: string } | undefined;
  const worker = createWorker({
    transport: httpTransport({ url: s.url }),
    queue: 'mail',
    handleSignals: false,
    logger: quiet,
    async handler(ctx) {
      inHandler = trace.getActiveSpan()?.spanContext();
      await new Promise((r) => setTimeout(r, 5));
      // After an await the attempt's span is still the active one: the handler's own spans are its children.
      tracer.startActiveSpan('render email', (span) => span.end());
      return { sent: ctx.job.payload };
    },
  }).start();
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));

  const enqueued = await tracer.startActiveSpan('checkout', async (root) => {
    try {
      return await client.enqueue('mail', { to: 'ada' });
    } finally {
      root.end();
    }
  });
  await until('the attempt span ended', () => tracing!.named('process mail').length === 1);

  const [root] = tracing!.named('checkout');
  const [send] = tracing!.named('send mail');
  const [process] = tracing!.named('process mail');
  const [render] = tracing!.named('render email');
  const traceId = root!.spanContext().traceId;
  // One trace: checkout -> send mail -> process mail -> render email.
  expect([send, process, render].map((s) => s!.spanContext().traceId)).toEqual([traceId, traceId, traceId]);
  expect(parentOf(send!)).toBe(root!.spanContext().spanId);
  expect(parentOf(process!)).toBe(send!.spanContext().spanId);
  expect(parentOf(render!)).toBe(process!.spanContext().spanId);
  expect(inHandler).toMatchObject({ spanId: process!.spanContext().spanId });
  // The consumer span also links to the producer's context, as the messaging conventions ask.
  expect(process!.links.map((l) => l.context.spanId)).toEqual([send!.spanContext().spanId]);

  expect(send!.kind).toBe(SpanKind.PRODUCER);
  expect(send!.attributes).toMatchObject({
    'messaging.system': 'leasehold',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': 'mail',
    'messaging.message.id': enqueued.id,
    'leasehold.job.deduplicated': false,
  });
  expect(process!.kind).toBe(SpanKind.CONSUMER);
  expect(process!.attributes).toMatchObject({
    'messaging.system': 'leasehold',
    'messaging.operation.type': 'process',
    'messaging.destination.name': 'mail',
    'messaging.message.id': enqueued.id,
    'messaging.client.id': worker.id,
    'leasehold.job.attempt': 1,
    'leasehold.job.fencing_token': 1,
    'leasehold.job.outcome': 'completed',
  });
  expect(process!.status.code).toBe(SpanStatusCode.UNSET);
  expect(process!.instrumentationScope.name).toBe('leasehold');

  // The server stored the producer span's context, and says it with the job.
  expect((await client.getJob(enqueued.id)).traceparent).toBe(traceparentOf(send!.spanContext()));
  // And the server traced its requests (the client's HTTP calls carry no trace header: that is the HTTP instrumentation's part).
  const served = tracing!.spans().filter((x) => x.kind === SpanKind.SERVER);
  expect(served.map((x) => x.name)).toContain('POST /api/v1/queues/:queue/jobs');
  expect(served.find((x) => x.name === 'POST /api/v1/queues/:queue/jobs')!.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.route': '/api/v1/queues/:queue/jobs',
    'url.path': '/api/v1/queues/mail/jobs',
    'url.scheme': 'http',
    'http.response.status_code': 201,
  });
});

test('embedded: a failed attempt and its retry are two consumer spans in the producer trace, each with its outcome', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-trace-'));
  const lh = await openLeasehold({ databaseUrl: `file:${join(dir, 'jobs.db')}`, config: { backoffBaseMs: 1, backoffMaxMs: 1 } });
  cleanups.push(() => {
    lh.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const worker = lh
    .createWorker({
      queue: 'resize',
      handleSignals: false,
      logger: quiet,
      handler(ctx) {
        if (ctx.job.attempt === 1) throw new TypeError('the image is truncated');
        return 'ok';
      },
    })
    .start();
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  const { job } = await lh.enqueue('resize', { image: 1 }, { maxAttempts: 3 });
  await until('both attempts ended', () => tracing!.named('process resize').length === 2);

  const [send] = tracing!.named('send resize');
  const [first, second] = tracing!.named('process resize');
  expect(send!.attributes).toMatchObject({ 'messaging.message.id': job.id, 'messaging.operation.type': 'send' });
  expect(job.traceparent).toBe(traceparentOf(send!.spanContext()));
  for (const attempt of [first!, second!]) {
    expect(attempt.spanContext().traceId).toBe(send!.spanContext().traceId);
    expect(parentOf(attempt)).toBe(send!.spanContext().spanId);
  }
  expect(first!.spanContext().spanId).not.toBe(second!.spanContext().spanId);
  expect(first!.attributes).toMatchObject({ 'leasehold.job.attempt': 1, 'leasehold.job.outcome': 'failed', 'leasehold.job.retryable': true, 'error.type': 'TypeError' });
  expect(first!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'the image is truncated' });
  expect(first!.events.map((e) => e.name)).toEqual(['exception']);
  expect(second!.attributes).toMatchObject({ 'leasehold.job.attempt': 2, 'leasehold.job.outcome': 'completed' });
  expect(second!.status.code).toBe(SpanStatusCode.UNSET);
});

test('a lease the server takes away (an operator\'s forced requeue): lease_lost event, the attempt abandoned; the rerun completes in the same trace', async () => {
  const t = await bed({ leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000 });
  const s = await server(t);
  const worker = createWorker({
    transport: httpTransport({ url: s.url }),
    queue: 'q',
    handleSignals: false,
    logger: quiet,
    handler: (ctx) =>
      ctx.job.attempt === 1
        ? new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
        : 'second time lucky',
  }).start();
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  const { id } = await createClient({ url: s.url }).enqueue('q', {});
  // A claimed job's handler starts at once (a free slot).
  await until('the job runs', () => worker.stats.claimed === 1);
  // Through the server (its clock is the database's, as the worker's claims are).
  const requeued = await fetch(`${s.url}/api/v1/jobs/${id}/requeue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ force: true, reason: 'moving it' }) });
  expect(requeued.status).toBe(200);
  await until('both attempts ended', () => tracing!.named('process q').length === 2);

  const [send] = tracing!.named('send q');
  const [first, second] = tracing!.named('process q');
  expect(first!.attributes).toMatchObject({ 'leasehold.job.attempt': 1, 'leasehold.job.outcome': 'abandoned' });
  expect(first!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'lease lost while running: result not sent' });
  expect(first!.events.map((e) => [e.name, e.attributes?.['leasehold.abort.reason']])).toEqual([['lease_lost', 'lease_lost']]);
  expect(second!.attributes).toMatchObject({ 'leasehold.job.attempt': 2, 'leasehold.job.outcome': 'completed' });
  for (const attempt of [first!, second!]) expect(parentOf(attempt)).toBe(send!.spanContext().spanId);
});

test('enqueueMany: one producer span for the call, its context on every job; a job without a trace context gets a root span', async () => {
  const t = await bed();
  const s = await server(t);
  const client = createClient({ url: s.url });
  const jobs = await client.enqueueMany('batch', [{ payload: 1 }, { payload: 2 }]);
  const [send] = tracing!.named('send batch');
  expect(send!.attributes).toMatchObject({ 'messaging.batch.message_count': 2, 'messaging.destination.name': 'batch' });
  expect(send!.attributes['messaging.message.id']).toBeUndefined();
  for (const j of jobs) expect((await client.getJob(j.id)).traceparent).toBe(traceparentOf(send!.spanContext()));

  // A job stored without a trace context (by a server that traces nothing, or before this
  // version): its attempt is a trace of its own.
  const [plain] = await createStore(t.db).jobsInsert({ queue: 'plain', jobs: [{ payload: {} }], actor: null, now: DB_CLOCK, defaults: t.config });
  expect(plain!.job.trace_parent).toBeNull();
  const worker = createWorker({ transport: httpTransport({ url: s.url }), queue: 'plain', handleSignals: false, logger: quiet, handler: () => 'ok' });
  // Started inside a span of the application's: that span is not the job's parent.
  trace.getTracer('the application').startActiveSpan('boot', (boot) => {
    worker.start();
    boot.end();
  });
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  await until('the attempt span ended', () => tracing!.named('process plain').length === 1);
  const [process] = tracing!.named('process plain');
  expect(parentOf(process!)).toBeUndefined();
  expect(process!.links).toEqual([]);
  expect(process!.spanContext().traceId).not.toBe(tracing!.named('boot')[0]!.spanContext().traceId);
});

test('the API: a traceparent and tracestate are stored and claimed with the job; malformed ones are refused naming the field, and nothing is stored', async () => {
  const t = await bed();
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const tracestate = 'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7';
  const job = await t.enqueue('q', { payload: {}, traceparent, tracestate });
  expect(job.traceparent).toBe(traceparent);
  const [claimed] = await t.claim('q', 'w1');
  expect(claimed).toMatchObject({ id: job.id, traceparent, tracestate });

  const refused = async (body: Record<string, unknown>, field: string) => {
    const res = await t.post('/api/v1/queues/bad/jobs', body);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(res.json.error.field).toBe(field);
    return res.json.error.message as string;
  };
  expect(await refused({ payload: {}, traceparent: 'not a traceparent'.padEnd(55, '.') }, 'traceparent')).toContain('W3C traceparent');
  await refused({ payload: {}, traceparent: 'short' }, 'traceparent');
  await refused({ payload: {}, traceparent: traceparent.toUpperCase() }, 'traceparent');
  await refused({ payload: {}, traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }, 'traceparent');
  await refused({ payload: {}, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01' }, 'traceparent');
  await refused({ payload: {}, traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, 'traceparent');
  await refused({ payload: {}, traceparent: `${traceparent}-extra` }, 'traceparent');
  await refused({ payload: {}, traceparent: 42 }, 'traceparent');
  expect(await refused({ payload: {}, tracestate }, 'tracestate')).toContain('needs a traceparent');
  await refused({ payload: {}, traceparent, tracestate: 'no-equals-sign' }, 'tracestate');
  await refused({ payload: {}, traceparent, tracestate: 'Upper=1' }, 'tracestate');
  await refused({ payload: {}, traceparent, tracestate: 'a=1,a=2' }, 'tracestate');
  await refused({ payload: {}, traceparent, tracestate: Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',') }, 'tracestate');
  await refused({ payload: {}, traceparent, tracestate: `k=${'v'.repeat(600)}` }, 'tracestate');
  await refused({ jobs: [{ payload: 1, traceparent }, { payload: 2, traceparent: 'x' }] }, 'jobs[1].traceparent');
  expect((await t.client.execute("SELECT count(*) AS n FROM jobs WHERE queue_name = 'bad'")).rows[0]!.n).toBe(0);
});

test('the server: a SERVER span per request continuing the caller\'s traceparent header; a job sent without a trace context takes the request\'s', async () => {
  const t = await bed();
  const caller = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  // No header: the request's span starts a trace, and the job joins it.
  const job = await t.enqueue('q', { payload: {} });
  const [first] = tracing!.spans().filter((x) => x.kind === SpanKind.SERVER);
  expect(parentOf(first!)).toBeUndefined();
  expect(job.traceparent).toBe(traceparentOf(first!.spanContext()));
  const res = await t.post('/api/v1/queues/q/jobs', { payload: {} }, { traceparent: traceparentOf(caller) });
  expect(res.status).toBe(201);
  const [served] = tracing!.spans().filter((x) => x.kind === SpanKind.SERVER && x.spanContext().traceId === caller.traceId);
  expect(served!.name).toBe('POST /api/v1/queues/:queue/jobs');
  expect(parentOf(served!)).toBe(caller.spanId);
  // The request's span is the job's parent: its attempts join the caller's trace.
  expect(res.json.job.traceparent).toBe(traceparentOf(served!.spanContext()));
  // A body's own traceparent wins over the request's.
  const own = '00-11111111111111111111111111111111-2222222222222222-01';
  expect((await t.post('/api/v1/queues/q/jobs', { payload: {}, traceparent: own }, { traceparent: traceparentOf(caller) })).json.job.traceparent).toBe(own);

  // A malformed header starts a new trace (W3C), it refuses nothing.
  const odd = await t.get('/api/v1/jobs/999', { traceparent: 'garbage' });
  expect(odd.status).toBe(404);
  const [notFound] = tracing!.spans().filter((x) => x.attributes['url.path'] === '/api/v1/jobs/999');
  expect(parentOf(notFound!)).toBeUndefined();
  expect(notFound!.attributes).toMatchObject({ 'http.route': '/api/v1/jobs/:id', 'http.response.status_code': 404 });
  expect(notFound!.status.code).toBe(SpanStatusCode.UNSET);
  // No route: the span keeps the method as its name.
  await t.get('/nowhere');
  const [nowhere] = tracing!.spans().filter((x) => x.attributes['url.path'] === '/nowhere');
  expect(nowhere!.name).toBe('GET');
  expect(nowhere!.attributes['http.route']).toBeUndefined();
});

test('with no tracer provider registered: nothing is recorded, jobs carry no trace context, the worker runs as before', async () => {
  await tracing!.disable();
  tracing = undefined;
  const t = await bed();
  const s = await server(t);
  const client = createClient({ url: s.url });
  const { id } = await client.enqueue('q', { n: 1 });
  expect((await client.getJob(id)).traceparent).toBeNull();
  let active: unknown = 'unset';
  const worker = createWorker({
    transport: httpTransport({ url: s.url }),
    queue: 'q',
    handleSignals: false,
    logger: quiet,
    handler() {
      active = trace.getActiveSpan();
      return 'ok';
    },
  }).start();
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  await until('the job completed', async () => (await client.getJob(id)).status === 'completed');
  expect(active).toBeUndefined();
  // The API alone (no SDK) has no propagator: a traceparent header changes nothing.
  expect(propagation.fields()).toEqual([]);
});
